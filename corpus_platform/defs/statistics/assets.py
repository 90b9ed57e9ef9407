"""fitted_statistics (train split only) and normalized_splits (every split, frozen statistics)."""

from functools import partial

import dagster as dg
import numpy as np

from corpus_platform.config import SPLITS
from corpus_platform.defs.names import FITTED_STATISTICS, NORMALIZED_SPLITS, SPLIT_DOCUMENTS
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.hashing import stable_hex
from corpus_platform.kernels.stats import (
    histogram_edges,
    merge_partials,
    normalize_shard,
    shard_histograms,
    shard_partial,
    statistics_document,
)
from corpus_platform.store.datasets import MANIFEST, read_json, staged_folder, write_json

STATISTICS_FILE = "statistics.json"
TRAIN = "train"


@dg.asset(
    name=FITTED_STATISTICS,
    deps=[SPLIT_DOCUMENTS],
    group_name="statistics",
    kinds={"json", "dvc"},
    description="count, mean, std, min and max of every numeric feature, fitted on the train "
    "split only and merged from per-shard partials in shard order.",
)
def fitted_statistics(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    train, engine, shards = (
        corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN,
        corpus.engine(config),
        range(config.num_shards),
    )
    features, with_text = config.feature_columns, "text" in config.input.columns
    partials = engine.map_shards(
        partial(shard_partial, folder=train, features=features, with_text=with_text), shards
    )
    merged = merge_partials(partials, features)
    edges = {
        name: histogram_edges(merged[name], config.statistics.histogram_bins) for name in features
    }
    counts_per_shard = engine.map_shards(
        partial(shard_histograms, folder=train, edges=edges), shards
    )
    histograms = {
        name: (
            edges[name],
            np.sum([c[name] for c in counts_per_shard], axis=0, dtype=np.int64).tolist()
            if edges[name]
            else [],
        )
        for name in features
    }
    document = statistics_document(
        partials, features, TRAIN, histograms, config.statistics.top_k_tokens, with_text
    )
    with staged_folder(corpus.stage_dir(FITTED_STATISTICS)) as staging:
        write_json(document, staging / STATISTICS_FILE)
    counts = {"rows": document["fitted_on"]["rows"], "fitted_on": document["fitted_on"]}
    summary = {
        name: {k: v for k, v in stats.items() if k != "histogram"}
        for name, stats in document["features"].items()
    }
    return publish(
        corpus, config, FITTED_STATISTICS, [SPLIT_DOCUMENTS], counts, {"statistics": summary}
    )


@dg.asset(
    name=NORMALIZED_SPLITS,
    deps=[FITTED_STATISTICS, SPLIT_DOCUMENTS],
    group_name="statistics",
    kinds={"parquet", "dvc"},
    description="Every split z-scored with the frozen train statistics; nothing is refitted.",
)
def normalized_splits(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    stats_path = corpus.stage_dir(FITTED_STATISTICS) / STATISTICS_FILE
    features = read_json(stats_path)["features"]
    applied = stable_hex(stats_path.read_text(encoding="utf-8"))
    rows: dict[str, int] = {}
    with staged_folder(corpus.stage_dir(NORMALIZED_SPLITS)) as staging:
        for name in SPLITS:
            task = partial(
                normalize_shard,
                folder=corpus.stage_dir(SPLIT_DOCUMENTS) / name,
                staging=staging / name,
                features=features,
            )
            rows[name] = sum(corpus.engine(config).map_shards(task, range(config.num_shards)))
        counts = {"rows": sum(rows.values()), "split_sizes": rows, "statistics_digest": applied}
        write_json(counts, staging / MANIFEST)
    return publish(corpus, config, NORMALIZED_SPLITS, [FITTED_STATISTICS, SPLIT_DOCUMENTS], counts)
