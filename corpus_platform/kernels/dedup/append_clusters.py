"""Dedup of an append: the new rows' clusters, decided without moving a published row.

:func:`append_to_disk` runs every step on the engine, with nothing per row in the calling
process; steps 1 to 3 (candidates) are in :mod:`corpus_platform.kernels.dedup.append_search`:

4. :func:`published_members`: per shard, what the published membership says of every published
   row in a candidate pair: its cluster id, the cluster's kept row, whether it was listed (a
   published row in no cluster is its own cluster, named by its doc id).
5. :func:`published_sketches`: per shard, those rows and their clusters' kept rows sketched from
   their text in ``filtered_documents`` (shingles and MinHash, as a build from scratch does).
6. :func:`score_append`: every candidate pair verified by exact Jaccard (or the MinHash estimate
   with ``dedup.verify: false``); pairs at or above the split's threshold are the new similar
   pairs.
7. :func:`decide_append`: new rows linked (at or above ``dedup.threshold``, or by exact key) to
   each other and to the published clusters of published rows; a group of linked new rows that
   touches a published cluster joins it (the smallest cluster id when it touches several: two
   published clusters are never merged) and, in drop mode, is dropped, the cluster's published
   kept row staying kept; a group touching none is a new cluster whose kept row is chosen as in
   a build from scratch (``dedup.keep``) and named by its smallest doc id.
8. :func:`write_append_shard`: per shard, the new generation's rows (kept rows, or every row in
   annotate mode) with their cluster ids and the new membership rows, a published row that a new
   row joined being listed as its cluster's kept row when it was in no cluster before.

Published rows keep their files, their cluster ids and whether they were kept.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import shard_of
from corpus_platform.base.shards import (
    iter_shards,
    part_path,
    read_parquet,
    read_shard,
    scratch_part_path,
    write_parquet,
    write_scratch_batches,
)
from corpus_platform.kernels.dedup.append_search import (
    LINK_SCHEMA,
)
from corpus_platform.kernels.dedup.membership import MEMBERSHIP_SCHEMA, _kept, _similarity
from corpus_platform.kernels.dedup.params import DedupParams
from corpus_platform.kernels.dedup.signatures import SKETCH_SCHEMA, normalized_texts, sketch
from corpus_platform.kernels.dedup.verify import (
    SCORED_SCHEMA,
    estimated_jaccard,
    read_sketches,
    sorted_jaccard,
)
from corpus_platform.kernels.splitting.unionfind import UnionFind

LOOKUP_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("cluster_id", pa.string()),
        ("representative", pa.string()),
        ("listed", pa.bool_()),
    ]
)
ROW_SCHEMA = pa.schema(
    [("doc_id", pa.string()), ("entity", pa.string()), ("quality_score", pa.float64())]
)
SCORE_PARTS = 8  # scoring tasks: candidate pairs cut into this many runs


def _links(scratch: Path) -> pa.Table:
    tables = [read_parquet(p) for p in sorted((scratch / "candidates").glob("group-*.parquet"))]
    return pa.concat_tables([*tables, read_parquet(scratch / "exact-links.parquet")]).cast(
        LINK_SCHEMA
    )


def _old_ids(scratch: Path) -> pa.Array:
    links = _links(scratch)
    sides = [links.filter(links.column(f"old_{side}")).column(f"doc_{side}") for side in ("a", "b")]
    return pc.unique(pa.chunked_array([c for s in sides for c in s.chunks], pa.string()))


def _of_shard(ids: list[str], shard: int, num_shards: int) -> list[str]:
    return sorted(d for d in ids if shard_of(d, num_shards) == shard)


def published_members(shard: int, scratch: Path, clusters: Path, num_shards: int) -> int:
    """The published cluster of every published row of ``shard`` in a candidate pair or exact
    link, to ``old-members/``; return how many. An engine task."""
    wanted = pa.array(_of_shard(_old_ids(scratch).to_pylist(), shard, num_shards), pa.string())
    found = pa.table({c: pa.array([], pa.string()) for c in LOOKUP_SCHEMA.names[:3]})
    if len(wanted) and part_path(clusters, shard).exists():
        found = read_shard(clusters, shard, ["doc_id", "cluster_id", "representative"])
        found = found.filter(pc.is_in(found.column("doc_id"), wanted))
    ids, clusters, reps = (found.column(c).to_pylist() for c in found.column_names)
    listed = {d: (c, r) for d, c, r in zip(ids, clusters, reps, strict=True)}
    rows = [(d, *listed.get(d, (d, d)), d in listed) for d in wanted.to_pylist()]
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in LOOKUP_SCHEMA]
    arrays = [pa.array(c, f.type) for c, f in zip(columns, LOOKUP_SCHEMA, strict=True)]
    table = pa.table(arrays, schema=LOOKUP_SCHEMA)
    write_parquet(table, part_path(scratch / "old-members", shard))
    return len(table)


def _lookup(scratch: Path, num_shards: int) -> pa.Table:
    return pa.concat_tables([t for _, t in iter_shards(scratch / "old-members", num_shards)]).cast(
        LOOKUP_SCHEMA
    )


def published_sketches(
    shard: int, scratch: Path, upstream: Path, num_shards: int, params: DedupParams
) -> int:
    """Sketch the published rows of ``shard`` that an append compares with (candidates and the
    kept rows of their clusters) from their text, to ``old-sketches/`` and ``old-rows/``;
    return how many. An engine task."""
    lookup = _lookup(scratch, num_shards)
    ids = {*lookup.column("doc_id").to_pylist(), *lookup.column("representative").to_pylist()}
    wanted = pa.array(_of_shard(list(ids), shard, num_shards), pa.string())
    table = read_shard(upstream, shard, ["doc_id", "entity", "text", "quality_score"])
    table = table.filter(pc.is_in(table.column("doc_id"), wanted)).sort_by("doc_id")
    rows = table.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)
    write_parquet(rows, part_path(scratch / "old-rows", shard))
    table = table.filter(pc.is_valid(table.column("text")))
    sets, sigs = sketch(normalized_texts(table, params), params)  # rows with text only
    sketches = pa.table(
        {
            "doc_id": table.column("doc_id"),
            "entity": table.column("entity"),
            "signature": pa.array([s.tobytes() for s in sigs], pa.binary()),
            "shingles": pa.ListArray.from_arrays(pa.array(sets.offsets), pa.array(sets.values)),
        },
        schema=SKETCH_SCHEMA,
    )
    path = scratch_part_path(scratch / "old-sketches", shard)
    write_scratch_batches([sketches], SKETCH_SCHEMA, path)
    return len(rows)


def _sketches(scratch: Path, num_shards: int, field: str) -> dict[str, tuple[str, np.ndarray]]:
    found: dict[str, tuple[str, np.ndarray]] = {}
    for folder in ("sketches", "old-sketches"):
        for shard in range(num_shards):
            found.update(read_sketches(scratch_part_path(scratch / folder, shard), field))
    return found


def score_append(part: int, scratch: Path, num_shards: int, params: DedupParams) -> int:
    """Score run ``part`` of the distinct candidate pairs (sorted, cut into ``SCORE_PARTS``
    runs), writing those at or above the split's threshold to ``scored/``; return the pairs
    scored. An engine task."""
    folder = scratch / "candidates"
    pairs = pa.concat_tables([read_parquet(p) for p in sorted(folder.glob("group-*.parquet"))])
    pairs = pairs.group_by(["doc_a", "doc_b"], use_threads=False).aggregate([])
    pairs = pairs.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])
    bounds = np.linspace(0, len(pairs), SCORE_PARTS + 1).round().astype(int)
    pairs = pairs.slice(bounds[part], bounds[part + 1] - bounds[part])
    field = "shingles" if params.verify else "signature"
    measure = sorted_jaccard if params.verify else estimated_jaccard
    rows = _sketches(scratch, num_shards, field)
    a, b = pairs.column("doc_a").to_pylist(), pairs.column("doc_b").to_pylist()
    similarity = [measure(rows[x][1], rows[y][1]) for x, y in zip(a, b, strict=True)]
    entities = [[rows[x][0] for x in side] for side in (a, b)]
    table = pa.table([a, b, *entities, similarity], schema=SCORED_SCHEMA)
    table = table.filter(pc.greater_equal(table.column("similarity"), params.pair_threshold))
    write_parquet(table, part_path(scratch / "scored", part))
    return len(pairs)


def scored(scratch: Path) -> pa.Table:
    """The scored pairs at or above the split's threshold, sorted by (doc_a, doc_b)."""
    tables = [read_parquet(p) for p in sorted((scratch / "scored").glob("part-*.parquet"))]
    table = pa.concat_tables(tables) if tables else SCORED_SCHEMA.empty_table()
    return table.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")]).combine_chunks()


def _row_facts(scratch: Path, num_shards: int) -> dict[str, dict]:
    """doc id -> entity, quality and signature (None without text) of every new row and every
    published row sketched for the append."""
    facts: dict[str, dict] = {}
    for folder, columns in (("keys", ROW_SCHEMA.names), ("old-rows", ROW_SCHEMA.names)):
        for _, table in iter_shards(scratch / folder, num_shards, columns):
            facts.update({r["doc_id"]: {**r, "signature": None} for r in table.to_pylist()})
    for doc_id, (_, signature) in _sketches(scratch, num_shards, "signature").items():
        facts[doc_id]["signature"] = signature
    return facts


def decide_append(_: int, scratch: Path, num_shards: int, params: DedupParams) -> dict[str, int]:
    """The clusters of the new rows (see the module's step 7), to ``decided.parquet``; return
    how many new rows joined published clusters and how many new clusters formed. An engine
    task: the append's linked rows in memory."""
    lookup = _lookup(scratch, num_shards).to_pylist()
    cluster_of = {r["doc_id"]: r["cluster_id"] for r in lookup}
    rep_of = {r["cluster_id"]: r["representative"] for r in lookup}
    unlisted = {r["cluster_id"] for r in lookup if not r["listed"]}
    close = scored(scratch).filter(pc.greater_equal(pc.field("similarity"), params.threshold))
    exact = read_parquet(scratch / "exact-links.parquet")
    edges = pa.concat_tables([t.select(["doc_a", "doc_b"]) for t in (close, exact)])
    found = UnionFind()
    for a, b in zip(*(edges.column(c).to_pylist() for c in ("doc_a", "doc_b")), strict=True):
        found.union(cluster_of.get(a, a), cluster_of.get(b, b))
    facts = _row_facts(scratch, num_shards)
    rows: list[tuple[str, str, str, bool, float]] = []  # cluster, doc, kept row, stays, similarity
    joined = formed = 0
    for name, members in found.groups().items():
        old = [m for m in members if m in rep_of]
        new = [m for m in members if m not in rep_of]
        if old:
            target, kept = min(old), facts[rep_of[min(old)]]
            joined += len(new)
            if target in unlisted:  # a published row in no cluster before: now its kept row
                rows.append((target, kept["doc_id"], kept["doc_id"], True, 1.0))
        else:
            target, kept = name, _kept([facts[m] for m in new], params.keep)
            formed += 1
        for doc_id in new:
            stays = params.mode == "annotate" or (not old and doc_id == kept["doc_id"])
            similarity = _similarity(facts[doc_id]["signature"], kept["signature"])
            rows.append((target, doc_id, kept["doc_id"], stays, similarity))
    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], [], []]
    cluster, doc, representative, stays, similarity = columns
    table = pa.table(
        [
            pa.array(cluster, pa.string()),
            pa.array(doc, pa.string()),
            pa.array([facts[d]["entity"] for d in doc], pa.string()),
            pa.array(representative, pa.string()),
            pa.array(stays, pa.bool_()),
            pa.array([facts[d]["quality_score"] for d in doc], pa.float64()),
            pa.array(similarity, pa.float64()),
        ],
        schema=MEMBERSHIP_SCHEMA,
    )
    table = table.sort_by([("cluster_id", "ascending"), ("doc_id", "ascending")])
    write_parquet(table, scratch / "decided.parquet")
    return {"rows_joining_published_clusters": joined, "new_clusters": formed}
