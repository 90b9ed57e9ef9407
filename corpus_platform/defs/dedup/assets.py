"""deduplicated_documents: one row per exact / near-duplicate cluster, each with its cluster id."""

from functools import partial

import dagster as dg

from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    SIMILAR_PAIRS,
)
from corpus_platform.base.shards import (
    MANIFEST,
    count_rows,
    write_json,
)
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.dedup.checks import DEDUPLICATED_DOCUMENTS_CHECKS
from corpus_platform.defs.dedup.review import histogram_markdown, largest_clusters_markdown
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import (
    DedupParams,
    cluster_to_disk,
    signature_shard,
    write_dedup_shard,
)
from corpus_platform.kernels.splitting.neighbours import save_band_layout
from corpus_platform.store import band_cache
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.snapshots import current_snapshot

# what decides which row of a cluster is kept: published kept rows stay kept while these hold
KEEP_SETTINGS = {"seed": (), "num_shards": (), "dedup": ()}


@stage_asset(
    DEDUPLICATED_DOCUMENTS_CHECKS,
    deps=[FILTERED_DOCUMENTS],
    group_name="dedup",
    kinds={"parquet", "dvc"},
    description="Exact (hash of the normalized text, or dedup.columns for rows without text) "
    "and MinHash-LSH near-duplicate clusters verified by exact Jaccard; per cluster the row "
    "with the highest quality score is kept. The membership table is under clusters/, the "
    "similar pairs the split uses under pairs/. After an append, rows the published snapshot "
    "kept stay kept, in their published clusters.",
)
def deduplicated_documents(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    upstream, shards = corpus.stage_dir(FILTERED_DOCUMENTS), range(config.num_shards)
    rows = count_rows(upstream, config.num_shards)
    params = DedupParams.from_config(config).for_rows(rows, config.engine.memory_mb)
    engine = corpus.engine(config)
    sticky = corpus.published_alike(DEDUPLICATED_DOCUMENTS, config, KEEP_SETTINGS)
    with (
        corpus.scratch(DEDUPLICATED_DOCUMENTS) as scratch,
        candidate_folder(corpus.stage_dir(DEDUPLICATED_DOCUMENTS)) as staging,
    ):
        engine.map_shards(
            partial(signature_shard, upstream=upstream, scratch=scratch, params=params), shards
        )
        result = cluster_to_disk(
            scratch,
            config.num_shards,
            params,
            staging / "clusters",
            staging / SIMILAR_PAIRS,
            config.engine.memory_mb,
            engine,
            sticky,
        )
        save_band_layout(scratch / "bands", params, config.num_shards)
        band_cache.stash(corpus.root_path, scratch)
        write = partial(write_dedup_shard, upstream=upstream, staging=staging, mode=params.mode)
        rows = engine.map_shards(write, shards)
        sizes = result.summary.sizes
        counts = {
            "rows_in": sum(r[0] for r in rows),
            "rows": sum(r[1] for r in rows),
            "duplicate_clusters": sum(sizes.values()),
            "rows_in_clusters": result.summary.rows_in_clusters,
            "candidate_pairs": result.candidates,
            "similar_pairs": result.similar,
            "cluster_size_histogram": {str(k): v for k, v in sizes.items()},
            "lsh_bands_rows": list(params.bands),
            "representative_rule": params.keep,
        }
        write_json(counts, staging / MANIFEST)
    counts |= anchored_to(corpus, sticky)
    extra = {
        "cluster_sizes": dg.MetadataValue.md(histogram_markdown(sizes)),
        "largest_clusters": dg.MetadataValue.md(
            largest_clusters_markdown(result.summary.largest, upstream, config.num_shards)
        ),
    }
    try:
        yield from publish(corpus, config, DEDUPLICATED_DOCUMENTS_CHECKS, counts, extra)
    except BaseException:
        band_cache.discard_pending(corpus.root_path)
        raise
    published = current_snapshot(corpus.root_path, corpus.stage_dir(DEDUPLICATED_DOCUMENTS))
    band_cache.keep(corpus.root_path, str(published))
