"""Names every layer shares (Dagster-free): stages, checks, splits and side-table paths."""

RAW_DOCUMENTS = "raw_documents"
FILTERED_DOCUMENTS = "filtered_documents"
DEDUPLICATED_DOCUMENTS = "deduplicated_documents"
SPLIT_DOCUMENTS = "split_documents"
FITTED_STATISTICS = "fitted_statistics"
NORMALIZED_SPLITS = "normalized_splits"
TRAINING_MIX = "training_mix"
TRAINING_SHARDS = "training_shards"

STAGES = (
    RAW_DOCUMENTS,
    FILTERED_DOCUMENTS,
    DEDUPLICATED_DOCUMENTS,
    SPLIT_DOCUMENTS,
    FITTED_STATISTICS,
    NORMALIZED_SPLITS,
    TRAINING_MIX,
    TRAINING_SHARDS,
)

TRAIN = "train"  # the split statistics are fitted on and the mix draws from
VALIDATION = "validation"
TEST = "test"
SPLITS = (TRAIN, VALIDATION, TEST)
HELD_OUT = (VALIDATION, TEST)
# side tables inside stage folders
SIMILAR_PAIRS = "pairs/similar_pairs.parquet"  # deduplicated_documents: pairs the split links
STATISTICS_FILE = "statistics.json"  # inside fitted_statistics/
# inside split_documents/ after a split.epoch change: held-out rows that moved into train
EPOCH_MOVES = "epoch_moves/moved_into_train.parquet"
# inside training_shards/: the shard list the loader reads (name, format, samples, bytes, md5)
SHARDS_MANIFEST = "manifest.json"
WEBDATASET = "webdataset"  # shard formats named in it
PARQUET = "parquet"

IDS_UNIQUE = "ids_unique"
EXPECTATIONS = "great_expectations_suite"
REMOVALS_HAVE_REASONS = "every_removal_has_reason"
NO_KEPT_NEAR_DUPLICATES = "no_kept_near_duplicate_pair"
NO_ENTITY_IN_TWO_SPLITS = "no_entity_in_two_splits"
NO_CLUSTER_IN_TWO_SPLITS = "no_cluster_in_two_splits"
SPLIT_RATIOS = "split_ratios_within_tolerance"
FITTED_ON_TRAIN = "fitted_on_exactly_train"
MIX_PROPORTIONS = "mix_proportions_within_tolerance"
SPLIT_STABILITY = "no_held_out_row_moved_into_train"
TEMPORAL_ORDER = "temporal_order"
ASOF_CAUSALITY = "asof_features_causal"
NO_NEAR_DUPLICATE_ACROSS_SPLITS = "no_train_neighbour_of_held_out_rows"
NORMALIZED_WITH_FROZEN_STATISTICS = "normalized_with_frozen_train_statistics"
NO_BENCHMARK_OVERLAP = "no_benchmark_ngram_overlap"
SHARDS_MATCH_MANIFEST = "shards_match_manifest"
EVERY_DRAW_SHARDED_ONCE = "every_draw_sharded_once"

# The blocking checks of each stage, in the order they run on its candidate (write-audit-publish).
STAGE_CHECKS: dict[str, tuple[str, ...]] = {
    RAW_DOCUMENTS: (IDS_UNIQUE, EXPECTATIONS),
    FILTERED_DOCUMENTS: (REMOVALS_HAVE_REASONS,),
    DEDUPLICATED_DOCUMENTS: (NO_KEPT_NEAR_DUPLICATES,),
    SPLIT_DOCUMENTS: (
        SPLIT_STABILITY,
        NO_ENTITY_IN_TWO_SPLITS,
        NO_CLUSTER_IN_TWO_SPLITS,
        NO_NEAR_DUPLICATE_ACROSS_SPLITS,
        SPLIT_RATIOS,
        TEMPORAL_ORDER,
        ASOF_CAUSALITY,
    ),
    FITTED_STATISTICS: (FITTED_ON_TRAIN,),
    NORMALIZED_SPLITS: (NORMALIZED_WITH_FROZEN_STATISTICS,),
    TRAINING_MIX: (MIX_PROPORTIONS, NO_BENCHMARK_OVERLAP),
    TRAINING_SHARDS: (SHARDS_MATCH_MANIFEST, EVERY_DRAW_SHARDED_ONCE),
}
