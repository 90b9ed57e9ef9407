"""training_shards: the training mix as size-capped WebDataset tar and Parquet shards."""

import dagster as dg

from corpus_platform.base.names import SHARDS_MANIFEST, TRAINING_MIX, TRAINING_SHARDS
from corpus_platform.base.shards import write_json
from corpus_platform.defs.card import card_entries, write_dataset_card
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.mixing.checks import token_counter
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.sharding.checks import TRAINING_SHARDS_CHECKS
from corpus_platform.kernels.sharding.shards import build_shards
from corpus_platform.store.datasets import candidate_folder


@stage_asset(
    TRAINING_SHARDS_CHECKS,
    deps=[TRAINING_MIX],
    group_name="mix",
    kinds={"webdataset", "parquet", "dvc"},
    description="The training mix as size-capped WebDataset tar shards and Parquet shards of "
    "the same samples (a row drawn k times is k samples), in one seeded global order, with "
    "manifest.json (per file: samples, tokens, bytes, md5) and the dataset card (README.md, "
    "charts under card/). corpus_platform.loader reads it.",
)
def training_shards(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    settings, counter = config.shards, token_counter(corpus, config)
    with (
        corpus.scratch(TRAINING_SHARDS) as scratch,
        candidate_folder(corpus.stage_dir(TRAINING_SHARDS)) as staging,
    ):
        document = build_shards(
            corpus.stage_dir(TRAINING_MIX),
            staging,
            scratch,
            config.num_shards,
            config.seed,
            settings.max_bytes,
            settings.max_samples,
            corpus.engine(config),
            counter,
        )
        if counter is not None:  # tokens in the mix's unit: its tokenizer's
            document["tokens_counted_with"] = config.mix.tokenizer
        card = write_dataset_card(corpus, staging, document["totals"])
        document["card"] = card_entries(staging)
        write_json(document, staging / SHARDS_MANIFEST)
    totals = document["totals"]
    counts = {
        "rows": totals["samples"],
        "shards": totals["shards"],
        "tokens": totals["tokens"],
        "bytes": totals["bytes"],
        "max_bytes": settings.max_bytes,
        "max_samples": settings.max_samples,
    }
    rows = [
        f"| {e['shard']} | {e['samples']:,} | {e['tokens']:,} | {e['bytes']:,} |"
        for e in document["shards"]
        if e["format"] == "webdataset"
    ]
    table = "\n".join(
        ["| shard | samples | tokens | tar bytes |", "|---:|---:|---:|---:|", *rows[:50]]
    )
    extra = {
        "shards_table": dg.MetadataValue.md(table),
        "dataset_card": dg.MetadataValue.md(card),
    }
    yield from publish(corpus, config, TRAINING_SHARDS_CHECKS, counts, extra)
