"""Blocking checks of training_mix, run on the candidate before it is published."""

from collections import Counter
from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.generations import TextSource
from corpus_platform.base.names import NORMALIZED_SPLITS, SPLIT_DOCUMENTS, TRAIN, TRAINING_MIX
from corpus_platform.base.shards import read_manifest
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.generations import appended_generation, mix_texts
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.engine import in_worker
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.mixing.decontam import EvalNgrams, load_eval_ngrams, read_eval_texts
from corpus_platform.kernels.mixing.mix import drawn_units, misdrawn_rows, source_units
from corpus_platform.kernels.mixing.overlap_audit import EvalWindows, overlap_report
from corpus_platform.kernels.mixing.share_audit import target_shares
from corpus_platform.kernels.mixing.tokens import (
    WHITESPACE,
    TokenCounter,
    TokenizerError,
    load_counter,
)


def eval_ngrams(corpus: CorpusProject, config: CorpusConfig) -> EvalNgrams:
    """The hashed n-grams of every configured evaluation set, under the project's one
    normalization (``dedup.normalization``), which the training texts then get too. Hashed by
    one engine task: the compiled word hasher loads in a worker, never in the Dagster process."""
    settings = config.decontamination
    load = partial(
        load_eval_ngrams,
        corpus.root_path,
        settings.eval_sets,
        settings.text_column,
        settings.ngram,
        DedupParams.from_config(config).normalization,
    )
    return in_worker(corpus.engine(config), load)


def eval_windows(corpus: CorpusProject, config: CorpusConfig) -> EvalWindows:
    """Every configured evaluation set's word windows, for the check's own count (no hashes:
    :mod:`corpus_platform.kernels.mixing.overlap_audit`)."""
    settings = config.decontamination
    return EvalWindows.of(
        read_eval_texts(corpus.root_path, settings.eval_sets, settings.text_column),
        settings.ngram,
        DedupParams.from_config(config).normalization,
    )


def tokenizer_file(corpus: CorpusProject, config: CorpusConfig) -> Path | None:
    """The tokenizer file of ``mix.unit: tokens`` (None for documents or whitespace words). It
    must lie inside the project: it is pinned with DVC as an input of the mix it shaped."""
    mix = config.mix
    if mix.unit != "tokens" or mix.tokenizer == WHITESPACE:
        return None
    path = corpus.root_path / mix.tokenizer
    if not path.resolve().is_relative_to(corpus.root_path):
        raise TokenizerError(
            f"mix.tokenizer: {path} lies outside the project folder {corpus.root_path}; it is "
            "pinned with DVC with the mix it shaped, so copy it into the project"
        )
    return path


def token_counter(corpus: CorpusProject, config: CorpusConfig) -> TokenCounter | None:
    """The configured token counter of ``mix.unit: tokens``; None when the unit is documents.

    Raises:
        TokenizerError: the tokenizer file is missing, invalid or outside the project.
    """
    if config.mix.unit != "tokens":
        return None
    tokenizer_file(corpus, config)
    return load_counter(config.mix.tokenizer, corpus.root_path)


def mix_proportions_within_tolerance(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Each source's share of the mix, in ``mix.unit``, is within ``mix.tolerance`` of its
    target (the configured proportion, else its share by ``mix.temperature``, after
    ``mix.max_epochs`` caps). In tokens, every draw weighs its row's tokens as this check recounts
    them from the text with ``mix.tokenizer``, and rows whose ``tokens`` column disagrees fail
    it. Targets come from train minus the rows decontamination dropped, counted here, by the
    check's own reading of the settings (not the stage's planner); a drawn source without a
    target deviates by its whole share."""
    config = corpus.load()
    counter = token_counter(corpus, config)
    engine, shards = corpus.engine(config), range(config.num_shards)
    available: Counter[str] = Counter()
    for part in engine.map_shards(
        partial(
            source_units,
            folder=corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN,
            counter=counter,
            texts=TextSource(corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN),
        ),
        shards,
    ):
        available.update(part)
    for part in engine.map_shards(
        partial(source_units, folder=candidate / "contaminated", counter=counter), shards
    ):
        available.subtract(part)
    mix = config.mix
    targets = target_shares(
        {s: n for s, n in sorted(available.items()) if n > 0},
        proportions=mix.proportions,
        total=mix.total,
        temperature=mix.temperature,
        max_epochs=mix.max_epochs,
    )
    drawn: Counter[str] = Counter()
    wrong = 0
    texts = mix_texts(corpus, candidate)  # the mix stores none
    for part, mismatched in engine.map_shards(
        partial(drawn_units, folder=candidate, counter=counter, texts=texts), shards
    ):
        drawn.update(part)
        wrong += mismatched
    total = sum(drawn.values())
    sources = sorted({*targets, *drawn})
    achieved = {s: drawn.get(s, 0) / (total or 1) for s in sources}
    worst = max((abs(achieved[s] - targets.get(s, 0.0)) for s in sources), default=0.0)
    verdict = (
        f"largest deviation from target shares ({mix.unit}) {worst:.4f}, tolerance {mix.tolerance}"
    )
    if counter is not None:
        verdict += f"; rows whose tokens column disagrees with a recount: {wrong}"
    metadata = {
        "verdict": verdict,
        "unit": mix.unit,
        "achieved": {s: round(share, 4) for s, share in achieved.items()},
        "target": {s: round(targets.get(s, 0.0), 4) for s in sources},
        "drawn": dict(sorted(drawn.items())),
    }
    within = total > 0 and worst <= mix.tolerance
    generation = appended_generation(candidate, corpus.stage_dir(TRAINING_MIX))
    if generation is None or wrong:
        return CheckOutcome.from_metadata(passed=within and wrong == 0, metadata=metadata)
    return appended_mix_outcome(corpus, candidate, generation, within, metadata, counter)


def appended_mix_outcome(
    corpus: CorpusProject,
    candidate: Path,
    generation: int,
    within: bool,
    metadata: dict,
    counter: TokenCounter | None,
) -> CheckOutcome:
    """An append's mix check: every row of the new generation drawn exactly at the mix epoch's
    rates (else it fails), the new generation's shares shown beside the whole mix's; a whole
    mix that the appended rows, drawn at the epoch's rates, moved out of tolerance warns (the
    rates are the epoch's promise; raising ``mix.epoch`` redraws at new ones)."""
    config = corpus.load()
    engine, shards = corpus.engine(config), range(config.num_shards)
    rates = read_manifest(candidate)["epoch_rates"]
    check = partial(misdrawn_rows, folder=candidate, rates=rates, seed=config.seed)
    found = engine.map_shards(partial(check, generations=(generation,)), shards)
    checked, wrong = sum(n for n, _, _ in found), sum(w for _, w, _ in found)
    new: Counter[str] = Counter()
    texts = mix_texts(corpus, candidate, (generation,))
    for part, _ in engine.map_shards(
        partial(
            drawn_units, folder=candidate, counter=counter, generations=(generation,), texts=texts
        ),
        shards,
    ):
        new.update(part)
    size = sum(new.values()) or 1
    metadata = {
        **metadata,
        "verdict": f"{metadata['verdict']}; generation {generation}: rows not drawn at the "
        f"epoch's rates: {wrong} of {checked}",
        "new_generation_achieved": {s: round(n / size, 4) for s, n in sorted(new.items())},
        "offenders": [e for _, _, examples in found for e in examples][:10],
    }
    if wrong:
        return CheckOutcome.from_metadata(passed=False, metadata=metadata)
    if within:
        return CheckOutcome.from_metadata(passed=True, metadata=metadata)
    verdict = (
        f"{metadata.pop('verdict')}: the appended rows, drawn at the epoch's rates, moved the "
        "mix out of tolerance; raise mix.epoch to redraw it at new rates"
    )
    return CheckOutcome.warned(verdict, details=metadata)


def no_benchmark_ngram_overlap(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No training row shares a word n-gram with any configured evaluation set, counted by
    comparing words rather than the mix's hashes (a count of its own)."""
    config = corpus.load()
    settings = config.decontamination
    if not settings.eval_sets:
        return CheckOutcome.not_applicable(
            "no evaluation sets configured (decontamination.eval_sets)"
        )
    generation = appended_generation(candidate, corpus.stage_dir(TRAINING_MIX))
    generations = None if generation is None else (generation,)
    report = overlap_report(
        candidate,
        config.num_shards,
        eval_windows(corpus, config),
        corpus.engine(config),
        generations,
        mix_texts(corpus, candidate, generations),  # the mix stores none
    )
    scope = "" if generation is None else f" of generation {generation} (an append)"
    return CheckOutcome.from_metadata(
        passed=not report.contaminated,
        metadata={
            "verdict": f"training rows{scope} sharing a {settings.ngram}-gram with an evaluation "
            f"set: {report.contaminated} of {report.rows}",
            "hits_per_eval_set": report.hits,
            "offenders": list(report.examples),
        },
    )


# The blocking checks of training_mix, in the order they run and are shown.
TRAINING_MIX_CHECKS = StageChecks(
    "training_mix",
    (
        mix_proportions_within_tolerance,
        no_benchmark_ngram_overlap,
    ),
)
