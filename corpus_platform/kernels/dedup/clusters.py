"""Steps 4 to 6 on the engine: the clusters' components, the membership table (representatives
and similarities, :mod:`corpus_platform.kernels.dedup.membership`) and the written shards."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import columns_but_text, generation_path
from corpus_platform.base.shards import (
    count_rows,
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
)
from corpus_platform.kernels.dedup.candidates import exact_key_partition, group_candidates
from corpus_platform.kernels.dedup.membership import MembershipSummary, write_membership
from corpus_platform.kernels.dedup.params import KEY_ROW_BYTES, DedupParams, partitions_for
from corpus_platform.kernels.dedup.verify import (
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
    smallest = keys.group_by("key", use_threads=False).aggregate([("doc_id", "min")])
    joined = keys.join(smallest, "key", use_threads=False)
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
    published: Path | None = None,
) -> DiskClusters:
    """Steps 2 to 6 over the scratch files that :func:`signature_shard` wrote for every shard:
    candidates, their scores (on disk), the clusters' components, then the membership table
    written to ``clusters/`` and the pairs at or above the split's threshold to
    ``similar_pairs``, all on the engine (:mod:`corpus_platform.kernels.dedup.membership`);
    nothing per pair or clustered row in this process. ``published``: the published snapshot
    whose kept rows stay kept, in their clusters' published ids (an append)."""
    engine = engine or LocalEngine()
    group_candidates(scratch, num_shards, params, engine)
    scored = score_candidates(scratch, num_shards, params, engine, params.pair_threshold, memory_mb)
    labels = link_clusters(scratch, num_shards, params.threshold, scored.kept, engine, memory_mb)
    summary = write_membership(
        labels,
        scratch,
        clusters,
        num_shards,
        params.keep,
        params.mode,
        engine,
        memory_mb,
        published,
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
    """Write one shard's kept rows with a ``cluster_id`` column as generation 0 (a build from
    scratch), reading the shard's decisions from the membership table in ``staging/clusters``;
    return (rows in, rows kept). The rows keep every column but the text, which stays in
    ``upstream`` alone (readers take it from there: :class:`~corpus_platform.base.generations.
    TextSource`)."""
    table = read_shard(upstream, shard, columns_but_text(part_path(upstream, shard)))
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
    write_parquet(table, generation_path(staging, shard, 0))
    return len(ids), len(table)
