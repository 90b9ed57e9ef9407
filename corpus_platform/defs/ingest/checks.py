"""Blocking checks of raw_documents, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.base.names import EXPECTATIONS, IDS_UNIQUE, RAW_DOCUMENTS
from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.canonical import repeated_ids
from corpus_platform.kernels.ingest.expectations import validate_shard


@corpus_check(asset=RAW_DOCUMENTS, name=IDS_UNIQUE)
def ids_unique(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """Every doc_id occurs once."""
    rows, repeated = repeated_ids(candidate, corpus.load().num_shards)
    return dg.AssetCheckResult(
        passed=not repeated,
        metadata={
            "verdict": f"doc_ids occurring more than once: {len(repeated)} of {rows} rows",
            "duplicated_ids": repeated[:10],
        },
    )


@corpus_check(asset=RAW_DOCUMENTS, name=EXPECTATIONS)
def great_expectations_suite(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
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
    return dg.AssetCheckResult(
        passed=not failures,
        metadata={
            "verdict": f"failed expectations: {len(failures)} "
            f"({suite_size} expectations x {config.num_shards} shards)",
            "failures": failures[:20],
        },
    )
