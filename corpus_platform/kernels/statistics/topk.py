"""Exact top-k of counts summed over shards, partitioned by key hash through disk.

Each shard task scatters its ``(token, count)`` pairs into ``partitions`` folders by the stable
hash of the token (:func:`scatter_counts`); one task per partition then sums its tokens and
returns its own top ``k`` and the sums of a few ``wanted`` tokens (:func:`top_counts`). A token
lives in one partition, so the global top ``k`` is among the partitions' top ``k``: no process
holds more than one partition's vocabulary, whatever the number of shards.

Ties rank by token (code point order, which is UTF-8 byte order), as ``sorted`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import scatter

COUNT_SCHEMA = pa.schema([("key", pa.string()), ("count", pa.int64())])


def scatter_counts(counts: Mapping[str, int], folder: Path, source: int, partitions: int) -> None:
    """Write one shard's counts to ``folder/to-<p>/from-<source>.parquet`` by token hash."""
    table = pa.table(
        {"key": pa.array(list(counts), pa.string()), "count": list(counts.values())},
        schema=COUNT_SCHEMA,
    )
    scatter(table, "key", folder, source, partitions)


def partition_top(
    part: int, folder: Path, k: int, wanted: tuple[str, ...]
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """One partition's ``k`` largest summed counts (ties by token) and the sums of its
    ``wanted`` tokens."""
    files = sorted((folder / f"to-{part:05d}").glob("from-*.parquet"))
    tables = [pq.read_table(f, schema=COUNT_SCHEMA) for f in files]
    table = pa.concat_tables(tables) if tables else COUNT_SCHEMA.empty_table()
    summed = table.group_by("key", use_threads=False).aggregate([("count", "sum")])
    order = pc.sort_indices(summed, [("count_sum", "descending"), ("key", "ascending")])
    top = summed.take(order[:k])
    hit = summed.filter(pc.is_in(summed.column("key"), pa.array(wanted, pa.string())))
    return (
        list(zip(top.column("key").to_pylist(), top.column("count_sum").to_pylist(), strict=True)),
        dict(zip(hit.column("key").to_pylist(), hit.column("count_sum").to_pylist(), strict=True)),
    )


def top_counts(
    folder: Path,
    partitions: int,
    k: int,
    wanted: Iterable[str] = (),
    engine: Engine | None = None,
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """The ``k`` largest counts summed over every shard scattered into ``folder`` (largest
    first, ties by token), and the summed counts of the ``wanted`` tokens that occur."""
    results = (engine or LocalEngine()).map_shards(
        partial(partition_top, folder=folder, k=k, wanted=tuple(sorted(set(wanted)))),
        range(partitions),
    )
    ranked = sorted((item for top, _ in results for item in top), key=lambda t: (-t[1], t[0]))
    found: dict[str, int] = {}
    for _, counts in results:
        found.update(counts)
    return ranked[:k], found
