"""Blocking checks of raw_documents, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.canonical import repeated_ids
from corpus_platform.kernels.ingest.expectations import validate_shard


def ids_unique(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Every doc_id occurs once."""
    rows, repeated = repeated_ids(candidate, corpus.load().num_shards)
    return CheckOutcome.from_metadata(
        passed=not repeated,
        metadata={
            "verdict": f"doc_ids occurring more than once: {len(repeated)} of {rows} rows",
            "duplicated_ids": repeated[:10],
        },
    )


def great_expectations_suite(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """The Great Expectations suite (schema, non-null unique ids, types, declared value ranges)
    passes on every shard; a failure names the expectation, the column and example rows."""
    config = corpus.load()
    validate = partial(
        validate_shard,
        folder=candidate,
        features=config.input.features,
        ranges=config.input.ranges,
    )
    per_shard = corpus.engine(config).map_shards(validate, range(config.num_shards))
    failures = [failure for _, shard in per_shard for failure in shard]
    suite_size = max((size for size, _ in per_shard), default=0)
    return CheckOutcome.from_metadata(
        passed=not failures,
        metadata={
            "verdict": f"failed expectations: {len(failures)} "
            f"({suite_size} expectations x {config.num_shards} shards)",
            "failures": failures[:20],
        },
    )


# The blocking checks of raw_documents, in the order they run and are shown.
RAW_DOCUMENTS_CHECKS = StageChecks(
    "raw_documents",
    (
        ids_unique,
        great_expectations_suite,
    ),
)
