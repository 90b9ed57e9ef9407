"""training_mix: rows drawn from the normalized train split by per-source proportions."""

from collections import Counter
from functools import partial

import dagster as dg

from corpus_platform.defs.names import MIX_PROPORTIONS, NORMALIZED_SPLITS, TRAINING_MIX
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.mix import mix_shard, plan_rates, source_counts
from corpus_platform.store.datasets import MANIFEST, iter_shards, staged_folder, write_json

TRAIN = "train"


@dg.asset(
    name=TRAINING_MIX,
    deps=[NORMALIZED_SPLITS],
    group_name="mix",
    kinds={"parquet", "dvc"},
    description="The training set: normalized train rows drawn per source by the configured "
    "proportions; each row carries how many times it was drawn (times_drawn).",
)
def training_mix(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    train = corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN
    available = source_counts(train, config.num_shards)
    rates = plan_rates(available, config.mix.proportions, config.mix.total_rows)
    with staged_folder(corpus.stage_dir(TRAINING_MIX)) as staging:
        task = partial(mix_shard, folder=train, staging=staging, rates=rates, seed=config.seed)
        drawn: Counter[str] = Counter()
        for per_source in corpus.engine(config).map_shards(task, range(config.num_shards)):
            drawn.update(per_source)
        total = sum(drawn.values())
        counts = {
            "rows": total,
            "available_per_source": available,
            "rates": {s: round(r, 6) for s, r in rates.items()},
            "drawn_per_source": dict(sorted(drawn.items())),
        }
        write_json(counts, staging / MANIFEST)
    return publish(corpus, config, TRAINING_MIX, [NORMALIZED_SPLITS], counts)


@dg.asset_check(asset=TRAINING_MIX, name=MIX_PROPORTIONS, blocking=True)
def mix_proportions_within_tolerance(corpus: CorpusProject) -> dg.AssetCheckResult:
    """Each source's share of draws is within ``mix.tolerance`` of its target (the configured
    proportion, or its share of train when no proportions are configured)."""
    config = corpus.load()
    drawn: Counter[str] = Counter()
    for _, table in iter_shards(
        corpus.stage_dir(TRAINING_MIX), config.num_shards, ["source", "times_drawn"]
    ):
        for source, n in zip(
            table.column("source").to_pylist(), table.column("times_drawn").to_pylist(), strict=True
        ):
            drawn[source] += n
    target = dict(config.mix.proportions)
    if not target:
        available = source_counts(corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN, config.num_shards)
        target = {s: n / (sum(available.values()) or 1) for s, n in available.items()}
    total = sum(drawn.values()) or 1
    deviation = {s: abs(drawn.get(s, 0) / total - p) for s, p in target.items()}
    worst = max(deviation.values(), default=0.0)
    return dg.AssetCheckResult(
        passed=sum(drawn.values()) > 0 and worst <= config.mix.tolerance,
        metadata={
            "verdict": f"largest deviation from target proportions {worst:.4f}, "
            f"tolerance {config.mix.tolerance}",
            "achieved": {s: round(drawn.get(s, 0) / total, 4) for s in sorted(target)},
            "target": {s: round(p, 4) for s, p in sorted(target.items())},
        },
    )
