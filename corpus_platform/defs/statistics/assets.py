"""fitted_statistics (train split only) and normalized_splits (every split, frozen statistics)."""

from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np

from corpus_platform.base.generations import link_published
from corpus_platform.base.hashing import stable_hex
from corpus_platform.base.names import (
    FITTED_STATISTICS,
    NORMALIZED_SPLITS,
    SPLIT_DOCUMENTS,
    SPLITS,
    STATISTICS_FILE,
    TRAIN,
)
from corpus_platform.base.shards import read_json, read_manifest, write_json
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.generations import (
    STAGE_CODE,
    build_plan,
    upstream_generations,
)
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.statistics.checks import (
    FITTED_STATISTICS_CHECKS,
    NORMALIZED_SPLITS_CHECKS,
)
from corpus_platform.kernels.statistics.epochs import (
    FITTED_IDS,
    changed_fitted_rows,
    write_fitted_ids,
)
from corpus_platform.kernels.statistics.fit import (
    histogram_edges,
    merge_partials,
    normalize_shard,
    shard_histograms,
    shard_partial,
    statistics_document,
)
from corpus_platform.kernels.statistics.topk import top_counts
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version


@stage_asset(
    FITTED_STATISTICS_CHECKS,
    deps=[SPLIT_DOCUMENTS],
    group_name="statistics",
    kinds={"json", "dvc"},
    description="count, mean, std, min and max of every numeric feature, fitted on the train "
    "split only and merged from per-shard partials in shard order, with the fit's doc ids "
    "(fitted_on/). The fit is kept while statistics.epoch and its settings stay: rows appended "
    "later are normalized with it, and a drift check compares them with it.",
)
def fitted_statistics(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    kept, why = kept_fit(corpus, config)
    if kept is not None:
        with candidate_folder(corpus.stage_dir(FITTED_STATISTICS)) as staging:
            link_published(kept, staging, skip=())  # the published files, unchanged
        document = read_json(staging / STATISTICS_FILE)
    else:
        document = fit(corpus, config)
    counts = {
        "rows": document["fitted_on"]["rows"],
        "fitted_on": document["fitted_on"],
        "epoch": config.statistics.epoch,
        "fit": "kept from the published snapshot" if kept else f"fitted on the train split ({why})",
        **anchored_to(corpus, kept),
    }
    summary = {
        name: {k: v for k, v in stats.items() if k != "histogram"}
        for name, stats in document["features"].items()
    }
    yield from publish(corpus, config, FITTED_STATISTICS_CHECKS, counts, {"statistics": summary})


# what shapes a fit: it is kept while these settings (and statistics.epoch) stay
FIT_SETTINGS = {
    "seed": (),
    "num_shards": (),
    "input": (),
    "asof_features": (),
    "split": ("tolerance", "recall_sample"),
    "statistics": ("drift_warn", "drift_block"),
}


def kept_fit(corpus: CorpusProject, config: CorpusConfig) -> tuple[Path | None, str]:
    """The published fit to keep, or None and why not. A fit is kept when it was made with the
    same settings and ``statistics.epoch``, and every row it was fitted on is still a train row
    with the values it saw (a split appended to keeps every published row and its values)."""
    published = corpus.published_alike(FITTED_STATISTICS, config, FIT_SETTINGS)
    if published is None or not (published / FITTED_IDS).is_dir():
        return None, "no published fit with these settings and statistics.epoch"
    changed = corpus.engine(config).map_shards(
        partial(
            changed_fitted_rows,
            train=corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN,
            fitted=published / FITTED_IDS,
            features=config.feature_columns,
        ),
        range(config.num_shards),
    )
    if sum(changed):
        return None, f"{sum(changed)} fitted rows changed value or left train since the fit"
    return published, ""


def fit(corpus: CorpusProject, config: CorpusConfig) -> dict:
    """Fit the statistics on the current train split into the stage's candidate folder, with
    the fit's doc ids (``fitted_on/``); return the statistics document."""
    train, engine, shards = (
        corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN,
        corpus.engine(config),
        range(config.num_shards),
    )
    features, with_text = config.feature_columns, "text" in config.input.columns
    with corpus.scratch(FITTED_STATISTICS) as scratch:
        partials = engine.map_shards(
            partial(
                shard_partial,
                folder=train,
                features=features,
                with_text=with_text,
                counts_dir=scratch / "document-frequencies",
            ),
            shards,
        )
        top_k, memory = config.statistics.top_k_tokens, config.engine.memory_mb
        top = (
            top_counts(scratch / "document-frequencies", top_k, (), engine, memory)[0]
            if with_text
            else None
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
    document = statistics_document(partials, features, TRAIN, histograms, top_k, with_text, top)
    with candidate_folder(corpus.stage_dir(FITTED_STATISTICS)) as staging:
        write_json(document, staging / STATISTICS_FILE)
        engine.map_shards(
            partial(write_fitted_ids, train=train, out=staging / FITTED_IDS, features=features),
            shards,
        )
    return document


@stage_asset(
    NORMALIZED_SPLITS_CHECKS,
    deps=[FITTED_STATISTICS, SPLIT_DOCUMENTS],
    group_name="statistics",
    kinds={"parquet", "dvc"},
    description="Every split z-scored with the frozen train statistics; nothing is refitted. "
    "While the statistics stay, an append normalizes only the split's new generation and keeps "
    "every published file.",
)
def normalized_splits(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    stats_path = corpus.stage_dir(FITTED_STATISTICS) / STATISTICS_FILE
    features = read_json(stats_path)["features"]
    applied = stable_hex(stats_path.read_text(encoding="utf-8"))
    split = corpus.stage_dir(SPLIT_DOCUMENTS)
    plan = build_plan(
        corpus, NORMALIZED_SPLITS, config, {"num_shards": ()}, "statistics",
        upstream_generations(split), {"statistics_digest": applied},
    )  # fmt: skip
    rows: Counter[str] = Counter()
    with candidate_folder(corpus.stage_dir(NORMALIZED_SPLITS)) as staging:
        if plan.published is not None:
            link_published(plan.published, staging)
            rows.update(read_manifest(plan.published)["split_sizes"])
        generations = tuple(int(g) for g in plan.new) if plan.appends else None
        for name in SPLITS if plan.new else ():
            task = partial(
                normalize_shard, folder=split / name, staging=staging / name, features=features
            )
            task = partial(task, generations=generations, generation=plan.generation)
            rows[name] += sum(corpus.engine(config).map_shards(task, range(config.num_shards)))
        sizes = {name: rows[name] for name in SPLITS}
        counts = {"rows": sum(sizes.values()), "split_sizes": sizes, "statistics_digest": applied}
        plan.write_manifest(staging, counts, counts["rows"])
    counts |= plan.as_counts() | {STAGE_CODE: stage_code_version("statistics")}
    counts |= anchored_to(corpus, plan.published)
    yield from publish(corpus, config, NORMALIZED_SPLITS_CHECKS, counts)
