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
    url: str | None = None
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
            "url": self.url,
        }


@dataclass
class SampleCorpus:
    """Generated rows plus the ground truth of what was planted."""

    rows: list[SampleRow] = field(default_factory=list)

    def planted(self, kind: str) -> list[SampleRow]:
        """Rows planted as ``kind``: exact_duplicate, near_duplicate, similar, short, repetitive."""
        return [r for r in self.rows if r.planted == kind]


def _words(text: str) -> list[str]:
    return text.split()


ENGLISH = _words(
    """the of and to in is that for it as was with be by on not he this are or his from at which
but have an they you were her she there one all we their has been would more if will when
who so no them some could time these two may then do first any my now such like our over
man me even most made after also did many before must through back years where much your
way well down should because each just those people how too little state good very make
world still own see men work long get here between both life being under never day same
another know while last might us great old year off come since against go came right used
take three states himself few house use during without again place american around however
home small found thought went say part once general high upon school every does got united
left number course war until always away something fact though water less public put think
almost hand enough far took head yet government system better set told nothing night end
why called didn find going look asked later knew point next city business give group
toward young let room president side social given present several order national possible
rather second face per among form important often things looked early white case john
become large big need four within felt along children saw best church ever least power
development light thing seemed family interest want members mind country area others done
turned although open god service certain kind problem began different door thus help sense
means whole matter perhaps itself york times human law line above name example action
company hands local show whether five history gave today either act feet across taken past
quite anything seen having death experience body word half really week field car words
already themselves information tell together college shall money period held keep sure
probably free seems real behind cannot miss political air question making office brought
whose special heard major problems ago became federal moment study available known result
street economic boy position reason change south board individual job areas society west
close turn love community true court force full seem art paper river music market garden
winter summer morning evening village bridge mountain forest island ocean window letter
story teacher student doctor engineer library museum theater harbor valley meadow"""
)
GERMAN = _words(
    """der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es
an werden aus er hat dass sie nach wird bei einer um am sind noch wie einem über einen so
zum war haben nur oder aber vor zur bis mehr durch man sein wurde sei"""
)
FRENCH = _words(
    """le de un être et à il avoir ne je son que se qui ce dans en du elle au pour pas plus par
sur faire dire me on mon lui nous comme mais pouvoir avec tout aller voir en bien où sans
tu ou leur homme si deux mari moi vouloir te femme venir quand grand celui notre devoir là
jour prendre"""
)


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
        self.vocab = list(dict.fromkeys(ENGLISH))
        self.weights = [1.0 / (rank + 25) for rank in range(len(self.vocab))]
        self.identifiers = _vocabulary(self.rng, 2000)
        self.count = 0

    def words(self, n: int, vocab: list[str] | None = None) -> list[str]:
        if vocab is not None:
            return self.rng.choices(vocab, k=n)
        return self.rng.choices(self.vocab, weights=self.weights, k=n)

    def foreign(self, vocab: list[str]) -> str:
        sentences = [
            " ".join(self.words(self.rng.randint(8, 16), vocab)).capitalize() + "."
            for _ in range(12)
        ]
        return " ".join(sentences)

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
            name, arg, other = self.rng.choices(self.identifiers, k=3)
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
        sites = {
            "web": f"https://{entity}.example.org/post/{self.count}",
            "wiki": f"https://wiki.example.org/a/{self.count}",
        }
        return SampleRow(
            url=sites.get(source),
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
    _plant_filter_cases(w, corpus, entities)
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


def _plant_filter_cases(w: _Writer, corpus: SampleCorpus, entities: list[str]) -> None:
    """Rows each quality filter or PII rule must catch, marked with what was planted."""

    def plant(kind: str, text: str, count: int) -> None:
        for _ in range(count):
            filled = text.format(p=w.prose(60, 200), n=w.count, o=w.count % 250)
            corpus.rows.append(w.row("web", w.rng.choice(entities), filled, kind))

    plant("blocklist", "{p} Win big at the casino tonight.", 20)
    plant("contact_pii", "{p}\n\nWrite to reader{n}@mail.example.com or call 415-555-{n:04d}.", 30)
    plant("ip_pii", "{p} The server at 192.168.7.{o} answered every request.", 10)
    plant("credit_card", "{p} Please charge my card 4111 1111 1111 1111 for the order.", 10)
    plant("ssn", "{p} My social security number is 123-45-{n:04d} as requested.", 10)
    plant("cookie_line", "{p}\nThis website uses cookies to improve your experience.", 20)
    plant("lorem_ipsum", "Lorem ipsum dolor sit amet, consectetur adipiscing elit. {p}", 10)
    plant("curly_braces", "{p} The template value {{ name }} was never filled in.", 10)
    for kind, vocab in (("german", GERMAN), ("french", FRENCH)):
        for _ in range(25):
            corpus.rows.append(w.row("web", w.rng.choice(entities), w.foreign(vocab), kind))
    for _ in range(10):
        row = w.row("web", w.rng.choice(entities), w.prose(60, 200), "denied_domain")
        row.url = f"https://spam-farm.example.net/p/{row.id}"
        corpus.rows.append(row)


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
