"""The dedup decisions taken in this process, in plain Python: an independent reference
implementation used as an oracle by the tests.

The stage never brings a decision per row into one process: :func:`cluster_to_disk` links the
clusters on the engine (:func:`link_clusters`) and writes the membership table there
(:mod:`corpus_platform.kernels.dedup.membership`). The functions below read the same scratch
files (what ``signature_shard`` wrote, the scored pairs, the components' labels) back into
Python objects and take steps 5 and 6 here, one dict at a time: the kept row per cluster, each
member's estimated similarity to it and the membership table. ``test_membership.py`` asserts
that the engine writes these decisions byte for byte.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import iter_shards, read_parquet, read_scratch, scratch_part_path
from corpus_platform.engine import Engine
from corpus_platform.engine.graph import MIN_PARTITIONS, connected_components, write_edge_arrays
from corpus_platform.kernels.dedup.candidates import (
    CANDIDATE_SCHEMA,
    candidate_file,
    candidate_groups,
    exact_key_partition,
    group_candidates,
)
from corpus_platform.kernels.dedup.clusters import EDGE_ROW_BYTES, link_clusters
from corpus_platform.kernels.dedup.params import DedupParams, partitions_for
from corpus_platform.kernels.dedup.verify import (
    SCORED_SCHEMA,
    estimated_jaccard,
    score_candidates,
    scored_table,
)


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair with its Jaccard similarity and the rows' entities."""

    doc_a: str
    doc_b: str
    entity_a: str
    entity_b: str
    similarity: float


def read_scored(scratch: Path, min_similarity: float = 0.0) -> list[ScoredPair]:
    """The scored pairs (``scored_table``) at or above ``min_similarity`` as Python objects."""
    table = scored_table(scratch, min_similarity)
    columns = (table.column(c).to_pylist() for c in SCORED_SCHEMA.names)
    return [ScoredPair(*row) for row in zip(*columns, strict=True)]


def read_candidates(scratch: Path) -> pa.Table:
    """The distinct candidate pairs of every band group, sorted by (doc_a, doc_b)."""
    tables = [read_parquet(candidate_file(scratch, g)) for g in candidate_groups(scratch)]
    table = pa.concat_tables(tables) if tables else CANDIDATE_SCHEMA.empty_table()
    table = table.group_by(CANDIDATE_SCHEMA.names).aggregate([]).select(CANDIDATE_SCHEMA.names)
    return table.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])


def candidate_pairs(
    scratch: Path, num_shards: int, params: DedupParams, engine: Engine | None = None
) -> list[tuple[str, str]]:
    """Pairs of doc ids that share at least one band key, sorted, each once (a < b): what
    ``group_candidates`` wrote, read back."""
    group_candidates(scratch, num_shards, params, engine)
    table = read_candidates(scratch)
    return list(zip(*(table.column(c).to_pylist() for c in ("doc_a", "doc_b")), strict=True))


def exact_duplicate_groups(scratch: Path, num_shards: int, partitions: int = 1) -> list[list[str]]:
    """Groups (size > 1) of doc ids with equal exact keys, sorted; the keys are read one
    partition (``exact_key_partition``) at a time."""
    groups: list[list[str]] = []
    for part in range(partitions):
        hashes = exact_key_partition(scratch, num_shards, part, partitions)
        grouped = hashes.group_by("key").aggregate([("doc_id", "list"), ("doc_id", "count")])
        grouped = grouped.filter(pc.greater(grouped.column("doc_id_count"), 1))
        groups += grouped.column("doc_id_list").to_pylist()
    return sorted(sorted(g) for g in groups)


def read_clusters(labels: Path, num_shards: int) -> dict[str, str]:
    """Every member of a cluster -> the cluster id, from ``link_clusters``' labels."""
    cluster_of: dict[str, str] = {}
    for _, table in iter_shards(labels, num_shards):
        nodes, names = table.column("node").to_pylist(), table.column("component").to_pylist()
        cluster_of.update(zip(nodes, names, strict=True))
    return cluster_of


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
    Python objects, through the engine's connected components (as ``link_clusters`` does)."""
    links = [(group[0], member) for group in exact for member in group[1:]]
    links += [(p.doc_a, p.doc_b) for p in scored if p.similarity >= threshold]
    partitions = max(MIN_PARTITIONS, partitions_for(2 * len(links), EDGE_ROW_BYTES, memory_mb))
    first = pa.array([a for a, _ in links], pa.string())
    second = pa.array([b for _, b in links], pa.string())
    write_edge_arrays(first, second, work / "links", 0, partitions)
    connected_components(work / "links", work / "labels", partitions, num_shards, engine)
    return read_clusters(work / "labels", num_shards)


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


def _signatures(scratch: Path, num_shards: int, wanted: set[str]) -> dict[str, np.ndarray]:
    """The MinHash signature of each of ``wanted`` that has one (rows without text have none)."""
    found = {}
    for shard in range(num_shards):
        table = read_scratch(scratch_part_path(scratch / "sketches", shard))
        ids, values = table.column("doc_id").to_pylist(), table.column("signature").to_pylist()
        for doc_id, signature in zip(ids, values, strict=True):
            if doc_id in wanted and signature is not None:
                found[doc_id] = np.frombuffer(signature, dtype=np.uint32)
    return found


def similarity_to_representative(
    cluster_of: dict[str, str], representative: dict[str, str], scratch: Path, num_shards: int
) -> dict[str, float]:
    """Each member's MinHash-estimated Jaccard similarity to its cluster's kept row (1.0 for the
    representative itself and for rows without text, which only exact keys can join)."""
    signature = _signatures(scratch, num_shards, set(cluster_of))
    similarity = {doc_id: 1.0 for doc_id in cluster_of}
    for doc_id, cluster in cluster_of.items():
        mine, kept = signature.get(doc_id), signature.get(representative[cluster])
        if mine is not None and kept is not None:
            similarity[doc_id] = estimated_jaccard(mine, kept)
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


def cluster_sizes(cluster_of: dict[str, str]) -> dict[int, int]:
    """Histogram: cluster size -> number of clusters."""
    sizes: dict[str, int] = defaultdict(int)
    for cluster in cluster_of.values():
        sizes[cluster] += 1
    histogram: dict[int, int] = defaultdict(int)
    for size in sizes.values():
        histogram[size] += 1
    return dict(sorted(histogram.items()))


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


def cluster_documents(
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    memory_mb: int = 1024,
    engine: Engine | None = None,
) -> DedupResult:
    """Steps 2 to 4 as the stage runs them (candidates, their scores and the clusters'
    components, on ``engine``) over the scratch files ``signature_shard`` wrote for every
    shard, then steps 5 and 6 in this process: every decision comes back as Python objects."""
    group_candidates(scratch, num_shards, params, engine)
    scored = score_candidates(scratch, num_shards, params, engine, params.pair_threshold, memory_mb)
    labels = link_clusters(scratch, num_shards, params.threshold, scored.kept, engine, memory_mb)
    cluster_of = read_clusters(labels, num_shards)
    info = member_info(set(cluster_of), scratch, num_shards)
    representative = choose_representatives(cluster_of, info, params.keep)
    similarity = similarity_to_representative(cluster_of, representative, scratch, num_shards)
    pairs = read_scored(scratch, params.pair_threshold)
    return DedupResult(pairs, cluster_of, representative, similarity, info, scored.candidates)
