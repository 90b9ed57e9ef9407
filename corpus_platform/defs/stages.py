"""Every stage's blocking checks, as each stage family declares them, in the graph's order."""

from corpus_platform.defs.checks import CheckFn, CheckRun, StageChecks, run_check
from corpus_platform.defs.dedup.checks import DEDUPLICATED_DOCUMENTS_CHECKS
from corpus_platform.defs.filtering.checks import FILTERED_DOCUMENTS_CHECKS
from corpus_platform.defs.ingest.checks import RAW_DOCUMENTS_CHECKS
from corpus_platform.defs.mixing.checks import TRAINING_MIX_CHECKS
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.sharding.checks import TRAINING_SHARDS_CHECKS
from corpus_platform.defs.splitting.checks import SPLIT_DOCUMENTS_CHECKS
from corpus_platform.defs.statistics.checks import (
    FITTED_STATISTICS_CHECKS,
    NORMALIZED_SPLITS_CHECKS,
)

STAGE_CHECKS: dict[str, StageChecks] = {
    checks.asset: checks
    for checks in (
        RAW_DOCUMENTS_CHECKS,
        FILTERED_DOCUMENTS_CHECKS,
        DEDUPLICATED_DOCUMENTS_CHECKS,
        SPLIT_DOCUMENTS_CHECKS,
        FITTED_STATISTICS_CHECKS,
        NORMALIZED_SPLITS_CHECKS,
        TRAINING_MIX_CHECKS,
        TRAINING_SHARDS_CHECKS,
    )
}


def check_on_published(fn: CheckFn, corpus: CorpusProject) -> CheckRun:
    """Run one stage check on its stage's published folder (``data/<asset>``), as an audit of
    what is already there rather than of a new candidate."""
    stage = next(s for s in STAGE_CHECKS.values() if fn in s.checks)
    return run_check(fn, stage.asset, corpus, corpus.stage_dir(stage.asset))
