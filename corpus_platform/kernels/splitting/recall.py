"""An independent recall check of the split: a seeded sample of held-out rows against every
train row by exact word n-gram Jaccard, with no LSH band keys.

The leak checks that reuse the dedup stage's candidates see only pairs that LSH found; a pair
the bands missed would be invisible to all of them. This check looks for such pairs directly:
``split.recall_sample`` held-out rows (the ones whose seeded hash is smallest, so the sample is
a pure function of the rows, the seed and the size) are shingled once, and every train shard is
compared with the whole sample on the engine, one shard a task. A train row and a sampled row at
or above the split's similarity threshold fail the check.

Per train row the comparison is one sorted lookup: the sample's shingles sit in one sorted array
with the sample row each belongs to, so a train row's shingles find every sampled row they share
a shingle with at once, and the intersection sizes are a count per sampled row. Most train
shingles are in no sampled row: a bitmap of the sample's shingles' low bits (``2**24`` bits, about
1% set for a sample of 200 rows) turns them away with one lookup each, and only the rest are
searched (a bit set by another shingle costs a search that finds nothing, never a missed match).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import shard_generation_files
from corpus_platform.base.hashing import TextNormalization, unit_interval
from corpus_platform.base.names import HELD_OUT, TRAIN
from corpus_platform.base.shards import part_path, read_parquet
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup.minhash import ShingleSets, shingle_sets
from corpus_platform.kernels.splitting.recall_cache import file_sets

SALT = "split-recall-sample"
BATCH = 2048  # train rows shingled together
FILTER_BITS = 24  # low bits of a shingle hash the sample's bitmap is indexed by


@dataclass(frozen=True)
class RecallSample:
    """The sampled held-out rows' shingles, sorted, with the row each belongs to."""

    doc_ids: tuple[str, ...]
    sizes: np.ndarray  # distinct shingles per sampled row
    shingles: np.ndarray  # sorted uint64
    owners: np.ndarray  # sampled row of each shingle
    bitmap: np.ndarray  # a bit per value of a shingle's low FILTER_BITS bits: some shingle has it

    def __len__(self) -> int:
        return len(self.doc_ids)

    @classmethod
    def of(cls, doc_ids: tuple[str, ...], sets: ShingleSets) -> RecallSample:
        """The sample of the rows ``doc_ids`` with shingle sets ``sets``."""
        sizes = np.diff(sets.offsets).astype(np.int64)
        owners = np.repeat(np.arange(len(doc_ids), dtype=np.int64), sizes)
        order = np.argsort(sets.values, kind="stable")
        bits = np.zeros(1 << FILTER_BITS, dtype=bool)
        bits[_low_bits(sets.values)] = True
        bitmap = np.packbits(bits, bitorder="little")  # 2 MB, sent to every task
        return cls(doc_ids, sizes, sets.values[order], owners[order], bitmap)

    def may_hold(self, values: np.ndarray) -> np.ndarray:
        """False where a shingle is certainly in no sampled row (True: maybe)."""
        low = _low_bits(values)
        return (self.bitmap[low >> 3] >> (low & 7).astype(np.uint8)) & 1 == 1


def _low_bits(values: np.ndarray) -> np.ndarray:
    return (values & np.uint64((1 << FILTER_BITS) - 1)).astype(np.intp)


def _rows(folder: Path, shard: int, generation: int | None, new: bool) -> pa.Table | None:
    """(doc_id, text) of one shard's files of a generation (see :func:`shard_generation_files`);
    None when it has none."""
    files = shard_generation_files(part_path(folder, shard), generation, new)
    if not files:
        return None
    tables = [read_parquet(f, ["doc_id", "text"]) for f in files]
    return pa.concat_tables(tables)


def shard_candidates(
    shard: int,
    split_root: Path,
    seed: int,
    size: int,
    generation: int | None = None,
    new: bool = True,
) -> list[tuple[float, str, str]]:
    """The ``size`` held-out rows of one shard with the smallest seeded hash: (hash, doc_id,
    text); merged across shards they give the sample. ``generation``: only the rows of that
    generation (``new``) or of the others (``not new``)."""
    rows: list[tuple[float, str, str]] = []
    for name in HELD_OUT:
        table = _rows(split_root / name, shard, generation, new)
        if table is None:
            continue
        for doc_id, text in zip(
            table["doc_id"].to_pylist(), table["text"].to_pylist(), strict=True
        ):
            if text:
                rows.append((unit_interval(doc_id, seed, SALT), doc_id, text))
    return sorted(rows)[:size]


def shard_ranks(
    shard: int, candidates: Callable[[int], list[tuple[float, str, str]]]
) -> list[tuple[float, str]]:
    """One shard's ``candidates`` (a :func:`shard_candidates`) without their texts: (hash,
    doc_id). An engine task."""
    return [(rank, doc_id) for rank, doc_id, _ in candidates(shard)]


def shard_texts(shard: int, split_root: Path, wanted: dict[int, list[str]]) -> dict[str, str]:
    """The texts of the held-out rows ``wanted[shard]`` of one shard. An engine task."""
    ids = pa.array(wanted.get(shard, []), pa.string())
    texts: dict[str, str] = {}
    for name in HELD_OUT:
        table = _rows(split_root / name, shard, None, True)
        if table is not None and len(ids):
            found = table.filter(pc.is_in(table.column("doc_id"), ids))
            texts.update(zip(found["doc_id"].to_pylist(), found["text"].to_pylist(), strict=True))
    return texts


def draw_sample(
    split_root: Path,
    num_shards: int,
    seed: int,
    size: int,
    ngram: int,
    normalization: TextNormalization,
    engine: Engine,
    generation: int | None = None,
) -> RecallSample:
    """The sample: the ``size`` rows of lowest hash over every shard's
    :func:`shard_candidates`, shingled (``tests/kernels/splitting/test_recall.py`` holds it to
    the plain definition, every candidate's text gathered and shingled at once), drawn
    without moving any text: the shards send their ``size`` lowest (hash, doc_id), and the
    ``size`` chosen rows are shingled by tasks on the shards holding them
    (:func:`shard_sample_sets`), so what this process holds does not grow with the number of
    shards."""
    shards = range(num_shards)
    candidates = partial(
        shard_candidates, split_root=split_root, seed=seed, size=size, generation=generation
    )
    pick = partial(shard_ranks, candidates=candidates)
    ranked = engine.map_shards(pick, shards)
    chosen = sorted((r, d, s) for s, part in zip(shards, ranked, strict=True) for r, d in part)
    chosen = chosen[:size]
    wanted: dict[int, list[str]] = {}
    for _, doc_id, shard in chosen:
        wanted.setdefault(shard, []).append(doc_id)
    task = partial(
        shard_sample_sets,
        split_root=split_root,
        wanted=wanted,
        ngram=ngram,
        normalization=normalization,
    )
    rows: dict[str, np.ndarray] = {}
    for ids, sets in engine.map_shards(task, sorted(wanted)):
        rows.update((doc_id, sets.row(i)) for i, doc_id in enumerate(ids))
    ordered = [doc_id for _, doc_id, _ in chosen]
    return RecallSample.of(tuple(ordered), ShingleSets.of_rows([rows[d] for d in ordered]))


def shard_sample_sets(
    shard: int,
    split_root: Path,
    wanted: dict[int, list[str]],
    ngram: int,
    normalization: TextNormalization,
) -> tuple[list[str], ShingleSets]:
    """The shingle sets of the held-out rows ``wanted[shard]`` of one shard, in that order: the
    sample's rows are read and shingled where they lie, so the calling process holds their sets,
    never their texts, and never loads the compiled shingle kernels. An engine task."""
    texts = shard_texts(shard, split_root, wanted)
    ids = [doc_id for doc_id in wanted.get(shard, []) if doc_id in texts]
    return ids, shingle_sets([texts[d] for d in ids], ngram, normalization)


def shard_recall_hits(
    shard: int,
    split_root: Path,
    sample: RecallSample,
    ngram: int,
    normalization: TextNormalization,
    threshold: float,
    generation: int | None = None,
    new: bool = True,
    cache: Path | None = None,
    min_shingles: int = 0,
) -> tuple[int, list[tuple[str, str, float]]]:
    """Train rows of one shard compared with the whole sample: (train rows compared, every pair
    at or above ``threshold`` as (held-out doc_id, train doc_id, Jaccard)). ``generation``:
    only the train rows of that generation (``new``) or of the others (``not new``).
    ``cache``: where the train rows' shingle sets are kept per split file
    (:mod:`~corpus_platform.kernels.splitting.recall_cache`). ``min_shingles``: a pair one of
    whose texts has fewer n-grams is too short to leak (split.min_link_shingles)."""
    files = shard_generation_files(part_path(split_root / TRAIN, shard), generation, new)
    if not len(sample) or not files:
        return 0, []
    rows, hits = 0, []
    for file in files:
        ids, sets = file_sets(file, ngram, normalization, cache)
        for start in range(0, len(ids), BATCH):
            stop = min(start + BATCH, len(ids))
            low, high = sets.offsets[start], sets.offsets[stop]
            part = ShingleSets(sets.values[low:high], sets.offsets[start : stop + 1] - low)
            for row, owner, jaccard in batch_hits(part, sample, threshold, min_shingles):
                hits.append((sample.doc_ids[owner], ids[start + row], jaccard))
        rows += len(ids)
    return rows, hits


def batch_hits(
    sets: ShingleSets, sample: RecallSample, threshold: float, min_shingles: int = 0
) -> list[tuple[int, int, float]]:
    """Every (row of ``sets``, sampled row, Jaccard) at or above ``threshold`` whose two sets
    both have ``min_shingles`` n-grams, ordered by row then sampled row: each row's shingles are
    looked up in the sample's sorted shingles, the matches counted per sampled row, and the
    Jaccard computed from the counts and the set sizes, in one compiled pass over the batch
    (:mod:`.recall_kernel`)."""
    from corpus_platform.kernels.splitting import recall_kernel  # numba: on first use only

    rows, owners, jaccards = recall_kernel.batch_hits(
        np.ascontiguousarray(sets.values, dtype=np.uint64),
        np.ascontiguousarray(sets.offsets, dtype=np.int64),
        np.ascontiguousarray(sample.shingles, dtype=np.uint64),
        np.ascontiguousarray(sample.owners, dtype=np.int64),
        np.ascontiguousarray(sample.sizes, dtype=np.int64),
        np.ascontiguousarray(sample.bitmap, dtype=np.uint8),
        float(threshold),
        int(min_shingles),
    )
    return list(zip(rows.tolist(), owners.tolist(), jaccards.tolist(), strict=True))
