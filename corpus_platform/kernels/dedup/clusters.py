"""Steps 4 to 6: clusters, representatives, the membership table and the written shards."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import (
    ids_by_shard,
)
from corpus_platform.base.shards import (
    count_rows,
    iter_shards,
    part_path,
    read_parquet,
    read_shard,
    write_parquet,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import (
    MIN_PARTITIONS,
    connected_components,
    write_edge_arrays,
    write_edges,
)
from corpus_platform.kernels.dedup.candidates import exact_key_partition, group_candidates
from corpus_platform.kernels.dedup.membership import MembershipSummary, write_membership
from corpus_platform.kernels.dedup.params import KEY_ROW_BYTES, DedupParams, partitions_for
from corpus_platform.kernels.dedup.verify import (
    Scored,
    ScoredPair,
    estimated_jaccard,
    load_sketches,
    read_scored,
    score_candidates,
    scored_blocks,
    write_similar_pairs,
)

EDGE_ROW_BYTES = 400  # an edge row in a components step: two ids twice, hashes, the join


def _components(links: Path, num_shards: int, engine: Engine | None, partitions: int) -> Path:
    labels = links.parent / "labels"
    connected_components(links, labels, partitions, num_shards, engine)
    return labels


def _scored_links(block: int, scratch: Path, threshold: float, links: Path, partitions: int) -> int:
    """Edges of one scored block's pairs at or above ``threshold`` (an engine task)."""
    table = read_parquet(part_path(scratch / "scored", block))
    table = table.filter(pc.greater_equal(table.column("similarity"), threshold))
    return write_edge_arrays(table["doc_a"], table["doc_b"], links, block, partitions)


def _exact_links(
    part: int,
    scratch: Path,
    num_shards: int,
    key_parts: int,
    links: Path,
    partitions: int,
    first_source: int,
) -> int:
    """Edges from every row of one exact-key partition to the smallest doc id of its key (an
    engine task; edge sources numbered from ``first_source``, after the scored blocks')."""
    keys = exact_key_partition(scratch, num_shards, part, key_parts)
    smallest = keys.group_by("key").aggregate([("doc_id", "min")])
    joined = keys.join(smallest, "key")
    source = first_source + part
    return write_edge_arrays(joined["doc_id"], joined["doc_id_min"], links, source, partitions)


def link_clusters(
    scratch: Path,
    num_shards: int,
    threshold: float,
    scored: int,
    engine: Engine | None = None,
    memory_mb: int = 1024,
) -> Path:
    """Link exact-duplicate rows and the scored pairs (``scored`` of them, on disk under
    ``scratch/scored``) with similarity >= ``threshold``, and find the components on the
    engine through ``scratch/graph`` (:mod:`corpus_platform.engine.graph`); every edge is
    written by an engine task, partitioned so one partition of links fits in ``memory_mb``.
    Return the labels folder: ``part-N`` holds the (``node``, ``component``) rows of the
    clustered doc ids of shard N, a cluster (size > 1) being named by its smallest doc_id."""
    engine = engine or LocalEngine()
    links = scratch / "graph" / "links"
    shutil.rmtree(scratch / "graph", ignore_errors=True)
    rows = count_rows(scratch / "keys", num_shards)
    partitions = partitions_for(2 * (rows + scored), EDGE_ROW_BYTES, memory_mb)
    partitions = max(MIN_PARTITIONS, partitions)
    blocks = scored_blocks(scratch)
    task = partial(_scored_links, scratch=scratch, threshold=threshold, links=links)
    engine.map_shards(partial(task, partitions=partitions), blocks)
    key_parts = partitions_for(rows, KEY_ROW_BYTES, memory_mb)
    exact = partial(_exact_links, scratch=scratch, num_shards=num_shards, key_parts=key_parts)
    after = max(blocks, default=-1) + 1  # a source number no block uses
    exact = partial(exact, links=links, partitions=partitions, first_source=after)
    engine.map_shards(exact, range(key_parts))
    return _components(links, num_shards, engine, partitions)


def build_clusters(
    exact: list[list[str]],
    scored: list[ScoredPair],
    threshold: float,
    work: Path,
    num_shards: int,
    engine: Engine | None = None,
    memory_mb: int = 1024,
) -> dict[str, str]:
    """Every member of a cluster -> the cluster id, for exact groups and scored pairs given as
    Python objects (the same components as :func:`link_clusters`)."""
    links = [(group[0], member) for group in exact for member in group[1:]]
    links += [(p.doc_a, p.doc_b) for p in scored if p.similarity >= threshold]
    partitions = max(MIN_PARTITIONS, partitions_for(2 * len(links), EDGE_ROW_BYTES, memory_mb))
    write_edges(links, work / "links", partitions)
    return read_clusters(_components(work / "links", num_shards, engine, partitions), num_shards)


def read_clusters(labels: Path, num_shards: int) -> dict[str, str]:
    """Every member of a cluster -> the cluster id, from :func:`link_clusters`' labels."""
    cluster_of: dict[str, str] = {}
    for _, table in iter_shards(labels, num_shards):
        nodes, names = table.column("node").to_pylist(), table.column("component").to_pylist()
        cluster_of.update(zip(nodes, names, strict=True))
    return cluster_of


@dataclass(frozen=True)
class MemberInfo:
    """A cluster member's entity and quality score, from the exact-key files."""

    entity: str
    quality: float


def member_info(doc_ids: set[str], scratch: Path, num_shards: int) -> dict[str, MemberInfo]:
    """Entity and quality score of each of ``doc_ids`` (every keyed row is in ``keys/``)."""
    wanted = pa.array(sorted(doc_ids), pa.string())
    found: dict[str, MemberInfo] = {}
    columns = ["doc_id", "entity", "quality_score"]
    for _, table in iter_shards(scratch / "keys", num_shards, columns):
        hit = table.filter(pc.is_in(table.column("doc_id"), wanted))
        for doc_id, entity, quality in zip(
            *(hit.column(c).to_pylist() for c in columns), strict=True
        ):
            found[doc_id] = MemberInfo(entity, quality)
    return found


def choose_representatives(
    cluster_of: dict[str, str], info: dict[str, MemberInfo], keep: str
) -> dict[str, str]:
    """The member kept per cluster id: highest quality score, ties by smallest doc_id
    (``keep="quality"``), or the smallest doc_id (``keep="smallest_id"``)."""
    best: dict[str, tuple[float, str]] = {}
    for doc_id, cluster in cluster_of.items():
        rank = (-info[doc_id].quality if keep == "quality" else 0.0, doc_id)
        if cluster not in best or rank < best[cluster]:
            best[cluster] = rank
    return {cluster: rank[1] for cluster, rank in best.items()}


def similarity_to_representative(
    cluster_of: dict[str, str], representative: dict[str, str], scratch: Path, num_shards: int
) -> dict[str, float]:
    """Each member's MinHash-estimated Jaccard similarity to its cluster's kept row (1.0 for the
    representative itself and for rows without text, which only exact keys can join)."""
    rep_signature = {}
    for shard, wanted in ids_by_shard(representative.values(), num_shards):
        found = load_sketches(scratch, shard, wanted, "signature")
        rep_signature.update({d: signature for d, (_, signature) in found.items()})
    similarity = {doc_id: 1.0 for doc_id in cluster_of}
    for shard, wanted in ids_by_shard(cluster_of, num_shards):
        for doc_id, (_, signature) in load_sketches(scratch, shard, wanted, "signature").items():
            rep = rep_signature.get(representative[cluster_of[doc_id]])
            if rep is not None:
                similarity[doc_id] = estimated_jaccard(signature, rep)
    return similarity


def membership_table(
    cluster_of: dict[str, str],
    representative: dict[str, str],
    similarity: dict[str, float],
    info: dict[str, MemberInfo],
    mode: str,
) -> pa.Table:
    """The cluster membership side table, sorted by (cluster_id, doc_id)."""
    rows = sorted((c, d) for d, c in cluster_of.items())
    reps = [representative[c] for c, _ in rows]
    return pa.table(
        {
            "cluster_id": pa.array([c for c, _ in rows], pa.string()),
            "doc_id": pa.array([d for _, d in rows], pa.string()),
            "entity": pa.array([info[d].entity for _, d in rows], pa.string()),
            "representative": pa.array(reps, pa.string()),
            "kept": pa.array(
                [mode == "annotate" or d == r for (_, d), r in zip(rows, reps, strict=True)],
                pa.bool_(),
            ),
            "quality_score": pa.array([info[d].quality for _, d in rows], pa.float64()),
            "similarity": pa.array([similarity[d] for _, d in rows], pa.float64()),
        }
    )


@dataclass(frozen=True)
class DedupResult:
    """Everything decided about duplicates: the scored pairs at or above the split's
    threshold (``pair_threshold``), clusters and their kept rows, and how many candidate pairs
    were scored in all."""

    scored: list[ScoredPair]
    cluster_of: dict[str, str]
    representative: dict[str, str]
    similarity: dict[str, float]
    info: dict[str, MemberInfo]
    candidates: int = 0

    def membership(self, mode: str) -> pa.Table:
        """The membership side table (see :func:`membership_table`)."""
        return membership_table(
            self.cluster_of, self.representative, self.similarity, self.info, mode
        )


def _pairs_and_links(
    scratch: Path, num_shards: int, params: DedupParams, memory_mb: int, engine: Engine | None
) -> tuple[Scored, Path]:
    """Steps 2 to 4: candidates, their scores (on disk) and the clusters' labels folder."""
    group_candidates(scratch, num_shards, params, engine)
    scored = score_candidates(scratch, num_shards, params, engine, params.pair_threshold, memory_mb)
    labels = link_clusters(scratch, num_shards, params.threshold, scored.kept, engine, memory_mb)
    return scored, labels


def cluster_documents(
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    memory_mb: int = 1024,
    engine: Engine | None = None,
) -> DedupResult:
    """Steps 2 to 5 over the scratch files that :func:`signature_shard` wrote for every shard:
    band-key grouping, verification and the clusters' components run on ``engine``;
    ``memory_mb`` sizes the partitions of exact keys and of the components' links. Every
    decision comes back into this process (tests and the dedup benchmark read them); the stage
    uses :func:`cluster_to_disk`."""
    scored, labels = _pairs_and_links(scratch, num_shards, params, memory_mb, engine)
    cluster_of = read_clusters(labels, num_shards)
    info = member_info(set(cluster_of), scratch, num_shards)
    representative = choose_representatives(cluster_of, info, params.keep)
    similarity = similarity_to_representative(cluster_of, representative, scratch, num_shards)
    pairs = read_scored(scratch, params.pair_threshold)
    return DedupResult(pairs, cluster_of, representative, similarity, info, scored.candidates)


@dataclass(frozen=True)
class DiskClusters:
    """What :func:`cluster_to_disk` brings back: how many pairs are at or above the split's
    threshold (written to the similar-pairs file), how many candidate pairs were scored, and
    the membership's summary."""

    similar: int
    candidates: int
    summary: MembershipSummary


def cluster_to_disk(
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    clusters: Path,
    similar_pairs: Path,
    memory_mb: int = 1024,
    engine: Engine | None = None,
) -> DiskClusters:
    """Steps 2 to 6 with the membership table written to ``clusters/`` and the pairs at or
    above the split's threshold to ``similar_pairs``, both on the engine
    (:mod:`corpus_platform.kernels.dedup.membership`): the same files as
    :func:`cluster_documents`' decisions, nothing per pair or clustered row in this process."""
    engine = engine or LocalEngine()
    scored, labels = _pairs_and_links(scratch, num_shards, params, memory_mb, engine)
    summary = write_membership(
        labels, scratch, clusters, num_shards, params.keep, params.mode, engine, memory_mb
    )
    write = partial(
        write_similar_pairs,
        scratch=scratch,
        min_similarity=params.pair_threshold,
        out=similar_pairs,
    )
    similar = engine.map_shards(write, [0])[0]
    return DiskClusters(similar, scored.candidates, summary)


def write_dedup_shard(shard: int, upstream: Path, staging: Path, mode: str) -> tuple[int, int]:
    """Write one shard's kept rows with a ``cluster_id`` column, reading the shard's decisions
    from the membership table in ``staging/clusters``; return (rows in, rows kept)."""
    table = read_shard(upstream, shard)
    members = read_shard(staging / "clusters", shard, ["doc_id", "cluster_id", "kept"])
    cluster_of = dict(
        zip(
            members.column("doc_id").to_pylist(),
            members.column("cluster_id").to_pylist(),
            strict=True,
        )
    )
    dropped = {
        d
        for d, kept in zip(
            members.column("doc_id").to_pylist(), members.column("kept").to_pylist(), strict=True
        )
        if not kept
    }
    ids = table.column("doc_id").to_pylist()
    table = table.append_column(
        "cluster_id", pa.array([cluster_of.get(d, d) for d in ids], pa.string())
    )
    if mode == "drop":
        table = table.filter(pa.array([d not in dropped for d in ids], pa.bool_()))
    write_parquet(table, part_path(staging, shard))
    return len(ids), len(table)
