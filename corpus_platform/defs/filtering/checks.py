"""Blocking checks of filtered_documents, run on the candidate before it is published."""

from pathlib import Path

import pyarrow.compute as pc

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import RAW_DOCUMENTS
from corpus_platform.base.shards import iter_shards, read_manifest
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.resources import CorpusProject


def every_removal_has_reason(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
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
    return CheckOutcome.from_metadata(
        passed=missing_reason == 0 and kept + removed == rows_in,
        metadata={
            "verdict": f"removed rows without a reason: {missing_reason} of {removed}",
            "accounted": f"kept {kept} + removed {removed} = {kept + removed} of {rows_in} rows",
        },
    )


# The blocking checks of filtered_documents, in the order they run and are shown.
FILTERED_DOCUMENTS_CHECKS = StageChecks(
    "filtered_documents",
    (every_removal_has_reason,),
)
