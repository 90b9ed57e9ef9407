"""Blocking checks of training_mix, run on the candidate before it is published."""

from collections import Counter
from pathlib import Path

import dagster as dg

from corpus_platform.base.names import (
    MIX_PROPORTIONS,
    NO_BENCHMARK_OVERLAP,
    NORMALIZED_SPLITS,
    TRAIN,
    TRAINING_MIX,
)
from corpus_platform.base.shards import iter_shards
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.decontam import EvalNgrams, load_eval_ngrams, overlap_report
from corpus_platform.kernels.mix import source_counts


def eval_ngrams(corpus: CorpusProject, config: CorpusConfig) -> EvalNgrams:
    """The hashed n-grams of every configured evaluation set."""
    settings = config.decontamination
    return load_eval_ngrams(
        corpus.root_path, settings.eval_sets, settings.text_column, settings.ngram
    )


@corpus_check(asset=TRAINING_MIX, name=MIX_PROPORTIONS)
def mix_proportions_within_tolerance(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """Each source's share of draws is within ``mix.tolerance`` of its target (the configured
    proportion, or its share of train when no proportions are configured)."""
    config = corpus.load()
    drawn: Counter[str] = Counter()
    for _, table in iter_shards(candidate, config.num_shards, ["source", "times_drawn"]):
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
def no_benchmark_ngram_overlap(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """No training row shares a word n-gram with any configured evaluation set."""
    config = corpus.load()
    settings = config.decontamination
    if not settings.eval_sets:
        return dg.AssetCheckResult(
            passed=True, metadata={"verdict": "no evaluation sets configured"}
        )
    report = overlap_report(
        candidate,
        config.num_shards,
        eval_ngrams(corpus, config),
        settings.ngram,
        corpus.engine(config),
    )
    return dg.AssetCheckResult(
        passed=not report.contaminated,
        metadata={
            "verdict": f"training rows sharing a {settings.ngram}-gram with an evaluation set: "
            f"{report.contaminated} of {report.rows}",
            "hits_per_eval_set": report.hits,
            "offenders": list(report.examples),
        },
    )
