"""Connected components of a large graph, partitioned through disk and run on the engine.

The large-star / small-star rounds of Kiveris et al. ("Connected Components in MapReduce and
Beyond", 2014), the algorithm text-dedup's Spark version uses: nodes are strings, edges are
partitioned by the hash of their key node into Parquet files, and each step is one group-by per
partition, run as an engine task that reads its partition's files and writes the next step's.

- *large star*: every node ``u`` links each larger neighbour to ``m(u)``, the smallest of ``u``
  and its neighbours;
- *small star*: every node ``u`` links itself and each smaller neighbour to the smallest of
  them.

Rounds repeat until neither step changes anything; the graph is then a set of stars whose
centres are the smallest members of their components. A component is named by its smallest
node (the same name :class:`~kernels.splitting.unionfind.UnionFind` gives), whatever the
number of partitions, workers or rounds. No process holds more than one partition of edges.
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.hashing import stable_hash
from corpus_platform.base.shards import HASH_FILE_OPTIONS, part_path, write_parquet
from corpus_platform.engine import Engine, LocalEngine

EDGE_SCHEMA = pa.schema([("key", pa.string()), ("other", pa.string())])
LABEL_SCHEMA = pa.schema([("node", pa.string()), ("component", pa.string())])
MIN_PARTITIONS = 4  # partitions of a graph step are sized by its edges, not by shards: at least
# this many so a few workers share a step (a step writes partitions x partitions files)
MAX_ROUNDS = 500  # the rounds are O(log^2 n); this guards against a bug, not a real graph


def partition_of(nodes: pa.Array | pa.ChunkedArray, partitions: int) -> np.ndarray:
    """The partition of each node: ``stable_hash(node) mod partitions``."""
    return np.fromiter(
        (stable_hash(n) % partitions for n in nodes.to_pylist()), np.int64, len(nodes)
    )


def scatter(table: pa.Table, column: str, folder: Path, source: int, partitions: int) -> None:
    """Write ``table``'s rows to ``folder/to-<p>/from-<source>``, p the partition of
    ``column``; every partition gets a file (maybe empty)."""
    scatter_to(table, partition_of(table.column(column), partitions), folder, source, partitions)


def scatter_to(
    table: pa.Table, owner: np.ndarray, folder: Path, source: int, partitions: int
) -> None:
    """Write row ``i`` of ``table`` to ``folder/to-<owner[i]>/from-<source>`` (rows keep their
    order); every partition gets a file (maybe empty)."""
    order = np.argsort(owner, kind="stable")
    ordered = table.take(pa.array(order))
    bounds = np.searchsorted(owner[order], np.arange(partitions + 1))
    for part in range(partitions):
        rows = ordered.slice(int(bounds[part]), int(bounds[part + 1] - bounds[part]))
        write_parquet(
            rows, folder / f"to-{part:05d}" / f"from-{source:05d}.parquet", **HASH_FILE_OPTIONS
        )


def gathered(folder: Path, part: int, schema: pa.Schema) -> pa.Table:
    """Every row :func:`scatter` wrote to partition ``part`` under ``folder``."""
    files = sorted((folder / f"to-{part:05d}").glob("from-*.parquet"))
    tables = [pq.read_table(f, schema=schema) for f in files]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _gather(folder: Path, part: int, schema: pa.Schema) -> pa.Table:
    """Every file written to partition ``part`` of a step, distinct rows."""
    table = gathered(folder, part, schema)
    names = schema.names
    return table.group_by(names, use_threads=False).aggregate([]).select(names)


def _both_ways(key: pa.Array, other: pa.Array) -> pa.Table:
    """Undirected edges as rows keyed by either end (a large-star step's input)."""
    return pa.table(
        {"key": pa.concat_arrays([key, other]), "other": pa.concat_arrays([other, key])},
        schema=EDGE_SCHEMA,
    )


def _smallest(table: pa.Table) -> tuple[pa.Table, pa.Array]:
    """Per key: its smallest and largest neighbour and its number of distinct neighbours,
    and the smallest of the key and its neighbours."""
    per_key = table.group_by("key", use_threads=False).aggregate(
        [("other", "min"), ("other", "max"), ("other", "count")]
    )
    smallest = pc.if_else(
        pc.less(per_key.column("other_min"), per_key.column("key")),
        per_key.column("other_min"),
        per_key.column("key"),
    )
    return per_key, smallest


def large_star(part: int, step: Path, following: Path, partitions: int) -> int:
    """One partition of a large-star step; return how many keys changed their links."""
    edges = _gather(step, part, EDGE_SCHEMA)
    per_key, smallest = _smallest(edges)
    lookup = pa.table({"key": per_key.column("key"), "m": smallest})
    joined = edges.join(lookup, "key", use_threads=False)
    larger = joined.filter(pc.greater(joined.column("other"), joined.column("key")))
    # Oriented for the small star: keyed by the larger end (the neighbour), the other is m.
    out = pa.table({"key": larger.column("other"), "other": larger.column("m")}, schema=EDGE_SCHEMA)
    scatter(out, "key", following, part, partitions)
    changed = pc.and_(
        pc.greater(per_key.column("other_max"), per_key.column("key")),
        pc.less(per_key.column("other_min"), per_key.column("key")),
    )
    return int(pc.sum(pc.cast(changed, pa.int64())).as_py() or 0)


def small_star(part: int, step: Path, following: Path, partitions: int) -> int:
    """One partition of a small-star step (keys hold their smaller neighbours); return how
    many keys had more than one smaller neighbour."""
    edges = _gather(step, part, EDGE_SCHEMA)
    per_key, smallest = _smallest(edges)
    lookup = pa.table({"key": per_key.column("key"), "m": smallest})
    joined = edges.join(lookup, "key", use_threads=False)
    others = joined.filter(pc.not_equal(joined.column("other"), joined.column("m")))
    ends = pa.concat_arrays(
        [others.column("other").combine_chunks(), per_key.column("key").combine_chunks()]
    )
    centres = pa.concat_arrays([others.column("m").combine_chunks(), smallest.combine_chunks()])
    scatter(_both_ways(ends, centres), "key", following, part, partitions)
    changed = pc.greater(per_key.column("other_count"), 1)
    return int(pc.sum(pc.cast(changed, pa.int64())).as_py() or 0)


def _labels(part: int, step: Path, labels: Path, partitions: int, out_shards: int) -> int:
    """Node -> component for one partition of the converged stars, scattered by the output
    shard of the node; return the nodes labelled."""
    edges = _gather(step, part, EDGE_SCHEMA)
    per_key, smallest = _smallest(edges)
    table = pa.table({"node": per_key.column("key"), "component": smallest}, schema=LABEL_SCHEMA)
    scatter(table.rename_columns(["key", "other"]), "key", labels, part, out_shards)
    return len(table)


def _write_labels(shard: int, labels: Path, out: Path) -> int:
    """One output shard of labels, sorted by node."""
    table = _gather(labels, shard, EDGE_SCHEMA).rename_columns(LABEL_SCHEMA.names)
    table = table.sort_by([("node", "ascending")])
    write_parquet(table, part_path(out, shard))
    return len(table)


def write_edge_arrays(
    first: pa.Array | pa.ChunkedArray,
    second: pa.Array | pa.ChunkedArray,
    work: Path,
    source: int,
    partitions: int,
) -> int:
    """Edges ``first[i] -- second[i]`` (self-links and nulls dropped) as input file ``source``
    of the first step; several sources may add edges to one graph. Return the edges kept."""
    table = pa.table({"a": first, "b": second})
    table = table.filter(pc.not_equal(table.column("a"), table.column("b")))  # nulls dropped too
    a, b = table.column("a").combine_chunks(), table.column("b").combine_chunks()
    scatter(
        _both_ways(a.cast(pa.string()), b.cast(pa.string())),
        "key",
        work / "step-00000",
        source,
        partitions,
    )
    return len(table)


def connected_components(
    work: Path,
    out: Path,
    partitions: int,
    out_shards: int,
    engine: Engine | None = None,
) -> int:
    """Label every node of the graph that :func:`write_edge_arrays` put under ``work`` with its
    component's smallest node: ``out/part-<shard>.parquet`` (``node``, ``component``), a node's
    shard being ``stable_hash(node) mod out_shards``, sorted by node. Return the rounds run."""
    engine = engine or LocalEngine()
    parts, step, rounds = range(partitions), 0, 0
    while True:
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
        changes = 0
        for task in (large_star, small_star):
            here, following = work / f"step-{step:05d}", work / f"step-{step + 1:05d}"
            changes += sum(
                engine.map_shards(
                    partial(task, step=here, following=following, partitions=partitions), parts
                )
            )
            shutil.rmtree(here)
            step += 1
        if not changes:
            break
    final, labels = work / f"step-{step:05d}", work / "labels"
    engine.map_shards(
        partial(_labels, step=final, labels=labels, partitions=partitions, out_shards=out_shards),
        parts,
    )
    engine.map_shards(partial(_write_labels, labels=labels, out=out), range(out_shards))
    return rounds
