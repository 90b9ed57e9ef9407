"""split_documents: train / validation / test decided from stable keys, never from row order."""

from collections import Counter
from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.config import SPLITS, CorpusConfig
from corpus_platform.defs.names import DEDUPLICATED_DOCUMENTS, SPLIT_DOCUMENTS, SPLIT_STABILITY
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.asof import compute_entity_shard, spill_by_entity
from corpus_platform.kernels.engine import LocalEngine
from corpus_platform.kernels.leakage import split_moves
from corpus_platform.kernels.split import SplitPlan, entity_components, split_shard
from corpus_platform.kernels.temporal import quantile_cutoffs
from corpus_platform.store.datasets import (
    MANIFEST,
    read_all_shards,
    read_manifest,
    read_parquet,
    staged_folder,
    write_json,
)


def compute_asof(engine: LocalEngine, upstream: Path, scratch: Path, config: CorpusConfig) -> None:
    """Run the two shuffle passes of the as-of features into ``scratch``."""
    shards, n, features = range(config.num_shards), config.num_shards, config.asof_features
    engine.map_shards(
        partial(
            spill_by_entity, upstream=upstream, scratch=scratch, features=features, num_shards=n
        ),
        shards,
    )
    engine.map_shards(
        partial(compute_entity_shard, scratch=scratch, features=features, num_shards=n), shards
    )


def make_plan(upstream: Path, scratch: Path, config: CorpusConfig) -> SplitPlan:
    """Components (group modes), cutoffs (time modes) and as-of features for the split."""
    mode = config.split.mode
    components = {}
    if mode in ("group", "time_group"):
        pairs = read_parquet(upstream / "pairs" / "similar_pairs.parquet")
        components = entity_components(
            pairs, read_all_shards(upstream / "clusters", config.num_shards)
        )
    cutoffs = (
        quantile_cutoffs(upstream, config.num_shards, config.split.ratios, config.split.gap_days)
        if config.split.uses_time
        else None
    )
    return SplitPlan(
        mode, config.split.ratios, config.seed, components, cutoffs, config.asof_features, scratch
    )


def stability_check(previous: Path, staging: Path, config: CorpusConfig) -> dg.AssetCheckResult:
    """Against the previous snapshot: report all moves, fail on held-out rows moved into train."""
    if not (previous / MANIFEST).is_file():
        return dg.AssetCheckResult(
            check_name=SPLIT_STABILITY,
            passed=True,
            metadata={"verdict": "first snapshot: nothing to compare"},
        )
    shards = read_manifest(previous).get("num_shards", config.num_shards)
    report = split_moves(previous, staging, config.num_shards, shards)
    return dg.AssetCheckResult(
        check_name=SPLIT_STABILITY,
        passed=report.passed,
        metadata={"verdict": report.describe(), "moved_into_train": list(report.examples)},
    )


@dg.asset(
    name=SPLIT_DOCUMENTS,
    deps=[DEDUPLICATED_DOCUMENTS],
    group_name="split",
    kinds={"parquet", "dvc"},
    check_specs=[dg.AssetCheckSpec(SPLIT_STABILITY, asset=SPLIT_DOCUMENTS, blocking=True)],
    description="train/, validation/, test/ (and dropped/ with reasons). Rows sharing an entity, "
    "a duplicate cluster or a similar pair form one component; its seeded hash bucket (and, in "
    "time modes, the (timestamp, doc_id) windows) picks the split. As-of features are added here.",
)
def split_documents(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    upstream, engine = corpus.stage_dir(DEDUPLICATED_DOCUMENTS), corpus.engine(config)
    with (
        corpus.scratch(SPLIT_DOCUMENTS) as scratch,
        staged_folder(corpus.stage_dir(SPLIT_DOCUMENTS)) as staging,
    ):
        if config.asof_features:
            compute_asof(engine, upstream, scratch, config)
        plan = make_plan(upstream, scratch, config)
        totals: Counter[str] = Counter()
        for placed in engine.map_shards(
            partial(split_shard, upstream=upstream, staging=staging, plan=plan),
            range(config.num_shards),
        ):
            totals.update(placed)
        counts = {
            "rows": sum(totals[n] for n in SPLITS),
            "split_sizes": {n: totals.get(n, 0) for n in SPLITS},
            "dropped": {k: v for k, v in sorted(totals.items()) if k not in SPLITS},
            "mode": config.split.mode,
            "num_shards": config.num_shards,
            "cutoffs": plan.cutoffs.as_dict() if plan.cutoffs else None,
        }
        write_json(counts, staging / MANIFEST)
        stability = stability_check(corpus.stage_dir(SPLIT_DOCUMENTS), staging, config)
    extra = {"linked_components": len(set(plan.components.values()))}
    return publish(
        corpus, config, SPLIT_DOCUMENTS, [DEDUPLICATED_DOCUMENTS], counts, extra, [stability]
    )
