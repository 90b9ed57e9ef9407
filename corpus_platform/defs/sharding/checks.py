"""Blocking checks of training_shards, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import SHARDS_MANIFEST, TRAINING_MIX, TRAINING_SHARDS
from corpus_platform.base.shards import MANIFEST, read_json
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.generations import appended_generation, changed_published_files
from corpus_platform.defs.mixing.checks import token_counter
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.engine import batch_count, batch_size
from corpus_platform.kernels.sharding.audit import (
    VERIFY_BATCH,
    card_problems,
    shard_numbers,
    totals_problems,
    unlisted_files,
    verify_batch,
)
from corpus_platform.kernels.sharding.card import CARD_FILE, CHART_DIR
from corpus_platform.kernels.sharding.draw_audit import draw_reports


def shards_match_manifest(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Every file manifest.json lists exists with its bytes, md5, sample and token counts, and
    so does each file of the dataset card; no file is unlisted; the totals add up; each shard's
    tar and Parquet file hold the same samples (key, doc_id, draw, text) in the same order."""
    config = corpus.load()
    document = read_json(candidate / SHARDS_MANIFEST)
    entries = document.get("shards", [])
    shards = shard_numbers(document)
    problems = [] if shards == list(range(len(shards))) else [f"shard numbers {shards}"]
    published = corpus.stage_dir(TRAINING_SHARDS)
    generation = appended_generation(candidate, published, SHARDS_MANIFEST)
    if generation is not None:  # an append: its new shards read, the published ones kept
        changed = changed_published_files(candidate, published, REWRITTEN)
        problems += [f"{name}: a published file changed" for name in changed]
    mine = shard_numbers(document, generation)
    size = batch_size(len(mine), VERIFY_BATCH)
    verify = partial(verify_batch, folder=candidate, size=size, generation=generation)
    per_shard = corpus.engine(config).map_shards(
        partial(verify, counter=token_counter(corpus, config)),
        range(batch_count(len(mine), size)),
    )
    problems += [p for found in per_shard for p in found] + totals_problems(document)
    problems += card_problems(candidate, document)
    unlisted = unlisted_files(candidate, document)
    problems += [f"{name}: not listed in {SHARDS_MANIFEST}" for name in unlisted]
    return CheckOutcome.from_metadata(
        passed=not problems,
        metadata={
            "verdict": f"differences between the shards and {SHARDS_MANIFEST}: {len(problems)} "
            f"({len(entries)} files listed, {len(unlisted)} unlisted{scope(generation)})",
            "offenders": problems[:10],
        },
    )


REWRITTEN = (MANIFEST, SHARDS_MANIFEST, CARD_FILE, CHART_DIR)  # what an append writes anew


def scope(generation: int | None) -> str:
    """How much of the shards a check read."""
    if generation is None:
        return ""
    return f"; an append: generation {generation}'s files read, every published file kept"


def every_draw_sharded_once(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Recounted from every tar and every Parquet file in the folder (not from the manifest)
    and from the training_mix folder: each row's draws occur exactly once each, ``times_drawn``
    samples per doc_id, in both formats, and no key occurs twice. Partitioned by doc id on the
    engine (:mod:`corpus_platform.kernels.sharding.draw_audit`)."""
    config = corpus.load()
    files = sorted([*candidate.glob("*.tar"), *candidate.glob("*.parquet")])
    mix, engine = corpus.stage_dir(TRAINING_MIX), corpus.engine(config)
    generation = appended_generation(candidate, corpus.stage_dir(TRAINING_SHARDS), SHARDS_MANIFEST)
    mix_generations = None
    if generation is not None:  # an append: its new shards against the new mix generations
        document = read_json(candidate / SHARDS_MANIFEST)
        entry = next(g for g in document["generations"] if g["generation"] == generation)
        names = {e["name"] for e in document["shards"] if e.get("generation") == generation}
        files = [f for f in files if f.name in names]
        mix_generations = tuple(int(g) for g in entry["mix_generations"])
    with corpus.scratch("every_draw_sharded_once") as work:
        memory = config.engine.memory_mb
        reports = draw_reports(
            files, mix, config.num_shards, work, engine, memory, generations=mix_generations
        )
    failed = [r for r in reports if r.wrong or r.duplicate_keys or r.samples != r.draws]
    return CheckOutcome.from_metadata(
        passed=not failed,
        metadata={
            "verdict": "; ".join(
                f"{r.fmt}: {r.samples} samples for {r.draws} mix draws, doc_ids not sharded "
                f"exactly once per draw {r.wrong}, keys repeated {r.duplicate_keys}"
                for r in reports
            )
            + scope(generation),
            "offenders": [e for r in reports for e in r.examples][:10],
        },
    )


# The blocking checks of training_shards, in the order they run and are shown.
TRAINING_SHARDS_CHECKS = StageChecks(
    "training_shards",
    (
        shards_match_manifest,
        every_draw_sharded_once,
    ),
)
