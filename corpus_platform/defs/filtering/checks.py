"""Blocking checks of filtered_documents, run on the candidate before it is published."""

from pathlib import Path

import dagster as dg
import pyarrow.compute as pc

from corpus_platform.base.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS, REMOVALS_HAVE_REASONS
from corpus_platform.base.shards import iter_shards, read_manifest
from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.resources import CorpusProject


@corpus_check(asset=FILTERED_DOCUMENTS, name=REMOVALS_HAVE_REASONS)
def every_removal_has_reason(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """Every removed row names its filter, and kept + removed accounts for every raw row."""
    config = corpus.load()
    folder = candidate
    removed = missing_reason = 0
    for _, table in iter_shards(folder / "removed", config.num_shards, ["reason"]):
        removed += len(table)
        reasons = table.column("reason")
        missing_reason += reasons.null_count + (pc.sum(pc.equal(reasons, "")).as_py() or 0)
    kept = sum(len(t) for _, t in iter_shards(folder, config.num_shards, ["doc_id"]))
    rows_in = read_manifest(corpus.stage_dir(RAW_DOCUMENTS))["rows"]
    return dg.AssetCheckResult(
        passed=missing_reason == 0 and kept + removed == rows_in,
        metadata={
            "verdict": f"removed rows without a reason: {missing_reason} of {removed}",
            "accounted": f"kept {kept} + removed {removed} = {kept + removed} of {rows_in} rows",
        },
    )
