"""Blocking checks of raw_documents, run on the candidate before it is published."""

from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import RAW_DOCUMENTS, batch_key
from corpus_platform.base.shards import MANIFEST, read_manifest
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.generations import changed_published_files
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
    passes on every shard; a failure names the expectation, the column and example rows. When
    the candidate keeps the published snapshot's batches (their files unchanged, the suite
    the same), the new raw batches' files are validated."""
    config = corpus.load()
    batches = new_batches(corpus, candidate)
    validate = partial(
        validate_shard,
        folder=candidate,
        features=config.input.features,
        ranges=config.input.ranges,
        batches=batches,
    )
    per_shard = corpus.engine(config).map_shards(validate, range(config.num_shards))
    failures = [failure for _, shard in per_shard for failure in shard]
    suite_size = max((size for size, _ in per_shard), default=0)
    validated = (
        "every raw batch's files"
        if batches is None
        else f"the {len(batches)} new raw batches' files (the published batches' files are "
        "unchanged since they passed)"
    )
    return CheckOutcome.from_metadata(
        passed=not failures,
        metadata={
            "verdict": f"failed expectations: {len(failures)} "
            f"({suite_size} expectations x {config.num_shards} shards)",
            "validated": validated,  # not in the verdict: the card reads the same either way
            "failures": failures[:20],
        },
    )


def new_batches(corpus: CorpusProject, candidate: Path) -> tuple[str, ...] | None:
    """The batch keys a candidate adds to the published raw_documents when it keeps every
    published batch's files unchanged and the suite is the published one (same ``input``
    settings); None when every batch must be validated."""
    config = corpus.load()
    published = corpus.published_alike(RAW_DOCUMENTS, config, {"input": ()})
    if published is None or not (published / MANIFEST).is_file():
        return None
    before = read_manifest(published).get("batches") or {}
    now = read_manifest(candidate).get("batches") or {}
    if not before or any(now.get(n, {}).get("sha256") != b["sha256"] for n, b in before.items()):
        return None
    if changed_published_files(candidate, published):
        return None
    return tuple(batch_key(name) for name in sorted(set(now) - set(before)))


# The blocking checks of raw_documents, in the order they run and are shown.
RAW_DOCUMENTS_CHECKS = StageChecks(
    "raw_documents",
    (
        ids_unique,
        great_expectations_suite,
    ),
)
