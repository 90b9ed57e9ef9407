"""The group split's components in one process, in plain Python: an independent reference
implementation used as an oracle by the tests.

The stage plans its components on the engine
(:func:`corpus_platform.kernels.splitting.component_graph.plan_components_on_engine`: the
connected components partitioned through disk, no structure per entity in the calling process).
:func:`plan_components` holds every link, entity and component here instead: a union-find over
the links (:func:`entity_components`, or ``link_graph``), the rows per entity counted shard by
shard (:func:`scan_entities`) and the report computed from them (:func:`component_report`);
``test_component_graph.py`` asserts that the engine's plan equals it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Set
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import iter_shards
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.splitting.components import (
    TOP_COMPONENTS,
    ComponentGraph,
    ComponentReport,
    ComponentStats,
    Links,
    link_graph,
    scan_members,
)
from corpus_platform.kernels.splitting.cut import ComponentPlan, cut_oversize, oversize_message
from corpus_platform.kernels.splitting.unionfind import UnionFind


def entity_components(pairs: pa.Table, clusters: pa.Table | None = None) -> dict[str, str]:
    """Entity -> component name for every entity linked by a similar pair or a cluster.

    Args:
        pairs: Similar pairs with ``entity_a`` and ``entity_b``.
        clusters: Optional membership rows with ``cluster_id`` and ``entity``; all entities of
            one cluster are linked.
    """
    links = UnionFind()
    links.union_all(
        zip(pairs.column("entity_a").to_pylist(), pairs.column("entity_b").to_pylist(), strict=True)
    )
    if clusters is not None and len(clusters):
        first: dict[str, str] = {}
        cluster_ids = clusters.column("cluster_id").to_pylist()
        for cluster, entity in zip(cluster_ids, clusters.column("entity").to_pylist(), strict=True):
            links.union(first.setdefault(cluster, entity), entity)
    return {member: root for root, members in links.groups().items() for member in members}


def component_report(
    graph: ComponentGraph, entity_rows: Mapping[str, int], max_share: float, top: int
) -> ComponentReport:
    """Histogram and the ``top`` largest components (ties by name), plus every component whose
    share of rows exceeds ``max_share``. Components without rows are left out."""
    sizes: Counter[str] = Counter()
    for entity, rows in entity_rows.items():
        sizes[graph.component_of.get(entity, entity)] += rows
    total = sum(sizes.values())
    bins: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for rows in sizes.values():
        if rows:
            bins[rows.bit_length()][0] += 1
            bins[rows.bit_length()][1] += rows
    histogram = tuple((1 << (b - 1), (1 << b) - 1, n, r) for b, (n, r) in sorted(bins.items()))
    ranked = sorted((-r, c) for c, r in sizes.items() if r)
    chosen = [c for _, c in ranked[:top]]
    over = [c for r, c in ranked if -r > max_share * total]
    stats = _stats(graph, entity_rows, sizes, total, set(chosen) | set(over))
    return ComponentReport(
        total,
        sum(1 for r in sizes.values() if r),
        histogram,
        tuple(stats[c] for c in chosen),
        tuple(stats[c] for c in over),
    )


def _stats(
    graph: ComponentGraph,
    entity_rows: Mapping[str, int],
    sizes: Mapping[str, int],
    total: int,
    names: Set[str],
) -> dict[str, ComponentStats]:
    entities: Counter[str] = Counter(c for c in graph.component_of.values() if c in names)
    with_rows: Counter[str] = Counter()
    for entity, rows in entity_rows.items():
        name = graph.component_of.get(entity, entity)
        if name in names and rows:
            with_rows[name] += 1
    out = {}
    for name in sorted(names):
        clusters, pairs = graph.joins.get(name, (0, 0))
        out[name] = ComponentStats(
            name,
            sizes[name],
            sizes[name] / total if total else 0.0,
            entities[name] or 1,
            sizes[name] - with_rows[name],
            clusters,
            pairs,
        )
    return out


def scan_entities(upstream: Path, num_shards: int) -> Counter[str]:
    """Rows per entity of a stage folder, one shard at a time."""
    rows: Counter[str] = Counter()
    for _, table in iter_shards(upstream, num_shards, ["entity"]):
        counts = pc.value_counts(table.column("entity"))
        rows.update(
            dict(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist(), strict=True))
        )
    return rows


def plan_components(
    pairs: pa.Table,
    clusters: pa.Table | None,
    upstream: Path,
    num_shards: int,
    split: SplitConfig,
    seed: int,
) -> ComponentPlan:
    """Components of the split's input rows (``upstream``), their report, and under
    ``split.oversize: cut`` the cut of every component above ``split.max_component_share``."""
    links = Links.from_tables(pairs, clusters)
    graph = link_graph(links)
    entity_rows = scan_entities(upstream, num_shards)
    report = component_report(graph, entity_rows, split.max_component_share, TOP_COMPONENTS)
    cutting = split.oversize == "cut" and bool(report.oversize)
    names = {s.name for s in report.oversize} if cutting else set()
    endpoints = {
        doc
        for p in links.pairs
        if graph.component_of.get(p.entity_a, p.entity_a) in names
        for doc in (p.doc_a, p.doc_b)
    }
    samples, present = scan_members(
        upstream, num_shards, graph.component_of, report.described(), endpoints
    )
    report = report.with_samples(samples)
    linked = len(set(graph.component_of.values()))
    plan = ComponentPlan(graph.component_of, frozenset(), report, linked=linked)
    if not report.oversize:
        return plan
    if not cutting:
        return replace(plan, error=oversize_message(report, split.max_component_share))
    members: dict[str, dict[str, int]] = defaultdict(dict)
    for entity, rows in sorted(entity_rows.items()):
        name = graph.component_of.get(entity, entity)
        if name in names:
            members[name][entity] = rows
    inner = links.within(graph.component_of, names)
    return cut_oversize(plan, members, inner, present, split, seed, graph.component_of)
