"""training_mix: decontaminated train rows drawn by per-source proportions."""

from collections import Counter
from functools import partial

from corpus_platform.base.names import (
    NORMALIZED_SPLITS,
    TRAIN,
    TRAINING_MIX,
)
from corpus_platform.base.shards import MANIFEST, write_json
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.mixing.checks import (  # also registers the checks
    TRAINING_MIX_CHECKS,
    eval_ngrams,
    plan_of,
    token_counter,
    tokenizer_file,
)
from corpus_platform.defs.mixing.review import mix_metadata
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.licences import licence_rollup
from corpus_platform.kernels.mixing.mix import decontaminate_shard, draw_shard
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.registry import TOKENIZER_INPUT, eval_input


@stage_asset(
    TRAINING_MIX_CHECKS,
    deps=[NORMALIZED_SPLITS],
    group_name="mix",
    kinds={"parquet", "dvc"},
    description="The training set: normalized train rows, minus rows sharing a word n-gram with an "
    "evaluation set (decontamination.action: drop; kept aside under contaminated/), drawn per "
    "source by the configured proportions (or temperature shares) in documents or tokens "
    "(mix.unit); each row carries times_drawn, and its token count (tokens) in tokens.",
)
def training_mix(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    train, engine, shards = (
        corpus.stage_dir(NORMALIZED_SPLITS) / TRAIN,
        corpus.engine(config),
        range(config.num_shards),
    )
    settings, tokens = config.decontamination, config.mix.unit == "tokens"
    counter = token_counter(corpus, config)  # fails early on a bad tokenizer file
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
            counter=counter,
        )
        available, contaminated, available_tokens = Counter(), Counter(), Counter()
        for per_source, per_set, per_source_tokens in engine.map_shards(clean, shards):
            available.update(per_source)
            contaminated.update(per_set)
            available_tokens.update(per_source_tokens)
        plan = plan_of(config, dict(sorted((available_tokens if tokens else available).items())))
        drawn, drawn_tokens = Counter(), Counter()
        for per_source, per_source_tokens in engine.map_shards(
            partial(
                draw_shard, folder=scratch, staging=staging, rates=plan.rates, seed=config.seed
            ),
            shards,
        ):
            drawn.update(per_source)
            drawn_tokens.update(per_source_tokens)
        counts = {
            "rows": sum(drawn.values()),
            "available_per_source": dict(sorted(available.items())),
            "rates": {s: round(r, 6) for s, r in plan.rates.items()},
            "drawn_per_source": dict(sorted(drawn.items())),
            "contaminated_rows_per_eval_set": dict(sorted(contaminated.items())),
            "decontamination_action": settings.action,
        }
        if tokens:  # documents keep the manifest they always had
            counts |= {
                "unit": "tokens",
                "tokenizer": config.mix.tokenizer,
                "tokens": sum(drawn_tokens.values()),
                "target_tokens": round(plan.total),
                "available_tokens_per_source": dict(sorted(available_tokens.items())),
                "drawn_tokens_per_source": dict(sorted(drawn_tokens.items())),
            }
        if config.records_licences:
            counts["drawn_per_license"] = licence_rollup(
                engine, staging, config.num_shards, weight="times_drawn"
            )
        write_json(counts, staging / MANIFEST)
    inputs = {
        eval_input(name): corpus.root_path / path for name, path in settings.eval_sets.items()
    }
    if (tokenizer := tokenizer_file(corpus, config)) is not None:
        inputs[TOKENIZER_INPUT] = tokenizer
    extra = mix_metadata(plan, drawn_tokens if tokens else drawn)
    yield from publish(corpus, config, TRAINING_MIX_CHECKS, counts, extra, inputs=inputs)
