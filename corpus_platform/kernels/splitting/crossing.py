"""Keys in more than one split (entities, duplicate clusters), counted partition by partition.

Every shard of every split scatters its distinct keys, tagged with the split, into partitions by
the stable hash of the key (:func:`corpus_platform.engine.graph.scatter`); one engine task per
partition groups its keys and counts those found in two splits. A key lives in one partition, so
the partitions' counts add up to the whole's and their smallest examples hold the whole's. The
partitions are as many as it takes for one of them to fit in half of ``memory_mb``
(:func:`~corpus_platform.kernels.dedup.params.partitions_for`): no process, the Dagster one
least of all, holds every key of a growing corpus.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import count_rows, read_shard
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import gathered, partition_of, scatter_to
from corpus_platform.kernels.dedup.params import partitions_for
from corpus_platform.kernels.splitting.leakage import MAX_EXAMPLES, CrossingReport

KEY_SCHEMA = pa.schema([("key", pa.string()), ("split", pa.int8())])
KEY_ROW_BYTES = 160  # a key, its split and its share of the group-by's hash table
DEFAULT_MEMORY_MB = 1024  # engine.memory_mb's default


def scatter_split_keys(
    task: int, split_root: Path, num_shards: int, column: str, folder: Path, partitions: int
) -> None:
    """Engine task ``split * num_shards + shard``: that shard's distinct keys of ``column``,
    tagged with the split's index, written to their partitions under ``folder``."""
    index, shard = divmod(task, num_shards)
    values = read_shard(split_root / SPLITS[index], shard, [column]).column(column)
    keys = pc.unique(values.cast(pa.string()))
    table = pa.table({"key": keys, "split": pa.array(np.full(len(keys), index, np.int8))})
    owner = np.zeros(len(keys), np.int64) if partitions == 1 else partition_of(keys, partitions)
    scatter_to(table, owner, folder, task, partitions)


def partition_crossing(
    part: int, folder: Path, exempt: pa.Array | None
) -> tuple[int, int, list[str]]:
    """Engine task: one partition's distinct keys (but the ``exempt``), those in more than one
    split, and the smallest of them."""
    keys = gathered(folder, part, KEY_SCHEMA)
    seen = keys.group_by("key", use_threads=False).aggregate([("split", "count_distinct")])
    if exempt is not None:
        seen = seen.filter(pc.invert(pc.is_in(seen.column("key"), exempt)))
    crossing = seen.filter(pc.greater(seen.column("split_count_distinct"), 1)).column("key")
    examples = pc.take(crossing, pc.sort_indices(crossing)[:MAX_EXAMPLES]).to_pylist()
    return len(seen), len(crossing), examples


def crossing_keys(
    split_root: Path,
    num_shards: int,
    column: str,
    kind: str,
    exempt: pa.Array | None = None,
    engine: Engine | None = None,
    work: Path | None = None,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> CrossingReport:
    """Report keys of ``column`` found in more than one split, but for those ``exempt``
    (duplicate clusters too short to leak), partitioned through ``work`` (a temporary folder
    when None) on ``engine`` (in this process when None)."""
    engine = engine or LocalEngine(1)
    rows = sum(count_rows(split_root / name, num_shards) for name in SPLITS)
    partitions = partitions_for(rows, KEY_ROW_BYTES, memory_mb)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        folder = Path(scratch)
        scatter = partial(
            scatter_split_keys,
            split_root=split_root,
            num_shards=num_shards,
            column=column,
            folder=folder,
            partitions=partitions,
        )
        engine.map_shards(scatter, range(len(SPLITS) * num_shards))
        parts = engine.map_shards(
            partial(partition_crossing, folder=folder, exempt=exempt), range(partitions)
        )
    examples = sorted(e for _, _, found in parts for e in found)[:MAX_EXAMPLES]
    return CrossingReport(kind, sum(p[0] for p in parts), sum(p[1] for p in parts), tuple(examples))
