"""The bundled sample corpus, generated deterministically (nothing is downloaded).

Three sources (web, wiki, code) in all four input formats, entities with many rows, timestamps,
two numeric features and a label, and planted cases every stage must handle: exact duplicates
(also differing only in case and spacing), near-duplicates at known edit distances (some across
entities), moderately similar rows that the split must keep together, and rows the filters must
drop (too short, repetitive). The same seed always writes the same bytes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SOURCES = {"web": 150, "wiki": 90, "code": 60}  # source -> number of entities
START = datetime(2023, 1, 1, tzinfo=UTC)


@dataclass
class SampleRow:
    """One raw row, in the sample's input column names."""

    id: str
    body: str
    src: str
    author: str
    created_at: str
    clicks: int
    dwell_seconds: float
    label: int
    planted: str = "original"

    def record(self) -> dict[str, object]:
        """The row as written to the raw files."""
        return {
            "id": self.id,
            "body": self.body,
            "src": self.src,
            "author": self.author,
            "created_at": self.created_at,
            "clicks": self.clicks,
            "dwell_seconds": self.dwell_seconds,
            "label": self.label,
        }


@dataclass
class SampleCorpus:
    """Generated rows plus the ground truth of what was planted."""

    rows: list[SampleRow] = field(default_factory=list)

    def planted(self, kind: str) -> list[SampleRow]:
        """Rows planted as ``kind``: exact_duplicate, near_duplicate, similar, short, repetitive."""
        return [r for r in self.rows if r.planted == kind]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ren",
        "sta",
        "por",
        "vel",
        "dun",
        "qui",
        "tes",
        "bra",
        "nor",
        "ix",
        "ul",
        "fen",
        "ga",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words)


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocab = _vocabulary(self.rng, 4000)
        self.weights = [1.0 / (rank + 10) for rank in range(len(self.vocab))]
        self.count = 0

    def words(self, n: int) -> list[str]:
        return self.rng.choices(self.vocab, weights=self.weights, k=n)

    def prose(self, low: int, high: int) -> str:
        paragraphs = []
        for _ in range(self.rng.randint(2, 4)):
            sentences = []
            for _ in range(self.rng.randint(2, 5)):
                words = self.words(self.rng.randint(8, 20))
                sentences.append(" ".join(words).capitalize() + ".")
            paragraphs.append(" ".join(sentences))
        text = "\n\n".join(paragraphs)
        while len(text.split()) < low:
            text += " " + " ".join(self.words(10)).capitalize() + "."
        return " ".join(text.split(" ")[:high])

    def code(self) -> str:
        lines = []
        for _ in range(self.rng.randint(6, 12)):
            name, arg, other = self.words(3)
            lines.append(f"def {name}_{self.count}_{len(lines)}({arg}):")
            lines.append(
                f"    return {other}({arg}) + {self.rng.randint(0, 999)}"
                f"  # {' '.join(self.words(4))}"
            )
        return "\n".join(lines)

    def row(self, source: str, entity: str, text: str, planted: str = "original") -> SampleRow:
        self.count += 1
        clicks = int(self.rng.expovariate(1 / 20))
        dwell = round(self.rng.lognormvariate(3.0, 0.8), 3)
        score = 0.04 * clicks + 0.01 * dwell + self.rng.gauss(0, 0.5)
        moment = START + timedelta(seconds=self.rng.randint(0, 730 * 86400))
        return SampleRow(
            id=f"{source}-{self.count:05d}",
            body=text,
            src=source,
            author=entity,
            created_at=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            clicks=clicks,
            dwell_seconds=dwell,
            label=int(score > 1.2),
            planted=planted,
        )

    def edit(self, text: str, changes: int) -> str:
        """Replace ``changes`` words at positions at least 6 apart (known shingle damage)."""
        words = text.split(" ")
        slots = list(range(3, len(words) - 3, 6))
        for position in sorted(self.rng.sample(slots, min(changes, len(slots)))):
            words[position] = "zz" + self.words(1)[0]
        return " ".join(words)


def generate(seed: int = 7, rows_per_entity: tuple[int, int] = (6, 14)) -> SampleCorpus:
    """Generate the sample corpus (about 3,000 rows and 300 entities with the defaults)."""
    w = _Writer(seed)
    corpus = SampleCorpus()
    for source, entities in SOURCES.items():
        for e in range(entities):
            entity = f"{source}-author-{e:03d}"
            for _ in range(w.rng.randint(*rows_per_entity)):
                text = w.code() if source == "code" else w.prose(60, 260)
                corpus.rows.append(w.row(source, entity, text))
    originals = [r for r in corpus.rows if r.src != "code"]
    entities = sorted({r.author for r in corpus.rows})
    # Most copies stay with their entity; a few cross entities, as reposts do. Too many
    # cross-entity links would merge most entities into one component and skew the split.
    for base in w.rng.sample(originals, 60):
        text = base.body if w.rng.random() < 0.5 else "  " + base.body.upper().replace(" ", "   ")
        other = base.author if w.rng.random() < 0.8 else w.rng.choice(entities)
        corpus.rows.append(w.row(base.src, other, text, "exact_duplicate"))
    for base in w.rng.sample(originals, 80):
        other = base.author if w.rng.random() < 0.8 else w.rng.choice(entities)
        corpus.rows.append(w.row(base.src, other, w.edit(base.body, 1), "near_duplicate"))
    for base in w.rng.sample(originals, 40):
        other = base.author if w.rng.random() < 0.5 else w.rng.choice(entities)
        corpus.rows.append(w.row(base.src, other, w.edit(base.body, 5), "similar"))
    for _ in range(40):
        corpus.rows.append(
            w.row("web", w.rng.choice(entities), " ".join(w.words(6)) + ".", "short")
        )
    for _ in range(40):
        line = " ".join(w.words(9)).capitalize() + "."
        corpus.rows.append(
            w.row("web", w.rng.choice(entities), "\n".join([line] * 12), "repetitive")
        )
    return corpus


def _jsonl(rows: list[SampleRow]) -> bytes:
    return "".join(json.dumps(r.record(), sort_keys=True) + "\n" for r in rows).encode("utf-8")


def write_sample(
    out: Path, seed: int = 7, rows_per_entity: tuple[int, int] = (6, 14)
) -> dict[str, int]:
    """Write the sample corpus under ``out`` in jsonl, jsonl.gz, parquet and csv.

    Returns:
        Rows written per file (relative path).
    """
    corpus = generate(seed, rows_per_entity)
    by_source: dict[str, list[SampleRow]] = {}
    for row in corpus.rows:
        by_source.setdefault(row.src, []).append(row)
    web = by_source["web"]
    half = len(web) // 2
    files: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)

    (out / "web").mkdir(exist_ok=True)
    (out / "web" / "crawl-0.jsonl").write_bytes(_jsonl(web[:half]))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        handle.write(_jsonl(web[half:]))
    (out / "web" / "crawl-1.jsonl.gz").write_bytes(buffer.getvalue())
    files["web/crawl-0.jsonl"], files["web/crawl-1.jsonl.gz"] = half, len(web) - half

    (out / "wiki").mkdir(exist_ok=True)
    wiki = by_source["wiki"]
    pq.write_table(
        pa.Table.from_pylist([r.record() for r in wiki]), out / "wiki" / "articles.parquet"
    )
    files["wiki/articles.parquet"] = len(wiki)

    (out / "code").mkdir(exist_ok=True)
    code = by_source["code"]
    with (out / "code" / "snippets.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(code[0].record()))
        writer.writeheader()
        writer.writerows(r.record() for r in code)
    files["code/snippets.csv"] = len(code)
    return files


def write_eval_set(out: Path, seed: int = 7) -> int:
    """A small benchmark file: passages copied from sample documents (contamination to catch)
    and fresh passages. Returns the number of passages."""
    corpus = generate(seed)
    rng = random.Random(seed + 1)
    writer = _Writer(seed + 2)
    passages = []
    for row in rng.sample(
        [r for r in corpus.rows if r.planted == "original" and r.src != "code"], 12
    ):
        words = row.body.split()
        start = rng.randrange(0, max(1, len(words) - 20))
        passages.append(" ".join(words[start : start + 20]))
    passages += [writer.prose(20, 40) for _ in range(24)]
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"bench-{i:03d}", "text": p}) for i, p in enumerate(passages)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(passages)


def write_recsys_sample(out: Path, seed: int = 11, users: int = 300) -> int:
    """A recommendation-style interaction table (no text) as ``interactions.csv``.

    Columns: event_id, user_id, item_id, ts (epoch seconds), price, watch_time, clicked. Users are
    active over overlapping periods of a year, so a per-row split puts most users on both sides.
    """
    rng = random.Random(seed)
    rows = []
    for u in range(users):
        start = rng.randint(0, 300 * 86400)
        taste = rng.random()
        for _ in range(rng.randint(5, 40)):
            ts = int(START.timestamp()) + start + rng.randint(0, 60 * 86400)
            price = round(rng.lognormvariate(2.5, 0.6), 2)
            watch = round(rng.expovariate(1 / (30 + 60 * taste)), 1)
            clicked = int(rng.random() < 0.2 + 0.5 * taste - 0.01 * price / 10)
            rows.append(
                (
                    f"ev-{len(rows):06d}",
                    f"user-{u:04d}",
                    f"item-{rng.randint(0, 499):03d}",
                    ts,
                    price,
                    watch,
                    clicked,
                )
            )
    out.mkdir(parents=True, exist_ok=True)
    with (out / "interactions.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["event_id", "user_id", "item_id", "ts", "price", "watch_time", "clicked"])
        writer.writerows(rows)
    return len(rows)
