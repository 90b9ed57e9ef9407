"""The split's independent recall check: a seeded sample of held-out rows against every train row
by exact word 5-gram Jaccard, counted here without the platform's shingling."""

import random
import re
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.hashing import DEFAULT_NORMALIZATION
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.splitting.recall import (
    build_sample,
    shard_candidates,
    shard_recall_hits,
)

WORDS = [
    "river",
    "stone",
    "cloud",
    "maple",
    "harbor",
    "lantern",
    "violet",
    "meadow",
    "copper",
    "falcon",
]
SHARDS = 2


def text(rng: random.Random, n: int = 120) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(40)) for _ in range(n))


def jaccard(a: str, b: str) -> float:
    """Lowercase word 5-grams, punctuation as a boundary."""

    def grams(t: str) -> set:
        w = re.findall(r"\w+", t.lower())
        return {tuple(w[i : i + 5]) for i in range(len(w) - 4)}

    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y)


def write_split(root: Path, rows: dict[str, list[tuple[str, str]]]) -> None:
    for name in ("train", "validation", "test"):
        for shard in range(SHARDS):
            mine = [r for i, r in enumerate(rows.get(name, [])) if i % SHARDS == shard]
            table = pa.table(
                {"doc_id": [d for d, _ in mine], "text": [t for _, t in mine]},
                schema=pa.schema([("doc_id", pa.string()), ("text", pa.string())]),
            )
            write_parquet(table, part_path(root / name, shard))


def run(root: Path, size: int, threshold: float = 0.6) -> list[tuple[str, str, float]]:
    engine = LocalEngine()
    parts = engine.map_shards(lambda s: shard_candidates(s, root, seed=7, size=size), range(SHARDS))
    sample = build_sample(parts, size, 5, DEFAULT_NORMALIZATION)
    results = [
        shard_recall_hits(s, root, sample, 5, DEFAULT_NORMALIZATION, threshold)
        for s in range(SHARDS)
    ]
    return sorted(hit for _, found in results for hit in found)


def test_a_near_copy_across_splits_is_found_with_its_exact_jaccard(tmp_path: Path) -> None:
    rng = random.Random(1)
    train = [(f"t{i}", text(rng)) for i in range(40)]
    source = train[7][1].split()
    for i in range(3, len(source), 25):  # every 25th word changed: similar, not equal
        source[i] = "zzz"
    copy = " ".join(source)
    expected = jaccard(copy, train[7][1])
    assert 0.6 <= expected < 0.9
    held = [(f"v{i}", text(rng)) for i in range(10)] + [("v-copy", copy)]
    write_split(tmp_path, {"train": train, "validation": held, "test": [("x1", text(rng))]})

    hits = run(tmp_path, size=100)

    assert [(h, t) for h, t, _ in hits] == [("v-copy", "t7")]
    assert abs(hits[0][2] - expected) < 1e-9
    assert run(tmp_path, size=100, threshold=expected + 0.01) == []


def test_the_sample_is_seeded_and_bounded(tmp_path: Path) -> None:
    rng = random.Random(2)
    held = [(f"v{i}", text(rng)) for i in range(30)]
    write_split(tmp_path, {"train": [("t0", text(rng))], "test": held})
    parts = [shard_candidates(s, tmp_path, seed=7, size=5) for s in range(SHARDS)]
    first = build_sample(parts, 5, 5, DEFAULT_NORMALIZATION)
    again = build_sample(parts[::-1], 5, 5, DEFAULT_NORMALIZATION)
    assert len(first) == 5 and first.doc_ids == again.doc_ids
    assert set(first.doc_ids) <= {d for d, _ in held}
