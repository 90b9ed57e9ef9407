"""Names every layer shares (Dagster-free): stages, checks, splits and side-table paths."""

from urllib.parse import quote

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
BATCH_DIGESTS = "batch_digests"  # filtered_documents' manifest: raw batch -> digest of its files
WEBDATASET = "webdataset"  # shard formats named in it
PARQUET = "parquet"


def batch_key(raw_file: str) -> str:
    """The file-name-safe key of a raw batch: its path relative to the raw folder, percent-quoted
    (``web/crawl-0.jsonl`` -> ``web%2Fcrawl-0.jsonl``), so distinct files never share a key and
    the key reads back as the file (:func:`urllib.parse.unquote`)."""
    return quote(raw_file, safe="")
