"""Steps 5 and 6 on the engine: representatives, similarities and the membership table.

The membership files are written with nothing per row in the calling process (the tests'
reference, ``tests/kernels/dedup/reference_clustering.py``, takes the same decisions in one
process and compares the files byte for byte):

1. :func:`gather_members`, per shard: the shard's clustered rows (the components' labels are
   partitioned like the shards, by ``stable_hash(doc_id)``), their entity and quality score from
   ``keys/`` and their MinHash signature from ``sketches/``, scattered by cluster id.
2. :func:`decide_partition`, per cluster partition: each cluster's kept row (the highest
   quality score, ties by smallest doc id; or the smallest doc id) and each member's estimated
   similarity to it; rows scattered back by doc shard; returns the partition's cluster-size
   histogram and its largest clusters. After an append (a published snapshot built with the
   same settings), decisions are sticky: every member that the published snapshot kept stays
   kept and the cluster keeps its published id, so a new near-duplicate of a published row is
   the one dropped.
3. :func:`write_membership_shard`, per shard: ``clusters/part-N`` sorted by (cluster id, doc id).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import generation_path
from corpus_platform.base.shards import (
    count_rows,
    iter_scratch,
    part_path,
    read_shard,
    scratch_part_path,
    write_parquet,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import MIN_PARTITIONS, gathered, scatter
from corpus_platform.kernels.dedup.params import partitions_for
from corpus_platform.kernels.dedup.verify import estimated_jaccard

MEMBER_SCHEMA = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("doc_id", pa.string()),
        ("entity", pa.string()),
        ("quality_score", pa.float64()),
        ("signature", pa.binary()),
        ("published_cluster", pa.string()),  # the cluster id of a row the published kept
    ]
)
MEMBERSHIP_SCHEMA = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("doc_id", pa.string()),
        ("entity", pa.string()),
        ("representative", pa.string()),
        ("kept", pa.bool_()),
        ("quality_score", pa.float64()),
        ("similarity", pa.float64()),
    ]
)
LARGEST_CLUSTERS = 5
MEMBER_ROW_BYTES = 1_200  # a member row: ids, entity, quality, a 128-slot signature, grouping


@dataclass(frozen=True)
class LargeCluster:
    """One of the largest clusters: its size, kept row and first other member (by doc id)."""

    cluster_id: str
    size: int
    representative: str
    member: str
    similarity: float


@dataclass(frozen=True)
class MembershipSummary:
    """What the stage reports about its clusters."""

    sizes: dict[int, int]  # cluster size -> clusters
    rows_in_clusters: int
    largest: tuple[LargeCluster, ...]


def published_kept(published: Path | None, shard: int, ids: pa.Array) -> pa.Table:
    """The rows of ``ids`` that the published snapshot ``published`` kept, with their published
    cluster ids (none without a published snapshot)."""
    empty = pa.table(
        {"doc_id": pa.array([], pa.string()), "published_cluster": pa.array([], pa.string())}
    )
    if published is None or not part_path(published, shard).exists():
        return empty
    kept = read_shard(published, shard, ["doc_id", "cluster_id"])
    kept = kept.filter(pc.is_in(kept.column("doc_id"), ids))
    return kept.rename_columns(["doc_id", "published_cluster"])


def gather_members(
    shard: int, labels: Path, scratch: Path, out: Path, partitions: int, published: Path | None
) -> int:
    """Scatter one shard's clustered rows (cluster id, doc id, entity, quality, signature or
    null for rows without text, published cluster id of a row the published snapshot kept) by
    cluster id; return how many."""
    named = read_shard(labels, shard).rename_columns(["doc_id", "cluster_id"])
    ids = named.column("doc_id")
    keys = read_shard(scratch / "keys", shard, ["doc_id", "entity", "quality_score"])
    keys = keys.filter(pc.is_in(keys.column("doc_id"), ids))
    signed = [
        batch.filter(pc.is_in(batch.column("doc_id"), ids))
        for batch in iter_scratch(
            scratch_part_path(scratch / "sketches", shard), ["doc_id", "signature"]
        )
    ]
    signatures = pa.concat_tables(
        [pa.table({"doc_id": pa.array([], pa.string()), "signature": pa.array([], pa.binary())})]
        + [t.cast(pa.schema([("doc_id", pa.string()), ("signature", pa.binary())])) for t in signed]
    )
    table = named.join(keys, "doc_id", join_type="left outer", use_threads=False)
    table = table.join(signatures, "doc_id", join_type="left outer", use_threads=False)
    table = table.join(
        published_kept(published, shard, ids), "doc_id", join_type="left outer", use_threads=False
    )
    table = table.select(MEMBER_SCHEMA.names).cast(MEMBER_SCHEMA)
    scatter(table, "cluster_id", out, shard, partitions)
    return len(table)


def _kept(members: list[dict], keep: str) -> dict:
    return min(
        members,
        key=lambda r: (-r["quality_score"] if keep == "quality" else 0.0, r["doc_id"]),
    )


def _similarity(mine: bytes | None, theirs: bytes | None) -> float:
    """Estimated Jaccard of two MinHash signatures; 1.0 when either row has no text."""
    if mine is None or theirs is None:
        return 1.0
    return estimated_jaccard(
        np.frombuffer(mine, dtype=np.uint32), np.frombuffer(theirs, dtype=np.uint32)
    )


def decide_partition(
    part: int, members: Path, out: Path, num_shards: int, keep: str, mode: str
) -> tuple[Counter[int], list[LargeCluster]]:
    """Kept row and similarities of every cluster of one partition, scattered by doc shard;
    return the partition's size histogram and its largest clusters (ties by cluster id)."""
    rows = gathered(members, part, MEMBER_SCHEMA).to_pylist()
    clusters: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        clusters[row["cluster_id"]].append(row)
    decided, sizes, largest = [], Counter(), []
    for label, group in sorted(clusters.items()):
        group.sort(key=lambda r: r["doc_id"])
        anchored = [r for r in group if r["published_cluster"] is not None]
        kept = _kept(anchored or group, keep)
        cluster_id = kept["published_cluster"] or label
        stays = {r["doc_id"] for r in anchored} | {kept["doc_id"]}
        similarity = {r["doc_id"]: _similarity(r["signature"], kept["signature"]) for r in group}
        decided += [
            (
                cluster_id,
                r["doc_id"],
                r["entity"],
                kept["doc_id"],
                mode == "annotate" or r["doc_id"] in stays,
                r["quality_score"],
                similarity[r["doc_id"]],
            )
            for r in group
        ]
        sizes[len(group)] += 1
        other = next(r["doc_id"] for r in group if r["doc_id"] != kept["doc_id"])
        largest.append(
            LargeCluster(cluster_id, len(group), kept["doc_id"], other, similarity[other])
        )
    columns = list(zip(*decided, strict=True)) if decided else [[] for _ in MEMBERSHIP_SCHEMA]
    table = pa.table(
        [pa.array(c, f.type) for c, f in zip(columns, MEMBERSHIP_SCHEMA, strict=True)],
        schema=MEMBERSHIP_SCHEMA,
    )
    scatter(table, "doc_id", out, part, num_shards)
    largest.sort(key=lambda c: (-c.size, c.cluster_id))
    return sizes, largest[:LARGEST_CLUSTERS]


def write_membership_shard(shard: int, decided: Path, clusters: Path) -> int:
    """``clusters/part-<shard>``: the shard's membership rows sorted by (cluster id, doc id), as
    generation 0 (a build from scratch)."""
    table = gathered(decided, shard, MEMBERSHIP_SCHEMA)
    table = table.sort_by([("cluster_id", "ascending"), ("doc_id", "ascending")])
    write_parquet(table.combine_chunks(), generation_path(clusters, shard, 0))
    return len(table)


def write_membership(
    labels: Path,
    scratch: Path,
    clusters: Path,
    num_shards: int,
    keep: str,
    mode: str,
    engine: Engine | None = None,
    memory_mb: int = 1024,
    published: Path | None = None,
) -> MembershipSummary:
    """Write ``clusters/`` (the membership side table, one file per shard) from the clusters'
    ``labels`` and the sketches and keys under ``scratch``, on ``engine``; the cluster
    partitions are sized by the clustered rows and ``memory_mb``, not by the shard count.
    ``published``: the published snapshot whose kept rows and cluster ids stay (an append)."""
    engine = engine or LocalEngine()
    shards = range(num_shards)
    clustered = count_rows(labels, num_shards)
    partitions = max(MIN_PARTITIONS, partitions_for(clustered, MEMBER_ROW_BYTES, memory_mb))
    members, decided = scratch / "members", scratch / "decided"
    engine.map_shards(
        partial(
            gather_members,
            labels=labels,
            scratch=scratch,
            out=members,
            partitions=partitions,
            published=published,
        ),
        shards,
    )
    parts = engine.map_shards(
        partial(
            decide_partition,
            members=members,
            out=decided,
            num_shards=num_shards,
            keep=keep,
            mode=mode,
        ),
        range(partitions),
    )
    rows = engine.map_shards(
        partial(write_membership_shard, decided=decided, clusters=clusters), shards
    )
    sizes: Counter[int] = Counter()
    for part_sizes, _ in parts:
        sizes.update(part_sizes)
    largest = sorted((c for _, top in parts for c in top), key=lambda c: (-c.size, c.cluster_id))
    return MembershipSummary(
        dict(sorted(sizes.items())), sum(rows), tuple(largest[:LARGEST_CLUSTERS])
    )


def summarize_membership(_: int, clusters: Path, num_shards: int) -> MembershipSummary:
    """The summary of a whole membership table (every generation): the cluster-size histogram,
    the rows in clusters and the largest clusters, each with its kept row and its first other
    member (by doc id). An engine task: the clustered rows' ids in memory."""
    tables = [
        read_shard(clusters, s, ["cluster_id", "doc_id", "representative", "similarity"])
        for s in range(num_shards)
        if part_path(clusters, s).exists()
    ]
    table = pa.concat_tables(tables) if tables else None
    if table is None or not len(table):
        return MembershipSummary({}, 0, ())
    table = table.sort_by([("cluster_id", "ascending"), ("doc_id", "ascending")])
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in table.to_pylist():
        groups[row["cluster_id"]].append(row)
    sizes = Counter(len(rows) for rows in groups.values())
    largest = []
    for cluster_id, rows in groups.items():
        kept = rows[0]["representative"]
        other = next(r for r in rows if r["doc_id"] != kept)
        largest.append(
            LargeCluster(cluster_id, len(rows), kept, other["doc_id"], other["similarity"])
        )
    largest.sort(key=lambda c: (-c.size, c.cluster_id))
    return MembershipSummary(
        dict(sorted(sizes.items())), len(table), tuple(largest[:LARGEST_CLUSTERS])
    )
