"""deduplicated_documents: one row per exact / near-duplicate cluster, each with its cluster id."""

from functools import partial

import dagster as dg

from corpus_platform.defs.names import DEDUPLICATED_DOCUMENTS, FILTERED_DOCUMENTS
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import (
    DedupParams,
    build_clusters,
    candidate_pairs,
    cluster_sizes,
    entities_of,
    exact_duplicate_groups,
    membership_table,
    pairs_table,
    score_pairs,
    signature_shard,
    write_dedup_shard,
)
from corpus_platform.store.datasets import (
    MANIFEST,
    staged_folder,
    write_json,
    write_parquet,
    write_sharded,
)


@dg.asset(
    name=DEDUPLICATED_DOCUMENTS,
    deps=[FILTERED_DOCUMENTS],
    group_name="dedup",
    kinds={"parquet", "dvc"},
    description="Exact (normalized content hash, or dedup.columns for rows without text) and "
    "MinHash-LSH near-duplicate clusters; the "
    "cluster membership table under clusters/ and the similar pairs the split uses under pairs/.",
)
def deduplicated_documents(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    params = DedupParams.from_config(config)
    upstream, shards = corpus.stage_dir(FILTERED_DOCUMENTS), range(config.num_shards)
    engine = corpus.engine(config)
    with corpus.scratch(DEDUPLICATED_DOCUMENTS) as scratch:
        engine.map_shards(
            partial(signature_shard, upstream=upstream, scratch=scratch, params=params), shards
        )
        candidates = candidate_pairs(scratch, config.num_shards)
        scored = score_pairs(candidates, upstream, config.num_shards, params.shingle_size)
        clusters = build_clusters(
            exact_duplicate_groups(scratch, config.num_shards), scored, params.threshold
        )
        entity_of = entities_of(set(clusters.cluster_of), scratch, config.num_shards)
    with staged_folder(corpus.stage_dir(DEDUPLICATED_DOCUMENTS)) as staging:
        write = partial(
            write_dedup_shard,
            upstream=upstream,
            staging=staging,
            cluster_of=clusters.cluster_of,
            mode=params.mode,
        )
        rows = engine.map_shards(write, shards)
        membership = membership_table(clusters, params.mode, entity_of)
        write_sharded(membership, staging / "clusters", config.num_shards)
        write_parquet(
            pairs_table(scored, params.pair_threshold), staging / "pairs" / "similar_pairs.parquet"
        )
        sizes = cluster_sizes(clusters.cluster_of)
        counts = {
            "rows_in": sum(r[0] for r in rows),
            "rows": sum(r[1] for r in rows),
            "duplicate_clusters": sum(sizes.values()),
            "rows_in_clusters": len(clusters.cluster_of),
            "candidate_pairs": len(scored),
            "similar_pairs": sum(p.similarity >= params.pair_threshold for p in scored),
            "cluster_size_histogram": {str(k): v for k, v in sizes.items()},
            "lsh_bands_rows": list(params.bands),
        }
        write_json(counts, staging / MANIFEST)
    return publish(corpus, config, DEDUPLICATED_DOCUMENTS, [FILTERED_DOCUMENTS], counts)
