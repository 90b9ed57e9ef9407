"""Exact top-k of counts summed over shards, reduced in hash ranges sized by memory.

Each shard task writes its ``(token, count)`` pairs to one file, ``from-<shard>.parquet``, sorted
by the token's stable hash (:func:`write_counts`), in row groups whose footer statistics give
their hash range. Once every shard has written, the partitions are as many as it takes for one
partition's rows to fit in half of ``memory_mb`` (counted from the footers); one task per
partition reads, from every file, only the row groups that overlap its hash range, sums its
tokens and returns its own top ``k`` and the sums of a few ``wanted`` tokens (:func:`top_counts`).
A token lives in one partition, so the global top ``k`` is among the partitions' top ``k``.

Files are one per shard and partitions follow the data, so the files and the reads grow with
the shards, not with shards times partitions; no process holds more than one partition's tokens.

Ties rank by token (code point order, which is UTF-8 byte order), as ``sorted`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.hashing import stable_hash
from corpus_platform.base.shards import HASH_FILE_OPTIONS, write_parquet
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.kernels.dedup.params import partitions_for

COUNT_SCHEMA = pa.schema([("key", pa.string()), ("count", pa.int64()), ("hash", pa.int64())])
COUNT_ROW_BYTES = 64  # a token, its count and hash in Arrow, and the group-by's share
ROW_GROUP = 16_384  # rows per row group: a partition skips the groups outside its range
HASH_SPAN = 1 << 63  # hashes are the stable hash's top 63 bits, non-negative int64


def write_counts(counts: Mapping[str, int], folder: Path, source: int) -> None:
    """Write one shard's counts to ``folder/from-<source>.parquet``, sorted by token hash."""
    table = pa.table(
        {"key": pa.array(list(counts), pa.string()), "count": pa.array(list(counts.values()))}
    )
    write_count_table(table, folder, source)


def write_count_table(counts: pa.Table, folder: Path, source: int) -> None:
    """:func:`write_counts` of a table of distinct ``key`` and their ``count``."""
    keys = counts.column("key").to_pylist()
    hashes = np.fromiter((stable_hash(k) >> 1 for k in keys), np.int64, len(keys))
    table = pa.table(
        {
            "key": counts.column("key").cast(pa.string()),
            "count": counts.column("count").cast(pa.int64()),
            "hash": hashes,
        },
        schema=COUNT_SCHEMA,
    ).sort_by([("hash", "ascending"), ("key", "ascending")])
    path = folder / f"from-{source:05d}.parquet"
    write_parquet(table, path, **HASH_FILE_OPTIONS, row_group_size=ROW_GROUP)


def count_files(folder: Path) -> list[Path]:
    """Every shard's counts file under ``folder``, in shard order."""
    return sorted(folder.glob("from-*.parquet"))


def hash_range(part: int, partitions: int) -> tuple[int, int]:
    """The hashes ``[low, high)`` of partition ``part`` of ``partitions``."""
    return part * HASH_SPAN // partitions, (part + 1) * HASH_SPAN // partitions


def partition_rows(path: Path, low: int, high: int) -> pa.Table:
    """The rows of one counts file whose hash is in ``[low, high)``, reading only the row groups
    whose footer range overlaps it."""
    parquet = pq.ParquetFile(path)
    column = parquet.schema_arrow.get_field_index("hash")
    groups = []
    for group in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max or (stats.min < high and stats.max >= low):
            groups.append(group)
    if not groups:
        return COUNT_SCHEMA.empty_table()
    table = parquet.read_row_groups(groups)
    hashes = table.column("hash").to_numpy()
    inside = (hashes >= low) & (hashes < high) if high < HASH_SPAN else hashes >= low
    return table.filter(pa.array(inside))


def partition_top(
    part: int, folder: Path, partitions: int, k: int, wanted: tuple[str, ...]
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """One partition's ``k`` largest summed counts (ties by token) and the sums of its
    ``wanted`` tokens."""
    low, high = hash_range(part, partitions)
    tables = [partition_rows(path, low, high) for path in count_files(folder)]
    table = pa.concat_tables(tables) if tables else COUNT_SCHEMA.empty_table()
    summed = table.group_by("key", use_threads=False).aggregate([("count", "sum")])
    order = pc.sort_indices(summed, [("count_sum", "descending"), ("key", "ascending")])
    top = summed.take(order[:k])
    hit = summed.filter(pc.is_in(summed.column("key"), pa.array(wanted, pa.string())))
    return (
        list(zip(top.column("key").to_pylist(), top.column("count_sum").to_pylist(), strict=True)),
        dict(zip(hit.column("key").to_pylist(), hit.column("count_sum").to_pylist(), strict=True)),
    )


def reduce_partitions(folder: Path, memory_mb: int) -> int:
    """How many hash ranges the counts under ``folder`` are reduced in: enough for one range's
    rows to fit in half of ``memory_mb``."""
    rows = sum(pq.ParquetFile(path).metadata.num_rows for path in count_files(folder))
    return partitions_for(rows, COUNT_ROW_BYTES, memory_mb)


def top_counts(
    folder: Path,
    k: int,
    wanted: Iterable[str] = (),
    engine: Engine | None = None,
    memory_mb: int = 1024,
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """The ``k`` largest counts summed over every shard written into ``folder`` (largest first,
    ties by token), and the summed counts of the ``wanted`` tokens that occur; the ranges are
    sized by ``memory_mb`` (:func:`reduce_partitions`)."""
    partitions = reduce_partitions(folder, memory_mb)
    task = partial(
        partition_top,
        folder=folder,
        partitions=partitions,
        k=k,
        wanted=tuple(sorted(set(wanted))),
    )
    results = (engine or LocalEngine()).map_shards(task, range(partitions))
    ranked = sorted((item for top, _ in results for item in top), key=lambda t: (-t[1], t[0]))
    found: dict[str, int] = {}
    for _, counts in results:
        found.update(counts)
    return ranked[:k], found
