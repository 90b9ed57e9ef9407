"""The group split's components computed on the engine, partitioned through disk.

This module gives the group split's :class:`~kernels.splitting.cut.ComponentPlan` with no
structure per entity in the calling process (the tests' reference,
``tests/kernels/splitting/reference_components.py``, holds every link, entity and component in
one process and must give the same plan):

1. *Edges*: every similar pair links its two entities; every duplicate-cluster member links its
   entity to a node standing for the cluster (``CLUSTER_NODE`` + cluster id, which sorts after
   every entity key, so a component is still named by its smallest entity).
2. *Components*: :func:`corpus_platform.engine.graph.connected_components` (large-star /
   small-star rounds on the workers) labels every node; the labels stay on disk, partitioned by
   the hash of the node, and each split shard task reads the labels of its own entities.
3. *Sizes*: each shard task scatters its rows per entity by the same hash; one task per
   partition joins them to the labels and scatters (component, rows, ...) by component; one
   task per component partition sums them and returns its histogram bins, its largest
   components and those above ``split.max_component_share``.
4. *Description and cut*: only the components the report names (the largest, the oversize) are
   brought into this process with their links, to count their joins by kind, pick sample doc
   ids and, under ``split.oversize: cut``, cut them (:func:`~kernels.splitting.cut.cut_oversize`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import count_rows, read_parquet, read_shard, shard_rows
from corpus_platform.config import SplitConfig
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import (
    MIN_PARTITIONS,
    connected_components,
    gathered,
    scatter,
    write_edge_arrays,
)
from corpus_platform.kernels.dedup.clusters import EDGE_ROW_BYTES
from corpus_platform.kernels.dedup.params import partitions_for
from corpus_platform.kernels.splitting.components import (
    TOP_COMPONENTS,
    ComponentReport,
    ComponentStats,
    Links,
    link_graph,
    scan_members,
)
from corpus_platform.kernels.splitting.cut import ComponentPlan, cut_oversize, oversize_message

CLUSTER_NODE = "\U0010ffff"  # the highest code point: cluster nodes sort after every entity
ROWS_SCHEMA = pa.schema([("key", pa.string()), ("rows", pa.int64())])
PER_ENTITY = pa.schema(
    [("key", pa.string()), ("rows", pa.int64()), ("linked", pa.int64()), ("with_rows", pa.int64())]
)


def cluster_edges(shard: int, clusters: Path, work: Path, partitions: int) -> int:
    """Edges from one shard of duplicate-cluster memberships: member entity -- cluster node."""
    table = read_shard(clusters, shard, ["cluster_id", "entity"])
    node = pc.binary_join_element_wise(pa.scalar(CLUSTER_NODE), table.column("cluster_id"), "")
    return write_edge_arrays(table.column("entity"), node, work, shard, partitions)


def entity_rows(shard: int, upstream: Path, folder: Path, partitions: int) -> int:
    """Scatter one input shard's rows per entity by the hash of the entity."""
    counts = pc.value_counts(read_shard(upstream, shard, ["entity"]).column("entity"))
    table = pa.table({"key": counts.field(0), "rows": counts.field(1)}, schema=ROWS_SCHEMA)
    scatter(table, "key", folder, shard, partitions)
    return len(table)


def entity_labels(labels: Path, part: int) -> pa.Table:
    """``node``, ``component`` of the entities (not cluster nodes) of one label partition."""
    table = read_shard(labels, part)
    return table.filter(pc.invert(pc.starts_with(table.column("node"), CLUSTER_NODE)))


def per_entity(part: int, rows: Path, labels: Path, out: Path, partitions: int) -> int:
    """Join one partition's entity rows to its labels (an unlinked entity is its own
    component) and scatter (component, rows, linked, with_rows) by component; return the
    linked components named in this partition (those whose name is one of its entities)."""
    summed = (
        gathered(rows, part, ROWS_SCHEMA)
        .group_by("key", use_threads=False)
        .aggregate([("rows", "sum")])
    )
    named = entity_labels(labels, part)
    joined = named.join(
        summed, "node", "key", join_type="full outer", coalesce_keys=True, use_threads=False
    )
    component = pc.coalesce(joined.column("component"), joined.column("node"))
    count = pc.coalesce(joined.column("rows_sum"), pa.scalar(0, pa.int64()))
    linked = pc.cast(pc.is_valid(joined.column("component")), pa.int64())
    with_rows = pc.cast(pc.greater(count, 0), pa.int64())
    table = pa.table([component, count, linked, with_rows], schema=PER_ENTITY)
    scatter(table, "key", out, part, partitions)
    return int(
        pc.sum(
            pc.cast(pc.equal(named.column("node"), named.column("component")), pa.int64())
        ).as_py()
        or 0
    )


def component_sizes(
    part: int, folder: Path, total: int, max_share: float, top: int
) -> tuple[dict[int, tuple[int, int]], list[ComponentStats], list[ComponentStats]]:
    """One component partition: histogram bins (bit length of rows -> components, rows), its
    ``top`` largest components and every component above ``max_share`` of ``total`` rows
    (joins by kind not yet counted)."""
    table = (
        gathered(folder, part, PER_ENTITY)
        .group_by("key", use_threads=False)
        .aggregate([("rows", "sum"), ("linked", "sum"), ("with_rows", "sum")])
    )
    table = table.filter(pc.greater(table.column("rows_sum"), 0))
    rows = table.column("rows_sum").to_pylist()
    bins: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for count in rows:
        bins[count.bit_length()][0] += 1
        bins[count.bit_length()][1] += count
    order = pc.sort_indices(table, [("rows_sum", "descending"), ("key", "ascending")])
    ranked = table.take(order)
    cap = max_share * total
    chosen = ranked.slice(0, top).to_pylist() + [
        r for r in ranked.filter(pc.greater(ranked.column("rows_sum"), cap)).to_pylist()
    ]
    stats = {
        r["key"]: ComponentStats(
            r["key"],
            r["rows_sum"],
            r["rows_sum"] / total if total else 0.0,
            r["linked_sum"] or 1,
            r["rows_sum"] - r["with_rows_sum"],
            0,
            0,
        )
        for r in chosen
    }
    largest = [stats[n] for n in ranked.column("key").slice(0, top).to_pylist()]
    over = [s for s in stats.values() if s.rows > cap]
    return {b: (n, r) for b, (n, r) in bins.items()}, largest, over


def named_members(part: int, labels: Path, names: pa.Array) -> tuple[list[str], list[str]]:
    """Engine task: the entities of one label partition in the components ``names``, and
    their components."""
    table = entity_labels(labels, part)
    table = table.filter(pc.is_in(table.column("component"), names))
    return table.column("node").to_pylist(), table.column("component").to_pylist()


def members_of(labels: Path, partitions: int, names: set[str], engine: Engine) -> dict[str, str]:
    """Entity -> component for the linked entities of the components ``names`` (a label
    partition grows with the corpus: the engine's tasks read them)."""
    wanted = pa.array(sorted(names), pa.string())
    out: dict[str, str] = {}
    task = partial(named_members, labels=labels, names=wanted)
    for nodes, components in engine.map_shards(task, range(partitions)):
        out.update(zip(nodes, components, strict=True))
    return out


def entity_counts(part: int, rows: Path, entities: pa.Array) -> tuple[list[str], list[int]]:
    """Engine task: the rows of each of ``entities`` in one partition of the split's input
    (an entity's rows may come from several shards)."""
    table = gathered(rows, part, ROWS_SCHEMA)
    table = table.filter(pc.is_in(table.column("key"), entities))
    summed = table.group_by("key", use_threads=False).aggregate([("rows", "sum")])
    return summed.column("key").to_pylist(), summed.column("rows_sum").to_pylist()


def rows_of(rows: Path, partitions: int, entities: set[str], engine: Engine) -> dict[str, int]:
    """Rows of each of ``entities`` in the split's input."""
    task = partial(entity_counts, rows=rows, entities=pa.array(sorted(entities), pa.string()))
    out: dict[str, int] = {}
    for keys, counts in engine.map_shards(task, range(partitions)):
        for key, count in zip(keys, counts, strict=True):
            out[key] = out.get(key, 0) + count
    return out


def pair_edges(_: int, pairs_file: Path, work: Path, source: int, partitions: int) -> int:
    """Engine task: the similar pairs' entity links as input file ``source`` of the graph's
    first step (the pairs grow with the corpus: the calling process never reads them)."""
    pairs = read_parquet(pairs_file, ["entity_a", "entity_b"])
    return write_edge_arrays(
        pairs.column("entity_a"), pairs.column("entity_b"), work, source, partitions
    )


def pairs_among(_: int, pairs_file: Path, entities: pa.Array) -> pa.Table:
    """Engine task: the similar pairs whose first entity is one of ``entities``."""
    pairs = read_parquet(pairs_file)
    return pairs.filter(pc.is_in(pairs.column("entity_a"), entities))


def links_among(
    pairs_file: Path, clusters: Path, num_shards: int, entities: set[str], engine: Engine
) -> Links:
    """The links whose entities are among ``entities`` (every link lies inside a component)."""
    wanted = pa.array(sorted(entities), pa.string())
    inner = engine.map_shards(partial(pairs_among, pairs_file=pairs_file, entities=wanted), [0])
    members = [
        t.filter(pc.is_in(t.column("entity"), wanted))
        for t in (read_shard(clusters, s, ["cluster_id", "entity"]) for s in range(num_shards))
    ]
    table = pa.concat_tables(members).sort_by(
        [("cluster_id", "ascending"), ("entity", "ascending")]
    )
    return Links.from_tables(inner[0], table)


def plan_components_on_engine(
    dedup: Path,
    pairs_file: Path,
    num_shards: int,
    split: SplitConfig,
    seed: int,
    scratch: Path,
    engine: Engine | None = None,
    memory_mb: int = 1024,
    clusters: Path | None = None,
) -> ComponentPlan:
    """The components of the split input ``dedup`` (its shards, ``clusters/`` and the similar
    pairs in ``pairs_file``), their report and under ``split.oversize: cut`` the cut of every
    component above ``split.max_component_share``, run on ``engine`` through ``scratch``. The
    plan's ``labels`` folder (under ``scratch``) names the linked entities' components;
    ``clusters``: the memberships that link entities (default ``dedup/clusters``);
    ``components`` holds only the pieces of cut components."""
    engine = engine or LocalEngine()
    clusters = clusters or dedup / "clusters"  # the memberships that link entities
    shards = range(num_shards)
    work, labels = scratch / "graph", scratch / "labels"
    total = count_rows(dedup, num_shards)
    edges = 2 * (shard_rows(pairs_file) + count_rows(clusters, num_shards))
    partitions = max(  # sized by the data, not by the shard count
        MIN_PARTITIONS,
        partitions_for(edges, EDGE_ROW_BYTES, memory_mb),
        partitions_for(total, EDGE_ROW_BYTES, memory_mb),
    )
    engine.map_shards(
        partial(
            pair_edges, pairs_file=pairs_file, work=work, source=num_shards, partitions=partitions
        ),
        [0],
    )
    engine.map_shards(
        partial(cluster_edges, clusters=clusters, work=work, partitions=partitions),
        shards,
    )
    connected_components(work, labels, partitions, partitions, engine)
    rows_dir, sizes_dir = scratch / "entity-rows", scratch / "component-rows"
    engine.map_shards(
        partial(entity_rows, upstream=dedup, folder=rows_dir, partitions=partitions), shards
    )
    linked = sum(
        engine.map_shards(
            partial(per_entity, rows=rows_dir, labels=labels, out=sizes_dir, partitions=partitions),
            range(partitions),
        )
    )
    parts = engine.map_shards(
        partial(
            component_sizes,
            folder=sizes_dir,
            total=total,
            max_share=split.max_component_share,
            top=TOP_COMPONENTS,
        ),
        range(partitions),
    )
    report = _report(parts, total)
    names = report.described()
    component_of = members_of(labels, partitions, names, engine)
    links = links_among(pairs_file, clusters, num_shards, set(component_of) | names, engine)
    joins = link_graph(links).joins
    report = _with_joins(report, joins)
    cutting = split.oversize == "cut" and bool(report.oversize)
    oversize = {s.name for s in report.oversize} if cutting else set()
    endpoints = {
        doc
        for p in links.pairs
        if component_of.get(p.entity_a, p.entity_a) in oversize
        for doc in (p.doc_a, p.doc_b)
    }
    samples, present = scan_members(dedup, num_shards, component_of, names, endpoints)
    report = report.with_samples(samples)
    plan = ComponentPlan({}, frozenset(), report, labels=labels, linked=linked)
    if not report.oversize:
        return plan
    if not cutting:
        return replace(plan, error=oversize_message(report, split.max_component_share))
    counts = rows_of(rows_dir, partitions, set(component_of) | oversize, engine)
    members: dict[str, dict[str, int]] = defaultdict(dict)
    for entity, count in sorted(counts.items()):
        name = component_of.get(entity, entity)
        if name in oversize:
            members[name][entity] = count
    inner = links.within(component_of, oversize)
    return cut_oversize(plan, members, inner, present, split, seed, {})


def _report(
    parts: list[tuple[dict[int, tuple[int, int]], list[ComponentStats], list[ComponentStats]]],
    total: int,
) -> ComponentReport:
    """Merge the partitions' histograms, largest and oversize components."""
    bins: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for part_bins, _, _ in parts:
        for b, (n, r) in part_bins.items():
            bins[b][0] += n
            bins[b][1] += r
    histogram = tuple((1 << (b - 1), (1 << b) - 1, n, r) for b, (n, r) in sorted(bins.items()))
    rank = lambda s: (-s.rows, s.name)  # noqa: E731
    largest = sorted((s for _, top, _ in parts for s in top), key=rank)[:TOP_COMPONENTS]
    over = sorted((s for _, _, o in parts for s in o), key=rank)
    return ComponentReport(
        total, sum(n for n, _ in bins.values()), histogram, tuple(largest), tuple(over)
    )


def _with_joins(report: ComponentReport, joins: dict[str, tuple[int, int]]) -> ComponentReport:
    def fill(stats: tuple[ComponentStats, ...]) -> tuple[ComponentStats, ...]:
        return tuple(
            replace(
                s,
                cluster_joins=joins.get(s.name, (0, 0))[0],
                pair_joins=joins.get(s.name, (0, 0))[1],
            )
            for s in stats
        )

    return replace(report, largest=fill(report.largest), oversize=fill(report.oversize))
