"""training_mix: decontaminated train rows drawn by per-source proportions."""

from collections import Counter
from functools import partial

import dagster as dg

from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.names import (
    MIX_PROPORTIONS,
    NO_BENCHMARK_OVERLAP,
    NORMALIZED_SPLITS,
    TRAINING_MIX,
)
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.decontam import EvalNgrams, contaminating_sets, load_eval_ngrams
from corpus_platform.kernels.mix import decontaminate_shard, mix_shard, plan_rates, source_counts
from corpus_platform.store.datasets import MANIFEST, iter_shards, staged_folder, write_json
from corpus_platform.store.registry import eval_input

TRAIN = "train"


def eval_ngrams(corpus: CorpusProject, config: CorpusConfig) -> EvalNgrams:
    """The hashed n-grams of every configured evaluation set."""
    settings = config.decontamination
    return load_eval_ngrams(
        corpus.root_path, settings.eval_sets, settings.text_column, settings.ngram
    )


@dg.asset(
    name=TRAINING_MIX,
    deps=[NORMALIZED_SPLITS],
    group_name="mix",
    kinds={"parquet", "dvc"},
    description="The training set: normalized train rows, minus rows sharing a word n-gram with an "
    "evaluation set (decontamination.action: drop; kept aside under contaminated/), drawn per "
    "source by the configured proportions; each row carries times_drawn.",
)
def training_mix(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    train, engine, shards = (
        corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN,
        corpus.engine(config),
        range(config.num_shards),
    )
    settings = config.decontamination
    with (
        corpus.scratch(TRAINING_MIX) as scratch,
        staged_folder(corpus.stage_dir(TRAINING_MIX)) as staging,
    ):
        clean = partial(
            decontaminate_shard,
            folder=train,
            clean=scratch,
            removed=staging / "contaminated",
            eval_ngrams=eval_ngrams(corpus, config),
            ngram=settings.ngram,
            drop=settings.action == "drop",
        )
        available, contaminated = Counter(), Counter()
        for per_source, per_set in engine.map_shards(clean, shards):
            available.update(per_source)
            contaminated.update(per_set)
        rates = plan_rates(
            dict(sorted(available.items())), config.mix.proportions, config.mix.total_rows
        )
        drawn: Counter[str] = Counter()
        for per_source in engine.map_shards(
            partial(mix_shard, folder=scratch, staging=staging, rates=rates, seed=config.seed),
            shards,
        ):
            drawn.update(per_source)
        counts = {
            "rows": sum(drawn.values()),
            "available_per_source": dict(sorted(available.items())),
            "rates": {s: round(r, 6) for s, r in rates.items()},
            "drawn_per_source": dict(sorted(drawn.items())),
            "contaminated_rows_per_eval_set": dict(sorted(contaminated.items())),
            "decontamination_action": settings.action,
        }
        write_json(counts, staging / MANIFEST)
    inputs = {
        eval_input(name): corpus.root_path / path for name, path in settings.eval_sets.items()
    }
    return publish(corpus, config, TRAINING_MIX, [NORMALIZED_SPLITS], counts, inputs=inputs)


@corpus_check(asset=TRAINING_MIX, name=MIX_PROPORTIONS)
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


@corpus_check(asset=TRAINING_MIX, name=NO_BENCHMARK_OVERLAP)
def no_benchmark_ngram_overlap(corpus: CorpusProject) -> dg.AssetCheckResult:
    """No training row shares a word n-gram with any configured evaluation set."""
    config = corpus.load()
    settings = config.decontamination
    if not settings.eval_sets:
        return dg.AssetCheckResult(
            passed=True, metadata={"verdict": "no evaluation sets configured"}
        )
    ngrams = eval_ngrams(corpus, config)
    hits: Counter[str] = Counter()
    examples: list[str] = []
    rows = dirty = 0
    for _, table in iter_shards(
        corpus.stage_dir(TRAINING_MIX), config.num_shards, ["doc_id", "text"]
    ):
        for doc_id, text in zip(
            table.column("doc_id").to_pylist(), table.column("text").to_pylist(), strict=True
        ):
            rows += 1
            found = contaminating_sets(text, ngrams, settings.ngram)
            hits.update(found)
            dirty += bool(found)
            if found and len(examples) < 10:
                examples.append(f"{doc_id}: {', '.join(found)}")
    return dg.AssetCheckResult(
        passed=not hits,
        metadata={
            "verdict": f"training rows sharing a {settings.ngram}-gram with an evaluation set: "
            f"{dirty} of {rows}",
            "hits_per_eval_set": {name: hits.get(name, 0) for name in sorted(settings.eval_sets)},
            "offenders": examples,
        },
    )
