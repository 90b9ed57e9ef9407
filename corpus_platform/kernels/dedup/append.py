"""Dedup of an append, end to end: :func:`append_to_disk` writes the next generation.

The new raw batches' rows are compared with each other and with the index of every published
row (:mod:`corpus_platform.kernels.dedup.append_search`), their candidate pairs verified and
clustered without moving a published row (:mod:`corpus_platform.kernels.dedup.append_clusters`),
and the generation written beside the published files (:func:`write_append_shard`). Every step
is an engine task; the work grows with the new rows and their candidates, plus one pass over the
published index (a few hundred bytes a row) and over the text of the shards holding published
candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import (
    columns_but_text,
    generation_path,
    side_generation_path,
)
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SIMILAR_PAIRS
from corpus_platform.base.shards import batch_part_path, part_path, read_parquet, write_parquet
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup.append_clusters import (
    SCORE_PARTS,
    decide_append,
    published_members,
    published_sketches,
    score_append,
    scored,
)
from corpus_platform.kernels.dedup.append_search import (
    append_candidates,
    exact_links,
    new_keys,
    published_hits,
    sketch_new_shard,
)
from corpus_platform.kernels.dedup.index import INDEX
from corpus_platform.kernels.dedup.membership import MEMBERSHIP_SCHEMA
from corpus_platform.kernels.dedup.params import DedupParams

CLUSTERS = "clusters"


def write_append_shard(
    shard: int,
    upstream: Path,
    batches: tuple[str, ...],
    scratch: Path,
    staging: Path,
    generation: int,
    mode: str,
    num_shards: int,
) -> tuple[int, int]:
    """Write one shard of the new generation: the new rows it keeps (every new row in annotate
    mode) with their cluster ids and without their text (it stays in ``upstream``), and its new
    membership rows; return (rows in, rows kept). An engine task."""
    columns = columns_but_text(part_path(upstream, shard))
    table = pa.concat_tables(
        [read_parquet(batch_part_path(upstream, shard, b), columns) for b in batches],
        promote_options="default",
    )
    decided = read_parquet(scratch / "decided.parquet")
    owners = [shard_of(d, num_shards) for d in decided.column("doc_id").to_pylist()]
    mine = pa.array([owner == shard for owner in owners], pa.bool_())
    decided = decided.filter(mine).cast(MEMBERSHIP_SCHEMA)
    ids_decided, clusters = decided.column("doc_id"), decided.column("cluster_id")
    cluster_of = dict(zip(ids_decided.to_pylist(), clusters.to_pylist(), strict=True))
    dropped = set(decided.filter(pc.invert(decided.column("kept"))).column("doc_id").to_pylist())
    ids = table.column("doc_id").to_pylist()
    table = table.append_column(
        "cluster_id", pa.array([cluster_of.get(d, d) for d in ids], pa.string())
    )
    if mode == "drop":
        table = table.filter(pa.array([d not in dropped for d in ids], pa.bool_()))
    write_parquet(table, generation_path(staging, shard, generation))
    write_parquet(decided, generation_path(staging / CLUSTERS, shard, generation))
    return len(ids), len(table)


def write_append_pairs(_: int, scratch: Path, staging: Path, generation: int) -> int:
    """The new similar pairs (at or above the split's threshold) as generation ``generation``
    of the pairs table; return how many. An engine task."""
    table = scored(scratch)
    write_parquet(table, side_generation_path(staging, SIMILAR_PAIRS, generation))
    return len(table)


@dataclass(frozen=True)
class AppendResult:
    """What an append's dedup did."""

    rows_in: int
    rows: int
    candidates: int
    similar: int
    joined: int  # new rows that joined a published cluster
    new_clusters: int


def append_to_disk(
    upstream: Path,
    batches: tuple[str, ...],
    published: Path,
    staging: Path,
    scratch: Path,
    params: DedupParams,
    num_shards: int,
    generation: int,
    engine: Engine,
) -> AppendResult:
    """Deduplicate the rows of the raw batches ``batches`` (keys of ``filtered_documents``'
    batch files in ``upstream``) against each other and the ``published`` snapshot, writing
    generation ``generation`` of the stage into ``staging`` (which already holds the published
    files)."""
    shards, groups = range(num_shards), range(len(params.band_groups()))
    sketch = partial(sketch_new_shard, upstream=upstream, batches=batches, scratch=scratch)
    engine.map_shards(
        partial(sketch, params=params, index=staging / INDEX, generation=generation), shards
    )
    engine.map_shards(partial(new_keys, scratch=scratch, num_shards=num_shards, params=params), [0])
    hits = partial(published_hits, index=published / INDEX, scratch=scratch, bands=params.bands[0])
    engine.map_shards(hits, shards)
    found = partial(append_candidates, scratch=scratch, num_shards=num_shards, params=params)
    engine.map_shards(found, groups)
    engine.map_shards(partial(exact_links, scratch=scratch, num_shards=num_shards), [0])
    clusters = published / CLUSTERS
    members = partial(published_members, scratch=scratch, clusters=clusters, num_shards=num_shards)
    engine.map_shards(members, shards)
    texts = partial(published_sketches, scratch=scratch, upstream=upstream, params=params)
    engine.map_shards(partial(texts, num_shards=num_shards), shards)
    score = partial(score_append, scratch=scratch, num_shards=num_shards, params=params)
    candidates = sum(engine.map_shards(score, range(SCORE_PARTS)))
    decide = partial(decide_append, scratch=scratch, num_shards=num_shards, params=params)
    decided = engine.map_shards(decide, [0])[0]
    write = partial(
        write_append_shard,
        upstream=upstream,
        batches=batches,
        scratch=scratch,
        staging=staging,
        generation=generation,
        mode=params.mode,
        num_shards=num_shards,
    )
    rows = engine.map_shards(write, shards)
    pairs = partial(write_append_pairs, scratch=scratch, staging=staging, generation=generation)
    similar = engine.map_shards(pairs, [0])[0]
    return AppendResult(
        rows_in=sum(r[0] for r in rows),
        rows=sum(r[1] for r in rows),
        candidates=candidates,
        similar=similar,
        joined=decided["rows_joining_published_clusters"],
        new_clusters=decided["new_clusters"],
    )
