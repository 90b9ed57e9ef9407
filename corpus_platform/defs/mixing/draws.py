"""training_mix's draws: the whole mix from scratch, or an append's generation at the epoch's
rates (:mod:`corpus_platform.kernels.mixing.mix`)."""

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from corpus_platform.base.files import file_md5
from corpus_platform.base.generations import TextSource, link_published
from corpus_platform.base.hashing import fingerprint
from corpus_platform.base.names import NORMALIZED_SPLITS, SPLIT_DOCUMENTS, TRAIN
from corpus_platform.base.shards import read_manifest
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.generations import GENERATIONS, BuildPlan
from corpus_platform.defs.mixing.checks import eval_ngrams
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.mixing.mix import decontaminate_shard, draw_shard
from corpus_platform.kernels.mixing.plan import MixError, MixPlan, plan_mix
from corpus_platform.kernels.mixing.tokens import TokenCounter

EPOCH_RATES = "epoch_rates"  # manifest: the exact per-source rates of the mix epoch
NEWEST_DRAWN = "new_generation_drawn_per_source"  # manifest: the newest generation's draws


def plan_of(config: CorpusConfig, available: dict[str, int]) -> MixPlan:
    """The mix plan of ``config`` for ``available`` units per source."""
    mix = config.mix
    return plan_mix(
        available,
        unit=mix.unit,
        proportions=mix.proportions,
        total=mix.total,
        temperature=mix.temperature,
        max_epochs=mix.max_epochs,
    )


@dataclass
class Drawn:
    """What one build drew: per source, units available and drawn (documents, and tokens with
    ``mix.unit: tokens``), contaminated rows per evaluation set."""

    available: Counter[str] = field(default_factory=Counter)
    contaminated: Counter[str] = field(default_factory=Counter)
    available_tokens: Counter[str] = field(default_factory=Counter)
    drawn: Counter[str] = field(default_factory=Counter)
    drawn_tokens: Counter[str] = field(default_factory=Counter)


def eval_digest(corpus: CorpusProject, config: CorpusConfig) -> str:
    """A digest of the evaluation sets' bytes: an append decontaminates only its new rows, so
    it needs the sets the published rows were decontaminated against."""
    sets = sorted(config.decontamination.eval_sets.items())
    return fingerprint(f"{name}\0{file_md5(corpus.root_path / path)}" for name, path in sets)


def train_texts(corpus: CorpusProject, generations: tuple[int, ...] | None) -> TextSource:
    """Where the texts of normalized_splits' train rows are (it stores none): split_documents'
    train, its generations that ``generations`` of normalized_splits were made from (every one
    for None), in order."""
    if generations is None:
        return TextSource(corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN)
    wanted = set(generations)
    entries = read_manifest(corpus.stage_dir(NORMALIZED_SPLITS)).get(GENERATIONS) or []
    taken = {int(u) for e in entries if int(e["generation"]) in wanted for u in e["upstream"]}
    return TextSource(corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN, tuple(sorted(taken)))


def draw(
    corpus: CorpusProject,
    config: CorpusConfig,
    scratch: Path,
    staging: Path,
    counter: TokenCounter | None,
    build: BuildPlan,
    rates: dict[str, float] | None,
) -> tuple[Drawn, dict[str, float]]:
    """Decontaminate the train rows of the build's new generations (every train row from
    scratch) and draw them, at ``rates`` (an append: the epoch's) or at the rates planned over
    them; return the counts and the rates drawn at."""
    settings, engine = config.decontamination, corpus.engine(config)
    shards = range(config.num_shards)
    generations = tuple(int(g) for g in build.new) if build.appends else None
    train = corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN
    clean = partial(
        decontaminate_shard,
        folder=train,
        clean=scratch,
        removed=staging / "contaminated",
        eval_ngrams=eval_ngrams(corpus, config),
        ngram=settings.ngram,
        drop=settings.action == "drop",
        counter=counter,
    )
    texts = train_texts(corpus, generations)
    clean = partial(clean, generations=generations, generation=build.generation, texts=texts)
    found = Drawn()
    for per_source, per_set, per_source_tokens in engine.map_shards(clean, shards):
        found.available.update(per_source)
        found.contaminated.update(per_set)
        found.available_tokens.update(per_source_tokens)
    if rates is None:
        units = found.available_tokens if counter is not None else found.available
        rates = plan_of(config, dict(sorted(units.items()))).rates
    task = partial(draw_shard, folder=train, staging=staging, rates=rates, seed=config.seed)
    task = partial(task, generation=build.generation, kept=scratch)
    for per_source, per_source_tokens in engine.map_shards(  # the drawn rows, without text
        partial(task, generations=generations), shards
    ):
        found.drawn.update(per_source)
        found.drawn_tokens.update(per_source_tokens)
    return found, rates


def appended(
    corpus: CorpusProject,
    config: CorpusConfig,
    scratch: Path,
    staging: Path,
    counter: TokenCounter | None,
    build: BuildPlan,
) -> tuple[Drawn, dict[str, int] | None, dict[str, float]]:
    """Take the published mix as it is and draw the new generations' rows at the epoch's
    rates; (the whole mix's counts, the newest generation's draws per source, the rates).
    With nothing new the newest generation is the published one (None when that recorded
    none: a mix built from scratch), so a rerun writes the manifest it published."""
    assert build.published is not None
    link_published(build.published, staging)
    previous = read_manifest(build.published)
    rates = {s: float(r) for s, r in previous[EPOCH_RATES].items()}
    new = Drawn()
    if build.new:
        new, _ = draw(corpus, config, scratch, staging, counter, build, rates)
    newest = (  # nothing new: the published newest generation stays the newest, as recorded
        dict(sorted(new.drawn.items())) if build.new else previous.get(NEWEST_DRAWN)
    )
    whole = Drawn(
        Counter(previous["available_per_source"]) + new.available,
        Counter(previous["contaminated_rows_per_eval_set"]) + new.contaminated,
        Counter(previous.get("available_tokens_per_source", {})) + new.available_tokens,
        Counter(previous["drawn_per_source"]) + new.drawn,
        Counter(previous.get("drawn_tokens_per_source", {})) + new.drawn_tokens,
    )
    return whole, newest, rates


def mix_plan(config: CorpusConfig, whole: Drawn, rates: dict[str, float], tokens: bool) -> MixPlan:
    """The plan a reviewer sees: the targets over every available unit, the rates drawn at (an
    append's: the epoch's)."""
    units = whole.available_tokens if tokens else whole.available
    available = {s: n for s, n in sorted(units.items()) if n > 0}
    try:
        return replace(plan_of(config, available), rates=rates)
    except MixError:  # a source the settings name has no rows yet: no target to show
        drawn = whole.drawn_tokens if tokens else whole.drawn
        return MixPlan(config.mix.unit, available, {}, rates, float(sum(drawn.values())))


def mix_counts(
    config: CorpusConfig,
    whole: Drawn,
    newest: dict[str, int] | None,
    plan: MixPlan,
    tokens: bool,
) -> dict[str, Any]:
    """The manifest's counts of the whole mix (and ``newest``, an append's newest generation's
    draws per source) drawn at the ``plan``'s rates."""
    rates = plan.rates
    counts: dict[str, Any] = {
        "rows": sum(whole.drawn.values()),
        "available_per_source": dict(sorted(whole.available.items())),
        "rates": {s: round(r, 6) for s, r in sorted(rates.items())},
        EPOCH_RATES: dict(sorted(rates.items())),
        "drawn_per_source": dict(sorted(whole.drawn.items())),
        "contaminated_rows_per_eval_set": dict(sorted(whole.contaminated.items())),
        "decontamination_action": config.decontamination.action,
        "epoch": config.mix.epoch,
    }
    if tokens:  # documents keep the manifest they always had
        counts |= {
            "unit": "tokens",
            "tokenizer": config.mix.tokenizer,
            "tokens": sum(whole.drawn_tokens.values()),
            "target_tokens": round(plan.total),
            "available_tokens_per_source": dict(sorted(whole.available_tokens.items())),
            "drawn_tokens_per_source": dict(sorted(whole.drawn_tokens.items())),
        }
    if newest is not None:
        counts[NEWEST_DRAWN] = newest
    return counts
