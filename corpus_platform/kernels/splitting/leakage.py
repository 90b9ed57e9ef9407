"""Leakage measurements behind the blocking checks: what crosses a split boundary, and which
held-out rows have a near neighbour in train."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import list_parts
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import (
    iter_scratch,
    iter_shards,
    part_path,
    read_parquet,
    scratch_part_path,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import partition_of
from corpus_platform.kernels.dedup import DedupParams, signature_shard
from corpus_platform.kernels.splitting.content import is_leak

MAX_EXAMPLES = 10


@dataclass(frozen=True)
class CrossingReport:
    """How many keys of a kind appear in more than one split, and which."""

    kind: str
    total: int
    crossing: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True when nothing crosses."""
        return self.crossing == 0

    def describe(self) -> str:
        """A one-line verdict, e.g. ``entities in more than one split: 0 of 412``."""
        return f"{self.kind} in more than one split: {self.crossing} of {self.total}"


def crossing_pairs(split_root: Path, num_shards: int, pairs: pa.Table) -> CrossingReport:
    """Report similar pairs whose two rows (both still present) sit in different splits. The
    pairs' rows are found shard by shard, each shard looked up for the ids that live in it
    (a row stays in the logical shard of its doc id), so the work follows the rows, not rows
    times shards; then joined as Arrow columns (no Python object per row)."""
    wanted = pc.unique(pa.chunked_array([pairs["doc_a"], pairs["doc_b"]], pa.string()))
    owner = partition_of(wanted, num_shards)
    order = np.argsort(owner, kind="stable")  # one pass: the ids grouped by shard
    ends = np.cumsum(np.bincount(owner, minlength=num_shards)).tolist()
    grouped = wanted.take(pa.array(order))
    by_shard = [grouped[start:end] for start, end in zip([0, *ends], ends, strict=False)]
    parts = [pa.table({"doc_id": pa.array([], pa.string()), "split": pa.array([], pa.int8())})]
    for index, name in enumerate(SPLITS):
        for shard, table in iter_shards(split_root / name, num_shards, ["doc_id"]):
            ids = table.column("doc_id")
            found = pc.filter(ids, pc.is_in(ids, by_shard[shard]))
            parts.append(
                pa.table({"doc_id": found, "split": pa.array([index] * len(found), pa.int8())})
            )
    where = pa.concat_tables(parts)
    present = pairs.select(["doc_a", "doc_b"])
    for side in ("a", "b"):
        named = where.rename_columns([f"doc_{side}", f"split_{side}"])
        present = present.join(named, f"doc_{side}", join_type="inner", use_threads=False)
    crossing = present.filter(pc.not_equal(present["split_a"], present["split_b"]))
    crossing = crossing.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])
    examples = [
        f"{a}~{b}"
        for a, b in zip(
            *(crossing[c][:MAX_EXAMPLES].to_pylist() for c in ("doc_a", "doc_b")), strict=True
        )
    ]
    return CrossingReport("similar pairs", len(present), len(crossing), tuple(examples))


def crossing_pairs_in(
    _: int, split_root: Path, num_shards: int, pairs_file: Path
) -> CrossingReport:
    """Engine task: :func:`crossing_pairs` of the similar pairs in ``pairs_file``, read by the
    worker (the pairs grow with the corpus; the calling process holds none of them)."""
    return crossing_pairs(split_root, num_shards, read_parquet(pairs_file, ["doc_a", "doc_b"]))


@dataclass(frozen=True)
class MovesReport:
    """Rows whose split changed against the previous snapshot."""

    compared: int
    moved: int
    into_train: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True unless a held-out row moved into train."""
        return self.into_train == 0

    def describe(self) -> str:
        """A one-line verdict."""
        return (
            f"rows that changed split since the previous snapshot: {self.moved} of "
            f"{self.compared}; held-out rows moved into train: {self.into_train}"
        )


def _assignments(root: Path, shards: range | list[int]) -> dict[str, str]:
    where: dict[str, str] = {}
    for name in SPLITS:
        for shard in shards:
            path = part_path(root / name, shard)
            if path.exists():
                ids = read_parquet(path, ["doc_id"]).column(0).to_pylist()
                where.update(dict.fromkeys(ids, name))
    return where


def _moves(
    previous: Path, current: Path, num_shards: int, previous_shards: int
) -> Iterator[tuple[str, str, str | None]]:
    """``(doc_id, old split, new split or None when gone)`` for every row of ``previous``,
    shard by shard (all at once if the shard count changed)."""
    groups = (
        [[s] for s in range(num_shards)]
        if previous_shards == num_shards
        else [list(range(max(num_shards, previous_shards)))]
    )
    for shards in groups:
        before, after = _assignments(previous, shards), _assignments(current, shards)
        for doc_id, old in before.items():
            yield doc_id, old, after.get(doc_id)


def split_moves(
    previous: Path, current: Path, num_shards: int, previous_shards: int
) -> MovesReport:
    """Compare the split assignments of two snapshots: rows moved, held-out rows into train."""
    compared = moved = into_train = 0
    examples: list[str] = []
    for doc_id, old, new in _moves(previous, current, num_shards, previous_shards):
        if new is None:
            continue
        compared += 1
        if new != old:
            moved += 1
            if new == "train":
                into_train += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(f"{doc_id}: {old} -> train")
    return MovesReport(compared, moved, into_train, tuple(examples))


def moved_into_train(
    previous: Path, current: Path, num_shards: int, previous_shards: int
) -> pa.Table:
    """Every held-out row of ``previous`` that sits in train in ``current``: ``doc_id`` and
    ``from_split``, sorted by doc_id."""
    rows = sorted(
        (doc_id, old)
        for doc_id, old, new in _moves(previous, current, num_shards, previous_shards)
        if new == "train" and old != "train"
    )
    return pa.table(
        {"doc_id": [r[0] for r in rows], "from_split": [r[1] for r in rows]},
        schema=pa.schema([("doc_id", pa.string()), ("from_split", pa.string())]),
    )


@dataclass(frozen=True)
class NeighbourReport:
    """Held-out rows that have a train row at or above the split's similarity threshold."""

    queried: int
    candidates: int
    hits: int
    examples: tuple[str, ...]
    # every (held-out doc_id, its smallest train neighbour's doc_id), sorted
    pairs: tuple[tuple[str, str], ...] = ()


def _band_files(scratch: Path, group: int, shards: int) -> pa.Table:
    folder = scratch / "bands" / f"group-{group}"
    return pa.concat_tables([t for _, t in iter_shards(folder, shards)])


def group_cross_candidates(group: int, scratch: Path, shards: int, train_shards: int) -> np.ndarray:
    """The (held-out row, train row) pairs sharing a band key of one band group, each once.

    Band rows are ``shard << 32 | position``; shards below ``train_shards`` hold train rows.
    Unlike clustering, a large bucket is not reduced to a star: every held-out row of a bucket
    meets every train row of it."""
    found: list[np.ndarray] = [np.empty((0, 2), dtype=np.uint64)]
    table = _band_files(scratch, group, shards)
    band, key, row = (table.column(c).to_numpy() for c in ("band", "key", "row"))
    order = np.lexsort((row, key, band))
    band, key, row = band[order], key[order], row[order]
    start = np.ones(len(row), dtype=bool)
    start[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    bucket = np.cumsum(start) - 1
    train = (row >> np.uint64(32)) < np.uint64(train_shards)
    trains = np.bincount(bucket, weights=train, minlength=bucket[-1] + 1 if len(row) else 0)
    sizes = np.bincount(bucket) if len(row) else np.zeros(0, dtype=np.int64)
    mixed = np.flatnonzero((trains > 0) & (trains < sizes))
    bounds = np.append(np.flatnonzero(start), len(row))
    for b in mixed.tolist():
        rows, is_train = row[bounds[b] : bounds[b + 1]], train[bounds[b] : bounds[b + 1]]
        held, kept = rows[~is_train], rows[is_train]
        found.append(np.stack(np.meshgrid(held, kept, indexing="ij"), -1).reshape(-1, 2))
    return np.unique(np.concatenate(found), axis=0)


def cross_candidates(
    scratch: Path, shards: int, train_shards: int, groups: int, engine: Engine | None = None
) -> np.ndarray:
    """Every (held-out row, train row) pair that shares a band key, each once, sorted: one band
    group per engine task (:func:`group_cross_candidates`), so the calling process holds the
    candidate pairs only, never a group's band rows."""
    task = partial(
        group_cross_candidates, scratch=scratch, shards=shards, train_shards=train_shards
    )
    found = (engine or LocalEngine()).map_shards(task, range(groups))
    return np.unique(np.concatenate([np.empty((0, 2), dtype=np.uint64), *found]), axis=0)


def _sketch_rows(
    scratch: Path, shard: int, positions: np.ndarray
) -> dict[int, tuple[str, np.ndarray]]:
    """position -> (doc_id, sorted shingle hashes) of the wanted rows of one sketched shard."""
    wanted = set(positions.tolist())
    out: dict[int, tuple[str, np.ndarray]] = {}
    offset = 0
    sketches = scratch_part_path(scratch / "sketches", shard)
    for batch in iter_scratch(sketches, ["doc_id", "shingles"]):
        hit = [p - offset for p in range(offset, offset + batch.num_rows) if p in wanted]
        if hit:
            ids = batch.column("doc_id").to_pylist()
            flat, ends = list_parts(batch.column("shingles"))
            for i in hit:
                out[offset + i] = (ids[i], flat[ends[i] : ends[i + 1]])
        offset += batch.num_rows
    return out


Rows = dict[int, tuple[str, np.ndarray]]  # position -> (doc_id, sorted shingle hashes)


def held_shard_neighbours(
    held_shard: int,
    pairs: np.ndarray,
    load: Callable[[int, np.ndarray], Rows],
    threshold: float,
    min_shingles: int,
) -> dict[str, str]:
    """:func:`nearest_train_neighbours` for the candidate pairs of one held-out shard. An engine
    task."""
    shard_of_row = pairs >> np.uint64(32)
    position = (pairs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    neighbour: dict[str, str] = {}
    mine = shard_of_row[:, 0] == held_shard
    held = load(held_shard, np.unique(position[mine, 0]))
    for train_shard in np.unique(shard_of_row[mine, 1]).tolist():
        block = mine & (shard_of_row[:, 1] == train_shard)
        train = load(train_shard, np.unique(position[block, 1]))
        for a, b in position[block].tolist():
            (held_id, x), (train_id, y) = held[a], train[b]
            if is_leak(x, y, threshold, min_shingles) and train_id < neighbour.get(
                held_id, "\uffff"
            ):
                neighbour[held_id] = train_id
    return neighbour


def nearest_train_neighbours(
    pairs: np.ndarray,
    load: Callable[[int, np.ndarray], Rows],
    threshold: float,
    min_shingles: int = 0,
    engine: Engine | None = None,
) -> dict[str, str]:
    """Held-out doc_id -> its smallest train neighbour id, for the candidate pairs (held-out
    row, train row; each ``shard << 32 | position``) whose exact shingle Jaccard reaches
    ``threshold`` and whose two sets both have ``min_shingles`` (split.min_link_shingles).
    ``load(shard, positions)`` gives the shingles of those rows of a shard. One held-out shard
    an engine task (:func:`held_shard_neighbours`), which holds that shard's and one train
    shard's candidate rows at a time; a held-out row belongs to one task, so their answers
    join without conflict."""
    task = partial(
        held_shard_neighbours,
        pairs=pairs,
        load=load,
        threshold=threshold,
        min_shingles=min_shingles,
    )
    held_shards = np.unique(pairs[:, 0] >> np.uint64(32)).tolist()
    neighbour: dict[str, str] = {}
    for found in (engine or LocalEngine()).map_shards(task, held_shards):
        neighbour.update(found)
    return neighbour


def verify_cross_pairs(
    scratch: Path, pairs: np.ndarray, params: DedupParams, engine: Engine | None = None
) -> dict[str, str]:
    """:func:`nearest_train_neighbours` with the shingles kept in the sketch files."""
    load = partial(_sketch_rows, scratch)
    return nearest_train_neighbours(pairs, load, params.pair_threshold, params.min_shingles, engine)


def sketch_split_shard(
    virtual: int,
    split_root: Path,
    folders: tuple[str, ...],
    num_shards: int,
    scratch: Path,
    params: DedupParams,
) -> int:
    """Sketch shard ``virtual % num_shards`` of split ``folders[virtual // num_shards]`` as
    scratch shard ``virtual``; return the rows sketched."""
    folder = split_root / folders[virtual // num_shards]
    return signature_shard(virtual % num_shards, folder, scratch, params, as_shard=virtual)


def held_out_neighbours(
    split_root: Path,
    num_shards: int,
    params: DedupParams,
    held_out: tuple[str, ...],
    scratch: Path,
    engine: Engine | None = None,
) -> NeighbourReport:
    """Find held-out rows with a train row at or above ``params.pair_threshold``.

    The split's own rows are sketched afresh (shingles, MinHash, band keys, as dedup does), each
    split shard as its own scratch shard (train first), on ``engine``'s workers; rows of train
    and of a held-out split that share a band key are candidates, and each is confirmed by the
    exact Jaccard of its shingle sets. Everything streams by shard: a worker holds one band
    group's keys, this process two shards' candidate sketches, never the train split.
    """
    folders = ("train", *held_out)
    sketch = partial(
        sketch_split_shard,
        split_root=split_root,
        folders=folders,
        num_shards=num_shards,
        scratch=scratch,
        params=params,
    )
    signed = (engine or LocalEngine()).map_shards(sketch, range(len(folders) * num_shards))
    pairs = cross_candidates(
        scratch, len(folders) * num_shards, num_shards, len(params.band_groups()), engine
    )
    neighbour = verify_cross_pairs(scratch, pairs, params, engine)
    examples = tuple(f"{held}~{neighbour[held]}" for held in sorted(neighbour)[:MAX_EXAMPLES])
    found = tuple(sorted(neighbour.items()))
    return NeighbourReport(sum(signed[num_shards:]), len(pairs), len(neighbour), examples, found)
