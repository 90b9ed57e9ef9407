"""As-of features: aggregates of an entity's rows with a strictly earlier timestamp.

A row's feature sees only rows of the same entity whose timestamp lies in
``[t - window, t)``: never itself, never a row at the same instant, never the future. Computed
in three streaming passes, never sorting the corpus as a whole:

1. :func:`spill_by_entity`: each doc shard's (entity, timestamp, doc_id, values) go to entity
   shards (``stable_hash(entity) mod num_shards``).
2. :func:`compute_entity_shard`: one entity shard at a time is sorted by (entity, timestamp,
   doc_id) and windowed with prefix sums; results go back to doc shards.
3. :func:`asof_columns`: a doc shard reads its results, in doc_id order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import generation_of, shard_generation_files
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.shards import (
    part_path,
    read_parquet,
    read_shard,
    write_parquet,
)
from corpus_platform.config import AsofFeature
from corpus_platform.kernels.splitting.temporal import MICROS_PER_DAY

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _source_columns(features: tuple[AsofFeature, ...]) -> list[str]:
    return sorted({f.column for f in features})


def spill_by_entity(
    shard: int, upstream: Path, scratch: Path, features: tuple[AsofFeature, ...], num_shards: int
) -> int:
    """Route one doc shard's rows to entity shards; return rows routed."""
    table = read_shard(upstream, shard, history_columns(features))
    return spill_table(table, shard, scratch, num_shards)


def history_columns(features: tuple[AsofFeature, ...]) -> list[str]:
    """The columns the as-of features are computed from."""
    return ["doc_id", "entity", "timestamp", *_source_columns(features)]


def spill_table(table: pa.Table, source: int, scratch: Path, num_shards: int) -> int:
    """Route the rows of ``table`` (:func:`history_columns`) with a timestamp to entity shards,
    as spill file ``source`` of each; return rows routed."""
    table = table.filter(pc.is_valid(table.column("timestamp")))
    targets = np.array([shard_of(e, num_shards) for e in table.column("entity").to_pylist()])
    for target in np.unique(targets):
        part = table.filter(pa.array(targets == target))
        write_parquet(part, scratch / "by_entity" / f"{int(target):05d}" / f"{source:05d}.parquet")
    return len(table)


def window_aggregate(times: np.ndarray, values: np.ndarray, window: int, agg: str) -> np.ndarray:
    """Aggregate, for each row, the non-NaN values of rows with time in ``[t - window, t)``.

    ``times`` must be sorted ascending (one entity's rows). Returns NaN where no earlier row
    has a value (0 for ``count``).
    """
    present = ~np.isnan(values)
    sums = np.concatenate([[0.0], np.cumsum(np.where(present, values, 0.0))])
    counts = np.concatenate([[0], np.cumsum(present)])
    start = np.searchsorted(times, times - window, side="left")
    stop = np.searchsorted(times, times, side="left")  # strictly earlier: excludes ties
    total, n = sums[stop] - sums[start], counts[stop] - counts[start]
    if agg == "count":
        return n.astype(np.float64)
    if agg == "sum":
        return np.where(n > 0, total, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def compute_entity_shard(
    entity_shard: int, scratch: Path, features: tuple[AsofFeature, ...], num_shards: int
) -> int:
    """Compute as-of features for one entity shard; route results to doc shards."""
    folder = scratch / "by_entity" / f"{entity_shard:05d}"
    parts = [read_parquet(p) for p in sorted(folder.glob("*.parquet"))] if folder.is_dir() else []
    if not parts:
        return 0
    table = pa.concat_tables(parts).sort_by(
        [("entity", "ascending"), ("timestamp", "ascending"), ("doc_id", "ascending")]
    )
    entities = table.column("entity").to_numpy(zero_copy_only=False)
    times = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
    boundaries = np.flatnonzero(entities[1:] != entities[:-1]) + 1
    starts = np.concatenate([[0], boundaries])
    stops = np.concatenate([boundaries, [len(table)]])
    columns: dict[str, np.ndarray] = {}
    for feature in features:
        source = table.column(feature.column).to_numpy(zero_copy_only=False).astype(np.float64)
        out = np.empty(len(table), dtype=np.float64)
        window = round(feature.window_days * MICROS_PER_DAY)
        for lo, hi in zip(starts, stops, strict=True):
            out[lo:hi] = window_aggregate(times[lo:hi], source[lo:hi], window, feature.agg)
        columns[feature.name] = out
    arrays = {k: pa.array(v, from_pandas=True) for k, v in columns.items()}
    result = pa.table({"doc_id": table.column("doc_id"), **arrays})
    doc_shards = np.array([shard_of(d, num_shards) for d in result.column("doc_id").to_pylist()])
    for target in np.unique(doc_shards):
        part = result.filter(pa.array(doc_shards == target))
        write_parquet(
            part, scratch / "by_doc" / f"{int(target):05d}" / f"{entity_shard:05d}.parquet"
        )
    return len(table)


def asof_columns(
    shard: int, scratch: Path, table: pa.Table, features: tuple[AsofFeature, ...]
) -> pa.Table:
    """``table`` (one doc shard, doc_id order) with its as-of feature columns appended."""
    folder = scratch / "by_doc" / f"{shard:05d}"
    parts = [read_parquet(p) for p in sorted(folder.glob("*.parquet"))] if folder.is_dir() else []
    values: dict[str, dict[str, float]] = {f.name: {} for f in features}
    for part in parts:
        ids = part.column("doc_id").to_pylist()
        for feature in features:
            values[feature.name].update(
                zip(ids, part.column(feature.name).to_pylist(), strict=True)
            )
    ids = table.column("doc_id").to_pylist()
    for feature in features:
        column = [values[feature.name].get(d) for d in ids]
        table = table.append_column(
            pa.field(feature.name, pa.float64()), pa.array(column, pa.float64())
        )
    return table


def brute_force(
    row_time: int, history: list[tuple[int, float | None]], feature: AsofFeature
) -> float | None:
    """The as-of value of one row by a plain loop over its entity's rows (for checks)."""
    window = round(feature.window_days * MICROS_PER_DAY)
    seen = [v for t, v in history if row_time - window <= t < row_time and v is not None and v == v]
    if feature.agg == "count":
        return float(len(seen))
    if not seen:
        return None
    return float(sum(seen)) if feature.agg == "sum" else float(sum(seen) / len(seen))


def _files(root: Path, num_shards: int) -> list[tuple[int, Path]]:
    """(generation, file) of every file of every shard of a dataset folder."""
    return [
        (generation_of(f), f)
        for shard in range(num_shards)
        for f in shard_generation_files(part_path(root, shard))
    ]


def _sample_ids(
    split_roots: list[Path], num_shards: int, rank: Callable[[str], float], size: int
) -> pa.Array:
    """The doc ids of the ``size`` rows with a timestamp whose ``(rank(doc_id), doc_id)`` is
    smallest, read file by file (no more than ``size`` ids held from one file to the next)."""
    best: list[tuple[float, str]] = []
    for root in split_roots:
        for _, path in _files(root, num_shards):
            table = read_parquet(path, ["doc_id", "timestamp"])
            ids = table.column("doc_id").filter(pc.is_valid(table.column("timestamp")))
            ranked = ((rank(doc_id), doc_id) for doc_id in ids.to_pylist())
            best = heapq.nsmallest(size, chain(best, ranked))
    return pa.array([doc_id for _, doc_id in best], pa.string())


def sample_check(
    split_roots: list[Path],
    history_root: Path,
    num_shards: int,
    features: tuple[AsofFeature, ...],
    rank: Callable[[str], float],
    size: int,
    visible: Callable[[int], set[int]] | None = None,
) -> tuple[int, list[str]]:
    """Recompute the as-of features of a sample of rows by brute force and compare.

    Args:
        split_roots: Folders holding the rows with computed features (one per split).
        history_root: The dataset the features were computed from (every earlier row).
        rank: A deterministic number per doc_id (a seeded hash): the sample is the ``size``
            rows with a timestamp that rank lowest (ties by doc_id), whatever the corpus size,
            so the check holds a bounded number of rows.
        visible: For a row of split generation ``g``, the generations of ``history_root`` its
            features were computed from (an appended row sees what was published when it was,
            never a later arrival); every generation when None.

    Returns:
        (rows checked, up to ten mismatch descriptions).
    """
    columns = ["doc_id", "entity", "timestamp", *(f.name for f in features)]
    chosen = _sample_ids(split_roots, num_shards, rank, size)
    sampled: dict[str, tuple[str, int, dict[str, float | None], int]] = {}
    for root in split_roots:
        for generation, path in _files(root, num_shards):
            table = read_parquet(path, columns)
            for row in table.filter(pc.is_in(table.column("doc_id"), chosen)).to_pylist():
                values = {f.name: row[f.name] for f in features}
                at = _micros(row["timestamp"])
                sampled[row["doc_id"]] = (row["entity"], at, values, generation)
    entities = pa.array(sorted({e for e, _, _, _ in sampled.values()}), pa.string())
    history: dict[str, list[tuple[int, dict[str, float | None], int]]] = {}
    sources = _source_columns(features)
    for generation, path in _files(history_root, num_shards):
        table = read_parquet(path, ["entity", "timestamp", *sources])
        table = table.filter(
            pc.and_(
                pc.is_in(table.column("entity"), entities), pc.is_valid(table.column("timestamp"))
            )
        )
        for row in table.to_pylist():
            entry = (_micros(row["timestamp"]), row, generation)
            history.setdefault(row["entity"], []).append(entry)
    mismatches: list[str] = []
    for doc_id, (entity, at, computed, generation) in sorted(sampled.items()):
        seen = None if visible is None else visible(generation)
        rows = [(t, r) for t, r, g in history.get(entity, []) if seen is None or g in seen]
        for feature in features:
            expected = brute_force(at, [(t, r[feature.column]) for t, r in rows], feature)
            got = computed[feature.name]
            same = (expected is None and got is None) or (
                expected is not None
                and got is not None
                and math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-9)
            )
            if not same and len(mismatches) < 10:
                mismatches.append(f"{doc_id}.{feature.name}: stored {got}, brute force {expected}")
    return len(sampled), mismatches


def _micros(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (aware - EPOCH) // timedelta(microseconds=1)
