"""deduplicated_documents: one row per exact / near-duplicate cluster, each with its cluster id."""

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.base.generations import link_published, side_generation_path
from corpus_platform.base.names import (
    BATCH_DIGESTS,
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    SIMILAR_PAIRS,
    batch_key,
)
from corpus_platform.base.shards import (
    count_rows,
    read_manifest,
)
from corpus_platform.config import CorpusConfig, SplitConfig
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.dedup.checks import DEDUPLICATED_DOCUMENTS_CHECKS
from corpus_platform.defs.dedup.review import histogram_markdown, largest_clusters_markdown
from corpus_platform.defs.generations import STAGE_CODE, BuildPlan, build_plan
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import (
    DedupParams,
    cluster_to_disk,
    signature_shard,
    write_dedup_shard,
)
from corpus_platform.kernels.dedup.append import AppendResult, append_to_disk
from corpus_platform.kernels.dedup.index import INDEX, index_bytes, write_index_shard
from corpus_platform.kernels.dedup.membership import MembershipSummary, summarize_membership
from corpus_platform.kernels.splitting.neighbours import save_band_layout
from corpus_platform.store import band_cache
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version
from corpus_platform.store.snapshots import current_snapshot

# what decides which row of a cluster is kept: published kept rows stay kept while these hold
KEEP_SETTINGS = {"seed": (), "num_shards": (), "dedup": ()}
# what an append must share with the published snapshot: those, and the threshold of its pairs
APPEND_SETTINGS = {
    **KEEP_SETTINGS,
    "split": tuple(f for f in SplitConfig.model_fields if f != "similarity_threshold"),
}


@dataclass(frozen=True)
class Deduplicated:
    """What one build of the stage found (an append's new generation, or everything)."""

    rows_in: int
    rows: int
    candidates: int
    similar: int
    summary: MembershipSummary  # of the whole membership table
    appended: dict[str, int]  # an append's joins to published clusters and new clusters
    anchor: Path | None  # the published snapshot whose decisions were kept


def from_scratch(
    corpus: CorpusProject, config: CorpusConfig, params: DedupParams, scratch: Path, staging: Path
) -> Deduplicated:
    """Deduplicate every filtered row into generation 0; rows the published snapshot kept stay
    kept when it was built with the same dedup settings (a rebuild after a removed raw file)."""
    upstream, shards = corpus.stage_dir(FILTERED_DOCUMENTS), range(config.num_shards)
    engine = corpus.engine(config)
    sticky = corpus.published_alike(DEDUPLICATED_DOCUMENTS, config, KEEP_SETTINGS)
    engine.map_shards(
        partial(signature_shard, upstream=upstream, scratch=scratch, params=params), shards
    )
    index = partial(write_index_shard, scratch=scratch, out=staging / INDEX, params=params)
    engine.map_shards(partial(index, generation=0), shards)
    pairs = side_generation_path(staging, SIMILAR_PAIRS, 0)
    memory = config.engine.memory_mb
    found = cluster_to_disk(
        scratch, config.num_shards, params, staging / "clusters", pairs, memory, engine, sticky
    )
    save_band_layout(scratch / "bands", params, config.num_shards)
    band_cache.stash(corpus.root_path, scratch)
    write = partial(write_dedup_shard, upstream=upstream, staging=staging, mode=params.mode)
    rows = engine.map_shards(write, shards)
    total_in, total = sum(r[0] for r in rows), sum(r[1] for r in rows)
    return Deduplicated(total_in, total, found.candidates, found.similar, found.summary, {}, sticky)


def append_generation(
    corpus: CorpusProject,
    config: CorpusConfig,
    params: DedupParams,
    plan: BuildPlan,
    scratch: Path,
    staging: Path,
) -> Deduplicated:
    """Take the published files as they are and deduplicate the new raw batches against them
    into the next generation (:mod:`corpus_platform.kernels.dedup.append`)."""
    assert plan.published is not None
    engine, shards = corpus.engine(config), config.num_shards
    link_published(plan.published, staging)
    previous = read_manifest(plan.published)
    found = AppendResult(0, 0, 0, 0, 0, 0)
    if plan.new:
        batches = tuple(batch_key(name) for name in plan.new)
        upstream = corpus.stage_dir(FILTERED_DOCUMENTS)
        found = append_to_disk(
            upstream, batches, plan.published, staging, scratch, params, shards,
            plan.generation, engine,
        )  # fmt: skip
    summarize = partial(summarize_membership, clusters=staging / "clusters", num_shards=shards)
    return Deduplicated(
        previous["rows_in"] + found.rows_in,
        previous["rows"] + found.rows,
        previous["candidate_pairs"] + found.candidates,
        previous["similar_pairs"] + found.similar,
        engine.map_shards(summarize, [0])[0],
        {"rows_joining_published_clusters": found.joined, "new_clusters": found.new_clusters},
        plan.published,
    )


@stage_asset(
    DEDUPLICATED_DOCUMENTS_CHECKS,
    deps=[FILTERED_DOCUMENTS],
    group_name="dedup",
    kinds={"parquet", "dvc"},
    description="Exact (hash of the normalized text, or dedup.columns for rows without text) "
    "and MinHash-LSH near-duplicate clusters verified by exact Jaccard; per cluster the row "
    "with the highest quality score is kept. The membership table is under clusters/, the "
    "similar pairs the split uses under pairs/, the band keys of every row under index/. An "
    "append compares only the new raw batches with each other and with the index, and writes "
    "them as a new generation: published rows keep their files, clusters and kept rows.",
)
def deduplicated_documents(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    upstream = corpus.stage_dir(FILTERED_DOCUMENTS)
    batches = read_manifest(upstream).get(BATCH_DIGESTS) or {}
    plan = build_plan(corpus, DEDUPLICATED_DOCUMENTS, config, APPEND_SETTINGS, "dedup", batches)
    rows = count_rows(upstream, config.num_shards)
    params = DedupParams.from_config(config).for_rows(rows, config.engine.memory_mb)
    with (
        corpus.scratch(DEDUPLICATED_DOCUMENTS) as scratch,
        candidate_folder(corpus.stage_dir(DEDUPLICATED_DOCUMENTS)) as staging,
    ):
        if plan.appends:
            found = append_generation(corpus, config, params, plan, scratch, staging)
        else:
            found = from_scratch(corpus, config, params, scratch, staging)
        counts = dedup_counts(found, params)
        index = index_bytes(staging / INDEX, config.num_shards)
        counts["index_bytes_per_row"] = round(index / max(1, found.rows_in), 1)
        plan.write_manifest(staging, counts, found.rows)
    counts |= plan.as_counts() | found.appended | {STAGE_CODE: stage_code_version("dedup")}
    counts |= anchored_to(corpus, found.anchor)
    extra = {
        "cluster_sizes": dg.MetadataValue.md(histogram_markdown(found.summary.sizes)),
        "largest_clusters": dg.MetadataValue.md(
            largest_clusters_markdown(
                found.summary.largest, upstream, config.num_shards, corpus.engine(config)
            )
        ),
    }
    try:
        yield from publish(corpus, config, DEDUPLICATED_DOCUMENTS_CHECKS, counts, extra)
    except BaseException:
        band_cache.discard_pending(corpus.root_path)
        raise
    if not plan.appends:
        published = current_snapshot(corpus.root_path, corpus.stage_dir(DEDUPLICATED_DOCUMENTS))
        band_cache.keep(corpus.root_path, str(published))


def dedup_counts(found: Deduplicated, params: DedupParams) -> dict:
    """The stage's manifest: rows, clusters and pairs over every generation."""
    sizes = found.summary.sizes
    return {
        "rows_in": found.rows_in,
        "rows": found.rows,
        "duplicate_clusters": sum(sizes.values()),
        "rows_in_clusters": found.summary.rows_in_clusters,
        "candidate_pairs": found.candidates,
        "similar_pairs": found.similar,
        "cluster_size_histogram": {str(k): v for k, v in sizes.items()},
        "lsh_bands_rows": list(params.bands),
        "representative_rule": params.keep,
    }
