"""training_mix: decontaminated train rows drawn by per-source proportions."""

from collections import Counter
from functools import partial

import dagster as dg

from corpus_platform.base.names import (
    NORMALIZED_SPLITS,
    TRAIN,
    TRAINING_MIX,
)
from corpus_platform.base.shards import MANIFEST, write_json
from corpus_platform.defs.checks import check_specs
from corpus_platform.defs.mixing.checks import eval_ngrams  # also registers the checks
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.mix import decontaminate_shard, mix_shard, plan_rates
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.registry import eval_input


@dg.asset(
    name=TRAINING_MIX,
    check_specs=check_specs(TRAINING_MIX),
    deps=[NORMALIZED_SPLITS],
    group_name="mix",
    kinds={"parquet", "dvc"},
    description="The training set: normalized train rows, minus rows sharing a word n-gram with an "
    "evaluation set (decontamination.action: drop; kept aside under contaminated/), drawn per "
    "source by the configured proportions; each row carries times_drawn.",
)
def training_mix(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    train, engine, shards = (
        corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN,
        corpus.engine(config),
        range(config.num_shards),
    )
    settings = config.decontamination
    with (
        corpus.scratch(TRAINING_MIX) as scratch,
        candidate_folder(corpus.stage_dir(TRAINING_MIX)) as staging,
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
    yield from publish(corpus, config, TRAINING_MIX, counts, inputs=inputs)
