"""training_mix: decontaminated train rows drawn by per-source proportions."""

from corpus_platform.base.names import NORMALIZED_SPLITS, SPLIT_DOCUMENTS, TRAINING_MIX
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.generations import STAGE_CODE, build_plan, upstream_generations
from corpus_platform.defs.mixing.checks import (  # also registers the checks
    TRAINING_MIX_CHECKS,
    token_counter,
    tokenizer_file,
)
from corpus_platform.defs.mixing.draws import (
    appended,
    draw,
    eval_digest,
    mix_counts,
    mix_plan,
)
from corpus_platform.defs.mixing.review import mix_metadata
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.licences import licence_rollup
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version
from corpus_platform.store.registry import TOKENIZER_INPUT, eval_input

# what an append must share with the published mix (its epoch included): the rest is redrawn
MIX_SETTINGS = {"seed": (), "num_shards": (), "mix": ("tolerance",), "decontamination": ()}


@stage_asset(
    TRAINING_MIX_CHECKS,
    deps=[NORMALIZED_SPLITS, SPLIT_DOCUMENTS],  # the train rows, and their texts
    group_name="mix",
    kinds={"parquet", "dvc"},
    description="The training set: normalized train rows (their texts from split_documents), "
    "minus rows sharing a word n-gram with an evaluation set (decontamination.action: drop; kept "
    "aside under contaminated/), drawn per "
    "source by the configured proportions (or temperature shares) in documents or tokens "
    "(mix.unit); each row carries times_drawn, and its token count (tokens) in tokens. Within "
    "a mix.epoch an append draws only its new train rows, at the epoch's rates, as a new "
    "generation; every published draw stays.",
)
def training_mix(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    settings, tokens = config.decontamination, config.mix.unit == "tokens"
    counter = token_counter(corpus, config)  # fails early on a bad tokenizer file
    recorded = {"eval_digest": eval_digest(corpus, config)}
    units = upstream_generations(corpus.stage_dir(NORMALIZED_SPLITS))
    plan = build_plan(corpus, TRAINING_MIX, config, MIX_SETTINGS, "mixing", units, recorded)
    with (
        corpus.scratch(TRAINING_MIX) as scratch,
        candidate_folder(corpus.stage_dir(TRAINING_MIX)) as staging,
    ):
        if plan.appends:
            whole, newest, rates = appended(corpus, config, scratch, staging, counter, plan)
            mix = mix_plan(config, whole, rates, tokens)
        else:
            whole, rates = draw(corpus, config, scratch, staging, counter, plan, None)
            newest, mix = None, mix_plan(config, whole, rates, tokens)
        counts = mix_counts(config, whole, newest, mix, tokens) | recorded
        if config.records_licences:
            engine = corpus.engine(config)
            counts["drawn_per_license"] = licence_rollup(
                engine, staging, config.num_shards, weight="times_drawn"
            )
        plan.write_manifest(staging, counts, counts["rows"])
    inputs = {
        eval_input(name): corpus.root_path / path for name, path in settings.eval_sets.items()
    }
    if (tokenizer := tokenizer_file(corpus, config)) is not None:
        inputs[TOKENIZER_INPUT] = tokenizer
    counts |= plan.as_counts() | {STAGE_CODE: stage_code_version("mixing")}
    counts |= anchored_to(corpus, plan.published)
    extra = mix_metadata(mix, whole.drawn_tokens if tokens else whole.drawn)
    yield from publish(corpus, config, TRAINING_MIX_CHECKS, counts, extra, inputs=inputs)
