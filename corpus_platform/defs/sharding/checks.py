"""Blocking checks of training_shards, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.base.names import (
    EVERY_DRAW_SHARDED_ONCE,
    SHARDS_MANIFEST,
    SHARDS_MATCH_MANIFEST,
    TRAINING_MIX,
    TRAINING_SHARDS,
)
from corpus_platform.base.shards import read_json
from corpus_platform.defs.checks import corpus_check
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
from corpus_platform.kernels.sharding.draw_audit import draw_reports


@corpus_check(asset=TRAINING_SHARDS, name=SHARDS_MATCH_MANIFEST)
def shards_match_manifest(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """Every file manifest.json lists exists with its bytes, md5, sample and token counts, and
    so does each file of the dataset card; no file is unlisted; the totals add up; each shard's
    tar and Parquet file hold the same samples (key, doc_id, draw, text) in the same order."""
    config = corpus.load()
    document = read_json(candidate / SHARDS_MANIFEST)
    entries = document.get("shards", [])
    shards = shard_numbers(document)
    problems = [] if shards == list(range(len(shards))) else [f"shard numbers {shards}"]
    size = batch_size(len(shards), VERIFY_BATCH)
    per_shard = corpus.engine(config).map_shards(
        partial(verify_batch, folder=candidate, size=size), range(batch_count(len(shards), size))
    )
    problems += [p for found in per_shard for p in found] + totals_problems(document)
    problems += card_problems(candidate, document)
    unlisted = unlisted_files(candidate, document)
    problems += [f"{name}: not listed in {SHARDS_MANIFEST}" for name in unlisted]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "verdict": f"differences between the shards and {SHARDS_MANIFEST}: {len(problems)} "
            f"({len(entries)} files listed, {len(unlisted)} unlisted)",
            "offenders": problems[:10],
        },
    )


@corpus_check(asset=TRAINING_SHARDS, name=EVERY_DRAW_SHARDED_ONCE)
def every_draw_sharded_once(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """Recounted from every tar and every Parquet file in the folder (not from the manifest)
    and from the training_mix folder: each row's draws occur exactly once each, ``times_drawn``
    samples per doc_id, in both formats, and no key occurs twice. Partitioned by doc id on the
    engine (:mod:`corpus_platform.kernels.sharding.draw_audit`)."""
    config = corpus.load()
    files = sorted([*candidate.glob("*.tar"), *candidate.glob("*.parquet")])
    mix, engine = corpus.stage_dir(TRAINING_MIX), corpus.engine(config)
    with corpus.scratch(EVERY_DRAW_SHARDED_ONCE) as work:
        reports = draw_reports(files, mix, config.num_shards, work, engine, config.engine.memory_mb)
    failed = [r for r in reports if r.wrong or r.duplicate_keys or r.samples != r.draws]
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "verdict": "; ".join(
                f"{r.fmt}: {r.samples} samples for {r.draws} mix draws, doc_ids not sharded "
                f"exactly once per draw {r.wrong}, keys repeated {r.duplicate_keys}"
                for r in reports
            ),
            "offenders": [e for r in reports for e in r.examples][:10],
        },
    )
