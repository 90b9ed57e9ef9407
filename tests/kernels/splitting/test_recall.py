"""The split's independent recall check: a seeded sample of held-out rows against every train row
by exact word 5-gram Jaccard, counted here without the platform's shingling."""

import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup.minhash import ShingleSets, shingle_sets
from corpus_platform.kernels.splitting.recall import (
    RecallSample,
    batch_hits,
    draw_sample,
    shard_candidates,
    shard_recall_hits,
)
from corpus_platform.kernels.splitting.recall_cache import file_sets, prune

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


def build_sample(
    candidates: list[list[tuple[float, str, str]]],
    size: int,
    ngram: int,
    normalization: TextNormalization,
) -> RecallSample:
    """The sample by its definition: the ``size`` smallest hashes over every shard's
    candidates, their texts shingled together (``draw_sample`` must give the same)."""
    chosen = sorted(row for part in candidates for row in part)[:size]
    sets = shingle_sets([text for _, _, text in chosen], ngram, normalization)
    return RecallSample.of(tuple(doc_id for _, doc_id, _ in chosen), sets)


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
    sample = draw_sample(root, SHARDS, 7, size, 5, DEFAULT_NORMALIZATION, LocalEngine())
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
    # drawn with the texts of the chosen rows only (two workers): the same sample
    drawn = draw_sample(tmp_path, SHARDS, 7, 5, 5, DEFAULT_NORMALIZATION, LocalEngine(2))
    assert drawn.doc_ids == first.doc_ids
    for field in ("sizes", "shingles", "owners", "bitmap"):
        assert np.array_equal(getattr(drawn, field), getattr(first, field)), field
    assert set(first.doc_ids) <= {d for d, _ in held}


def test_a_batch_finds_every_pair_at_the_threshold_that_a_plain_count_finds() -> None:
    """The vectorized batch lookup against Jaccard counted pair by pair with Python sets, on
    rows edited from the sampled ones at many distances (and unrelated rows)."""
    rng = random.Random(4)
    held = [text(rng, 80) for _ in range(12)]
    train = []
    for base in held:
        words = base.split()
        for edits in (0, 2, 5, 9, 15):
            changed = list(words)
            for at in rng.sample(range(len(words)), edits):
                changed[at] = f"edit{rng.randrange(10**6)}"
            train.append(" ".join(changed))
    train += [text(rng, 80) for _ in range(20)]
    candidates = [[(float(i), f"h{i}", t) for i, t in enumerate(held)]]
    sample = build_sample(candidates, len(held), 5, DEFAULT_NORMALIZATION)
    sets = shingle_sets(train, 5, DEFAULT_NORMALIZATION)
    for threshold in (0.3, 0.6, 0.9):
        found = {(r, sample.doc_ids[o]): j for r, o, j in batch_hits(sets, sample, threshold)}
        expected = {
            (r, f"h{i}"): jaccard(t, h)
            for r, t in enumerate(train)
            for i, h in enumerate(held)
            if jaccard(t, h) >= threshold
        }
        assert found.keys() == expected.keys() and len(expected) > 0, threshold
        assert all(abs(found[k] - expected[k]) < 1e-12 for k in expected)


def test_the_shingle_cache_gives_the_computed_sets_and_drops_entries_of_gone_files(
    tmp_path: Path,
) -> None:
    rng = random.Random(6)
    rows = pa.table(
        {"doc_id": [f"t{i}" for i in range(30)], "text": [text(rng) for _ in range(30)]}
    )
    split = tmp_path / "split" / "train"
    write_parquet(rows, part_path(split, 0))
    cache = tmp_path / "cache"
    cache.mkdir()
    fresh_ids, fresh = file_sets(part_path(split, 0), 5, DEFAULT_NORMALIZATION, None)
    first_ids, first = file_sets(part_path(split, 0), 5, DEFAULT_NORMALIZATION, cache)
    (entry,) = cache.iterdir()
    again_ids, again = file_sets(part_path(split, 0), 5, DEFAULT_NORMALIZATION, cache)
    for ids, sets in ((first_ids, first), (again_ids, again)):  # computed, then read back
        assert ids == fresh_ids
        assert sets.values.tolist() == fresh.values.tolist()
        assert sets.offsets.tolist() == fresh.offsets.tolist()
    assert list(cache.iterdir()) == [entry]
    assert prune(cache, split, 1, 5, DEFAULT_NORMALIZATION) == 0  # its file is still there
    part_path(split, 0).unlink()
    write_parquet(rows.slice(1), part_path(split, 0))  # a rebuilt file: a new identity
    assert prune(cache, split, 1, 5, DEFAULT_NORMALIZATION) == 1
    assert not list(cache.iterdir())


def test_a_pair_too_short_to_leak_is_not_a_hit() -> None:
    """Identical boilerplate ("New upstream release.", one shingle) is a hit only when
    split.min_link_shingles is 0; a long identical pair is a hit either way."""
    long = " ".join(f"word{i}" for i in range(30))
    held = [(0.0, "h-short", "New upstream release."), (1.0, "h-long", long)]
    sample = build_sample([held], 2, 5, DEFAULT_NORMALIZATION)
    sets = shingle_sets(["New upstream release.", long], 5, DEFAULT_NORMALIZATION)
    hits = {m: {sample.doc_ids[o] for _, o, _ in batch_hits(sets, sample, 0.6, m)} for m in (0, 10)}
    assert hits == {0: {"h-short", "h-long"}, 10: {"h-long"}}


def numpy_batch_hits(
    sets: ShingleSets, sample: RecallSample, threshold: float, min_shingles: int = 0
) -> list[tuple[int, int, float]]:
    """``batch_hits`` as it was in numpy, before the compiled kernel: the reference."""
    sizes = np.diff(sets.offsets).astype(np.int64)
    maybe = np.flatnonzero(sample.may_hold(sets.values))
    row_of = np.searchsorted(sets.offsets, maybe, side="right") - 1  # the row of each value
    values = sets.values[maybe]
    left = np.searchsorted(sample.shingles, values, side="left")
    right = np.searchsorted(sample.shingles, values, side="right")
    found = right > left
    if not found.any():
        return []
    starts, counts = left[found], (right - left)[found]
    offsets = np.cumsum(counts) - counts
    flat = np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    owners = sample.owners[flat]
    rows = np.repeat(row_of[found], counts)
    width = np.int64(len(sample))
    keys, shared = np.unique(rows * width + owners, return_counts=True)
    row, owner = keys // width, keys % width
    union = sizes[row] + sample.sizes[owner] - shared
    jaccard = np.where(union > 0, shared / np.maximum(union, 1), 0.0)
    enough = np.minimum(sizes[row], sample.sizes[owner]) >= min_shingles
    chosen = np.flatnonzero((jaccard >= threshold) & enough)
    return [(int(row[i]), int(owner[i]), float(jaccard[i])) for i in chosen.tolist()]


def planted_sets(seed: int) -> tuple[ShingleSets, RecallSample]:
    """Random train rows and a sample with planted overlaps: shingles shared by several sampled
    rows, train rows copied from sampled rows in part, near misses (the same low bits, so the
    bitmap passes them, or the same top bits, so they fall in the same bucket), the extreme
    values, empty rows on both sides and rows with no match."""
    rng = np.random.default_rng(seed)

    def randoms(n: int) -> np.ndarray:
        return rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)

    common = np.concatenate([randoms(30), np.array([0, 2**64 - 1], dtype=np.uint64)])
    held = []
    for i in range(25):
        n = int(rng.choice([0, 1, 3, 12, 40, 150]))
        own = np.concatenate([randoms(n), rng.choice(common, int(rng.integers(0, 8)))])
        held.append(np.unique(own) if i % 7 else np.empty(0, np.uint64))
    pool = np.concatenate(held)
    train = []
    for i in range(300):
        if i % 11 == 0:
            train.append(np.empty(0, np.uint64))
            continue
        base = held[int(rng.integers(len(held)))]
        kept = base[rng.random(len(base)) < rng.choice([0.0, 0.5, 0.9, 1.0])]
        near = rng.choice(pool, min(len(pool), 5)) if i % 3 else np.empty(0, np.uint64)
        near = np.concatenate([near ^ np.uint64(1 << 40), near + np.uint64(1)])  # no equal value
        extra = randoms(int(rng.choice([0, 2, 20])))
        picked = rng.choice(common, int(rng.integers(0, 4)))
        train.append(np.unique(np.concatenate([kept, near, extra, picked])))
    ids = tuple(f"h{i}" for i in range(len(held)))
    return ShingleSets.of_rows(train), RecallSample.of(ids, ShingleSets.of_rows(held))


def test_the_compiled_batch_lookup_gives_what_numpy_gave() -> None:
    """The same (row, sampled row, Jaccard) tuples in the same order, the same floats bit for
    bit, at every threshold and minimum set size; also for a batch without rows, and for a
    sample whose rows have no shingles."""
    for seed in range(6):
        sets, sample = planted_sets(seed)
        for threshold in (0.0, 0.3, 0.5, 1.0):
            for minimum in (0, 1, 10):
                expected = numpy_batch_hits(sets, sample, threshold, minimum)
                assert batch_hits(sets, sample, threshold, minimum) == expected
        assert len(numpy_batch_hits(sets, sample, 0.0)) > len(numpy_batch_hits(sets, sample, 1.0))
        assert numpy_batch_hits(sets, sample, 1.0)  # identical copies are planted
        none = ShingleSets.of_rows([])
        assert batch_hits(none, sample, 0.0) == numpy_batch_hits(none, sample, 0.0) == []
        empty = RecallSample.of(("h0", "h1"), ShingleSets.of_rows([np.empty(0, np.uint64)] * 2))
        assert batch_hits(sets, empty, 0.0) == numpy_batch_hits(sets, empty, 0.0) == []
