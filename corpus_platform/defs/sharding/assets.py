"""training_shards: the training mix as size-capped WebDataset tar and Parquet shards."""

from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.generations import link_published
from corpus_platform.base.hashing import fingerprint
from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    NORMALIZED_SPLITS,
    SHARDS_MANIFEST,
    SPLIT_DOCUMENTS,
    TRAINING_MIX,
    TRAINING_SHARDS,
)
from corpus_platform.base.shards import MANIFEST, read_json, write_json
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.card import card_entries, write_dataset_card
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.generations import (
    STAGE_CODE,
    BuildPlan,
    build_plan,
    mix_texts,
    units_behind,
    upstream_generations,
)
from corpus_platform.defs.mixing.checks import token_counter
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.sharding.checks import TRAINING_SHARDS_CHECKS
from corpus_platform.kernels.mixing.tokens import TokenCounter
from corpus_platform.kernels.sharding.card import CARD_FILE, CHART_DIR
from corpus_platform.kernels.sharding.manifest import extend_manifest
from corpus_platform.kernels.sharding.shards import build_shards
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version

# what an append must share with the published shards: the rest writes every shard again
SHARD_SETTINGS = {"seed": (), "num_shards": (), "shards": (), "mix": ("tolerance",)}
UPSTREAM_OF_MIX = (NORMALIZED_SPLITS, SPLIT_DOCUMENTS, DEDUPLICATED_DOCUMENTS)


@stage_asset(
    TRAINING_SHARDS_CHECKS,
    deps=[TRAINING_MIX, SPLIT_DOCUMENTS],  # the drawn rows, their texts
    group_name="mix",
    kinds={"webdataset", "parquet", "dvc"},
    description="The training mix as size-capped WebDataset tar shards and Parquet shards of "
    "the same samples (a row drawn k times is k samples), in one seeded global order, with "
    "manifest.json (per file: samples, tokens, bytes, md5) and the dataset card (README.md, "
    "charts under card/). corpus_platform.loader reads it. An append writes the new mix "
    "generation's samples as new shards (a new generation in manifest.json, read after the "
    "published ones); every published shard file stays.",
)
def training_shards(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    settings, counter = config.shards, token_counter(corpus, config)
    units = upstream_generations(corpus.stage_dir(TRAINING_MIX))
    plan = build_plan(
        corpus, TRAINING_SHARDS, config, SHARD_SETTINGS, "sharding", units,
        manifest_name=SHARDS_MANIFEST,
    )  # fmt: skip
    with (
        corpus.scratch(TRAINING_SHARDS) as scratch,
        candidate_folder(corpus.stage_dir(TRAINING_SHARDS)) as staging,
    ):
        document = write_generation(corpus, config, plan, scratch, staging, counter)
        if counter is not None:  # tokens in the mix's unit: its tokenizer's
            document["tokens_counted_with"] = config.mix.tokenizer
        card = write_dataset_card(corpus, staging, document["totals"], document["generations"])
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
        "generations": len(document["generations"]),
    }
    counts |= plan.as_counts() | {STAGE_CODE: stage_code_version("sharding")}
    counts |= anchored_to(corpus, plan.published)
    extra = {
        "shards_table": dg.MetadataValue.md(shards_markdown(document)),
        "generations_table": dg.MetadataValue.md(generations_markdown(document["generations"])),
        "dataset_card": dg.MetadataValue.md(card),
    }
    yield from publish(corpus, config, TRAINING_SHARDS_CHECKS, counts, extra)


def write_generation(
    corpus: CorpusProject,
    config: CorpusConfig,
    plan: BuildPlan,
    scratch: Path,
    staging: Path,
    counter: TokenCounter | None,
) -> dict[str, Any]:
    """Write the shards of the whole mix (from scratch), or take the published shards as they
    are and write the new mix generations' samples as the next generation of shards; return
    the manifest, each generation with the mix generations and the raw batches behind it."""
    mix, settings = corpus.stage_dir(TRAINING_MIX), config.shards
    published: dict[str, Any] | None = None
    if plan.published is not None:
        link_published(
            plan.published, staging, skip=(MANIFEST, SHARDS_MANIFEST, CARD_FILE, CHART_DIR)
        )
        published = read_json(plan.published / SHARDS_MANIFEST)
        published.pop("card", None)
    if published is not None and not plan.new:
        return published
    first = max((e["shard"] + 1 for e in (published or {}).get("shards", [])), default=0)
    mix_generations = tuple(sorted(int(g) for g in plan.new)) if published else None
    added = build_shards(
        mix, staging, scratch, config.num_shards, config.seed, settings.max_bytes,
        settings.max_samples, corpus.engine(config), counter, plan.generation, first,
        mix_generations, mix_texts(corpus, mix, mix_generations),
    )  # fmt: skip
    upstream = [corpus.stage_dir(n) for n in (TRAINING_MIX, *UPSTREAM_OF_MIX)]
    for entry in added["generations"]:
        entry["mix_generations"] = sorted(plan.new, key=int)
        entry["raw_batches"] = units_behind(upstream, set(plan.new))
        entry["upstream"] = dict(sorted(plan.new.items()))
        md5s = sorted(f"{e['name']}\0{e['md5']}" for e in added["shards"])
        entry["digest"] = fingerprint(md5s)
    return added if published is None else extend_manifest(published, added)


def shards_markdown(document: dict[str, Any]) -> str:
    """Every tar shard: its generation, samples, tokens and bytes (the first 50)."""
    rows = [
        f"| {e['shard']} | {e.get('generation', 0)} | {e['samples']:,} | {e['tokens']:,} | "
        f"{e['bytes']:,} |"
        for e in document["shards"]
        if e["format"] == "webdataset"
    ]
    header = ["| shard | generation | samples | tokens | tar bytes |", "|---:|---:|---:|---:|---:|"]
    return "\n".join([*header, *rows[:50]])


def generations_markdown(generations: list[dict[str, Any]]) -> str:
    """Every generation of the shards: its shards, samples and the raw batches behind it."""
    lines = ["| generation | shards | samples | raw batches |", "|---:|---|---:|---|"]
    for g in generations:
        shards = g["shards"]
        span = f"{shards[0]}-{shards[-1]}" if shards else "none"
        batches = ", ".join(g.get("raw_batches", [])) or "-"
        lines.append(f"| {g['generation']} | {span} | {g['samples']:,} | {batches} |")
    return "\n".join(lines)
