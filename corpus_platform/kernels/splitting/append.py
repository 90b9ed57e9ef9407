"""The split of an append: new rows placed around the published split, which never moves.

An append of ``split_documents`` takes the published files as they are and places only the rows
of the new ``deduplicated_documents`` generations, each engine task reading and writing the
append's scratch folder:

1. :func:`append_graph`: the links the new generations bring (their duplicate-cluster
   memberships and similar pairs, new with new and new with published; with
   ``split.link_dropped: false`` none made through a dropped row) between entities and cluster
   nodes, as the build from scratch links them (:mod:`kernels.splitting.component_graph`).
2. :func:`published_anchors`: per shard, the component and split of every published row whose
   entity or duplicate cluster the append links to (a row dropped for its time window counts
   with the split its component's bucket chose; a published bridge counts with none).
3. :func:`place_append`: the append's components (union-find over its own links: it holds the
   append's entities, not the corpus's). A component that reaches no published row is new: named
   by its smallest entity and bucketed as in a build from scratch. One that reaches published rows
   of one split goes there. One that reaches published rows of two or more splits would join what
   the split separated: its new rows are dropped with reason ``bridge`` and the published
   components they would have joined (``bridged_components``).
4. :func:`split_append_shard`: per shard, the new rows (with their as-of features, computed from
   every earlier row of their entity, published or new) written as the next generation of each
   split and of ``dropped/``. Time windows are the published split's cutoffs.

Published rows keep their files, splits, components and as-of values; a late row (one older than
published rows of its entity) changes none of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import (
    TextSource,
    generation_path,
    read_generations,
    side_generation_path,
    with_texts,
)
from corpus_platform.base.hashing import bucket_of
from corpus_platform.base.names import SIMILAR_PAIRS, SPLITS
from corpus_platform.base.shards import (
    iter_shards,
    part_path,
    read_parquet,
    read_shard,
    write_parquet,
)
from corpus_platform.config import AsofFeature
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup.params import DedupParams
from corpus_platform.kernels.splitting.asof import (
    asof_columns,
    compute_entity_shard,
    history_columns,
    spill_table,
)
from corpus_platform.kernels.splitting.component_graph import CLUSTER_NODE
from corpus_platform.kernels.splitting.content import (
    linking_pairs,
    representatives,
    short_link_ids,
)
from corpus_platform.kernels.splitting.split import BRIDGE, OUTSIDE_WINDOW, bucket_bounds, split_of
from corpus_platform.kernels.splitting.temporal import EMBARGO, Cutoffs, micros
from corpus_platform.kernels.splitting.unionfind import UnionFind

EDGE_SCHEMA = pa.schema([("a", pa.string()), ("b", pa.string())])
ANCHOR_SCHEMA = pa.schema(
    [("node", pa.string()), ("component", pa.string()), ("split", pa.string())]
)
PLACEMENT_SCHEMA = pa.schema(
    [
        ("entity", pa.string()),
        ("component", pa.string()),
        ("split", pa.string()),
        ("bridged_components", pa.list_(pa.string())),
    ]
)
BRIDGED = "bridged_components"  # dropped/: the published components a bridge would have joined
DROPPED = "dropped"


@dataclass(frozen=True)
class AppendSplit:
    """Everything a shard of an append needs to place its rows.

    Attributes:
        mode: ``split.mode``.
        ratios: ``split.ratios``.
        seed: The global seed.
        generations: The new ``deduplicated_documents`` generations the append places.
        generation: The split generation it writes.
        scratch: The append's scratch folder (placements, as-of features).
        cutoffs: The published split's time windows (time modes).
        asof: The as-of features to compute.
        texts: Where the new rows' texts are (``deduplicated_documents`` stores none); None:
            in the rows themselves.
    """

    mode: str
    ratios: dict[str, float]
    seed: int
    generations: tuple[int, ...]
    generation: int
    scratch: Path
    cutoffs: Cutoffs | None = None
    asof: tuple[AsofFeature, ...] = ()
    texts: TextSource | None = None

    @property
    def grouped(self) -> bool:
        """Whether rows are placed by component (the group modes)."""
        return self.mode in ("group", "time_group")


def new_rows(
    upstream: Path, shard: int, generations: tuple[int, ...], columns: list[str] | None = None
) -> pa.Table:
    """One shard's rows of the new ``deduplicated_documents`` generations."""
    return read_generations(upstream, shard, generations, columns)


def _all_memberships(upstream: Path, num_shards: int) -> pa.Table:
    """doc_id, representative, kept of every cluster membership, published or new."""
    columns = ["doc_id", "representative", "kept"]
    return pa.concat_tables([t for _, t in iter_shards(upstream / "clusters", num_shards, columns)])


def append_graph(
    _: int,
    upstream: Path,
    split: AppendSplit,
    num_shards: int,
    link_dropped: bool,
    params: DedupParams,
) -> dict[str, dict[str, int]]:
    """The append's links (see step 1) to ``graph/edges.parquet`` and its new rows' entities to
    ``graph/entities.parquet``; return the links through dropped rows and those too short to
    leak it counted (:mod:`~.links`). An engine task."""
    entities, memberships, pairs = [], [], []
    for shard in range(num_shards):
        entities.append(new_rows(upstream, shard, split.generations, ["entity"]))
        for g in split.generations:
            path = generation_path(upstream / "clusters", shard, g)
            columns = ["cluster_id", "doc_id", "entity", "representative", "kept"]
            memberships.append(read_parquet(path, columns))
    for g in split.generations:
        pairs.append(read_parquet(side_generation_path(upstream, SIMILAR_PAIRS, g)))
    members = pa.concat_tables(memberships)
    similar = pa.concat_tables(pairs, promote_options="default")
    every = _all_memberships(upstream, num_shards)
    dropped = every.filter(pc.invert(every.column("kept"))).column("doc_id")
    through = pc.or_(
        pc.is_in(similar.column("doc_a"), dropped), pc.is_in(similar.column("doc_b"), dropped)
    )
    counted = {
        "cluster_memberships": len(members) - int(pc.sum(members.column("kept")).as_py() or 0),
        "similar_pairs": int(pc.sum(pc.cast(through, pa.int64())).as_py() or 0),
    }
    stand_in = representatives(every)
    texts = upstream if split.texts is None else split.texts.folder  # what the rule measures
    short = short_link_ids(members, similar, texts, num_shards, params, LocalEngine(), stand_in)
    too_short = pc.is_in(members.column("representative"), short)
    linking = linking_pairs(similar, stand_in, short)
    shorts = {
        "min_link_shingles": params.min_shingles,
        "duplicate_clusters": len(pc.unique(members.filter(too_short).column("cluster_id"))),
        "cluster_memberships": int(pc.sum(pc.cast(too_short, pa.int64())).as_py() or 0),
        "similar_pairs": int(pc.sum(pc.cast(pc.invert(linking), pa.int64())).as_py() or 0),
    }
    members, similar = members.filter(pc.invert(too_short)), similar.filter(linking)
    through = pc.filter(through, linking)
    if not link_dropped:
        members = members.filter(members.column("kept"))
        similar = similar.filter(pc.invert(through))
    cluster_nodes = pc.binary_join_element_wise(CLUSTER_NODE, members.column("cluster_id"), "")
    edges = pa.concat_tables(
        [
            pa.table([members.column("entity"), cluster_nodes], schema=EDGE_SCHEMA),
            pa.table([similar.column("entity_a"), similar.column("entity_b")], schema=EDGE_SCHEMA),
        ]
    )
    folder = split.scratch / "graph"
    write_parquet(edges, folder / "edges.parquet")
    names = pc.unique(pa.concat_tables(entities).column("entity").combine_chunks())
    write_parquet(pa.table({"entity": names}), folder / "entities.parquet")
    return {"through_dropped": counted, "too_short": shorts}


def _touched(scratch: Path) -> pa.Array:
    edges = read_parquet(scratch / "graph" / "edges.parquet")
    entities = read_parquet(scratch / "graph" / "entities.parquet").column("entity")
    nodes = [*edges.column("a").chunks, *edges.column("b").chunks, *entities.chunks]
    return pc.unique(pa.chunked_array(nodes, pa.string()).combine_chunks())


def published_anchors(shard: int, published: Path, split: AppendSplit) -> int:
    """The component and split of one shard's published rows whose entity or cluster node the
    append touches, to ``anchors/``; return how many. An engine task."""
    touched = _touched(split.scratch)
    bounds = bucket_bounds(split.ratios)
    found = [ANCHOR_SCHEMA.empty_table()]
    for name in (*SPLITS, DROPPED):
        if not part_path(published / name, shard).exists():
            continue
        columns = ["entity", "cluster_id", "component", "bucket"]
        columns += ["reason"] if name == DROPPED else []
        table = read_shard(published / name, shard, columns)
        if name == DROPPED:  # a bridge has no split; a row out of its window has its bucket's
            table = table.filter(pc.not_equal(table.column("reason"), BRIDGE))
        clusters = pc.binary_join_element_wise(CLUSTER_NODE, table.column("cluster_id"), "")
        buckets = table.column("bucket").to_pylist()
        splits = [name] * len(table) if name != DROPPED else [split_of(b, bounds) for b in buckets]
        where = pa.array(splits, pa.string())
        for node in (table.column("entity"), clusters):
            anchors = pa.table([node, table.column("component"), where], schema=ANCHOR_SCHEMA)
            found.append(anchors.filter(pc.is_in(anchors.column("node"), touched)))
    table = pa.concat_tables(found).group_by(ANCHOR_SCHEMA.names, use_threads=False).aggregate([])
    write_parquet(table.select(ANCHOR_SCHEMA.names), part_path(split.scratch / "anchors", shard))
    return len(table)


def place_append(_: int, split: AppendSplit, num_shards: int) -> dict[str, int]:
    """Every new entity's component and split (see step 3), to ``placement.parquet``; return
    how many components are new, joined published rows, or bridge two splits. An engine task."""
    edges = read_parquet(split.scratch / "graph" / "edges.parquet")
    entities = read_parquet(split.scratch / "graph" / "entities.parquet").column("entity")
    anchored: dict[str, set[tuple[str, str]]] = {}
    for _, table in iter_shards(split.scratch / "anchors", num_shards):
        for row in table.to_pylist():
            anchored.setdefault(row["node"], set()).add((row["component"], row["split"]))
    found = UnionFind()
    found.union_all(zip(edges.column("a").to_pylist(), edges.column("b").to_pylist(), strict=True))
    groups = found.groups()
    grouped = {m for members in groups.values() for m in members}
    for entity in entities.to_pylist():
        if entity not in grouped:
            groups[entity] = [entity]
    bounds, rows, counts = bucket_bounds(split.ratios), [], Counter()
    for members in groups.values():
        names = [m for m in members if not m.startswith(CLUSTER_NODE)]
        touched = {a for m in members for a in anchored.get(m, ())}
        sides = {where for _, where in touched}
        if not touched:
            component = min(names) if names else None
            where, bridged, kind = None, None, "new_components"
        elif len(sides) == 1:
            component, where, bridged = min(c for c, _ in touched), sides.pop(), None
            kind = "joined_published_components"
        else:
            component, where = min(c for c, _ in touched), BRIDGE
            bridged, kind = sorted({c for c, _ in touched}), "bridging_components"
        if component is None:
            continue
        where = where or split_of(bucket_of(component, split.seed), bounds)
        counts[kind] += 1
        rows += [(n, component, where, bridged) for n in names]
    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    table = pa.table(
        [pa.array(c, f.type) for c, f in zip(columns, PLACEMENT_SCHEMA, strict=True)],
        schema=PLACEMENT_SCHEMA,
    )
    write_parquet(table.sort_by("entity"), split.scratch / "placement.parquet")
    return dict(counts)


def spill_history(
    shard: int, upstream: Path, published: Path, split: AppendSplit, num_shards: int
) -> int:
    """As-of history of one shard, routed to entity shards: the new rows, and the published rows
    (every split and ``dropped/``) of the new rows' entities. An engine task."""
    columns = history_columns(split.asof)
    entities = read_parquet(split.scratch / "graph" / "entities.parquet").column("entity")
    tables = [new_rows(upstream, shard, split.generations, columns)]
    for name in (*SPLITS, DROPPED):
        if part_path(published / name, shard).exists():
            table = read_shard(published / name, shard, columns)
            tables.append(table.filter(pc.is_in(table.column("entity"), entities)))
    asof = split.scratch / "asof"
    return spill_table(pa.concat_tables(tables).cast(tables[0].schema), shard, asof, num_shards)


def _placed(table: pa.Table, split: AppendSplit) -> tuple[list[str], list[int], list[str], list]:
    """(component, bucket, split or drop reason, bridged components) of every row."""
    ids = table.column("doc_id").to_pylist()
    bounds = bucket_bounds(split.ratios)
    if split.grouped:
        placement = read_parquet(split.scratch / "placement.parquet")
        placement = placement.filter(pc.is_in(placement.column("entity"), table.column("entity")))
        at = {r["entity"]: r for r in placement.to_pylist()}
        rows = [at[e] for e in table.column("entity").to_pylist()]
        component = [r["component"] for r in rows]
        placed, bridged = [r["split"] for r in rows], [r[BRIDGED] for r in rows]
    else:  # row and time modes: each row alone, bucketed as a build from scratch does
        component, bridged = list(ids), [None] * len(ids)
        placed = [split_of(bucket_of(d, split.seed), bounds) for d in ids]
    keys = table.column("entity").to_pylist() if split.mode == "time" else component
    buckets = [bucket_of(k, split.seed) for k in keys]
    if split.cutoffs is not None:
        times = micros(table, "split_documents").tolist()
        windows = [split.cutoffs.window_of(t, d) for t, d in zip(times, ids, strict=True)]
        if split.mode == "time":
            placed = windows
        else:
            placed = [
                p if p == BRIDGE else w if w == EMBARGO else p if w == p else OUTSIDE_WINDOW
                for w, p in zip(windows, placed, strict=True)
            ]
    return component, buckets, placed, bridged


def split_append_shard(
    shard: int, upstream: Path, staging: Path, split: AppendSplit
) -> dict[str, int]:
    """Place one shard's new rows and write them as generation ``split.generation`` of each
    split and of ``dropped/`` (with the reason, and for a bridge the components it would have
    joined); return rows per split and per drop reason. An engine task."""
    table = with_texts(new_rows(upstream, shard, split.generations), shard, split.texts)
    if split.asof:
        table = asof_columns(shard, split.scratch / "asof", table, split.asof)
    component, buckets, placed, bridged = _placed(table, split)
    table = table.append_column("component", pa.array(component, pa.string()))
    table = table.append_column("bucket", pa.array(buckets, pa.int32()))
    column = pa.array(placed, pa.string())
    for name in SPLITS:
        part = table.filter(pc.equal(column, name))
        write_parquet(part, generation_path(staging / name, shard, split.generation))
    dropped = table.append_column("reason", column)
    bridges = pa.array(bridged, PLACEMENT_SCHEMA.field(BRIDGED).type)
    dropped = dropped.append_column(BRIDGED, bridges)
    dropped = dropped.filter(pc.invert(pc.is_in(column, pa.array(list(SPLITS)))))
    write_parquet(dropped, generation_path(staging / DROPPED, shard, split.generation))
    return dict(Counter(placed))


def asof_by_entity(entity_shard: int, split: AppendSplit, num_shards: int) -> int:
    """Compute one entity shard's as-of features (an engine task)."""
    return compute_entity_shard(entity_shard, split.scratch / "asof", split.asof, num_shards)
