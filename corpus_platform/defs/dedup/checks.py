"""Blocking checks of deduplicated_documents, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import (
    SIMILAR_PAIRS,
)
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import (
    kept_duplicate_pairs,
)


def no_kept_near_duplicate_pair(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No verified pair at or above the dedup threshold survives as two separate rows: in drop
    mode one row of the pair is gone, in annotate mode both carry the same cluster id."""
    config = corpus.load()
    audit = partial(
        kept_duplicate_pairs,
        pairs_file=candidate / SIMILAR_PAIRS,
        folder=candidate,
        num_shards=config.num_shards,
        threshold=config.dedup.threshold,
        mode=config.dedup.mode,
    )
    total, kept, offenders = corpus.engine(config).map_shards(audit, [0])[0]
    return CheckOutcome.from_metadata(
        passed=kept == 0,
        metadata={
            "verdict": f"near-duplicate pairs kept as separate rows: {kept} of {total}",
            "threshold": config.dedup.threshold,
            "offenders (up to 10)": ", ".join(offenders) or "none",
        },
    )


# The blocking checks of deduplicated_documents, in the order they run and are shown.
DEDUPLICATED_DOCUMENTS_CHECKS = StageChecks(
    "deduplicated_documents",
    (no_kept_near_duplicate_pair,),
)
