"""The Great Expectations suite of raw_documents: schema, ids, types and value ranges.

This is the only module that imports Great Expectations, and only when a suite is built or a
local engine's fork server preloads it (the import takes about three seconds, so the Dagster
process, which only hands shards to the engine's workers, never pays it). Each shard is
validated as a pandas frame against an ephemeral context; failures name the expectation, the
column and example rows. Ids need only per-shard uniqueness: a row's shard is a function of its
id. The suite asks of the text column only that it exists (ingest's decoding and
canonicalization judge the text itself), so the texts are not read: the frame's ``text`` column
marks that the shard's files hold one (:func:`read_for_suite`), and decompressing a shard's text
took half of its validation (0.10 of 0.21 s for 12,500 benchmark documents).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.generations import TEXT
from corpus_platform.base.shards import (
    batch_part_path,
    part_path,
    shard_files,
)

if TYPE_CHECKING:
    import great_expectations as gx

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Failure:
    """One failed expectation with up to five offending rows."""

    expectation: str
    column: str | None
    unexpected: int
    examples: tuple[str, ...]

    def describe(self) -> str:
        """e.g. ``expect_column_values_to_not_be_null(doc_id): 2 rows, e.g. web/a.jsonl row 3``."""
        where = f"({self.column})" if self.column else ""
        rows = (
            f": {self.unexpected} row(s), e.g. {', '.join(self.examples)}" if self.examples else ""
        )
        return f"{self.expectation}{where}{rows}"


def build_suite(
    features: tuple[str, ...], ranges: dict[str, tuple[float | None, float | None]]
) -> gx.ExpectationSuite:
    """Expectations every canonical raw_documents shard must meet."""
    _context()  # suites must be built inside an active (ephemeral) context
    import great_expectations as gx

    e = gx.expectations
    suite = gx.ExpectationSuite(name="raw_documents")
    for column in (
        "doc_id",
        "text",
        "source",
        "entity",
        "timestamp",
        *features,
        "label",
        "content_hash",
    ):
        suite.add_expectation(e.ExpectColumnToExist(column=column))
    for column in ("doc_id", "source", "entity", "content_hash", "raw_file", "raw_row"):
        suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column=column))
    suite.add_expectation(e.ExpectColumnValuesToBeUnique(column="doc_id"))
    suite.add_expectation(e.ExpectColumnValueLengthsToBeBetween(column="doc_id", min_value=1))
    suite.add_expectation(e.ExpectColumnValueLengthsToEqual(column="content_hash", value=32))
    for column in (*features, "label"):
        suite.add_expectation(
            e.ExpectColumnValuesToBeInTypeList(column=column, type_list=["float64", "Float64"])
        )
    for column, (low, high) in sorted(ranges.items()):
        suite.add_expectation(
            e.ExpectColumnValuesToBeBetween(column=column, min_value=low, max_value=high)
        )
    return suite


def import_great_expectations() -> None:
    """Import Great Expectations with its analytics and progress bars off: it reads both
    switches from the environment when it is imported, which happens here first, in the process
    that validates (an engine worker) or in the fork server that workers are forked from
    (:mod:`corpus_platform.worker_preload`)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")
    import great_expectations  # noqa: F401


@cache
def _context() -> Any:
    """The ephemeral context every suite is built and validated in."""
    import_great_expectations()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.execution_engine import pandas_execution_engine

    # GE fingerprints every in-memory batch under HASH_THRESHOLD bytes by hashing all its cells
    # (pandas' hash_pandas_object: 0.6 s of a 12,500-row shard, ten times the validation). The
    # fingerprint is only written into the result's batch markers; no metric, cache or result
    # depends on it (tests/kernels/ingest/test_expectations.py validates shards one after
    # another in one context). A threshold of 0 skips it.
    pandas_execution_engine.HASH_THRESHOLD = 0
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return context


@cache
def _batch_definition() -> Any:
    source = _context().data_sources.add_pandas("corpus")
    return source.add_dataframe_asset("raw_documents_shard").add_batch_definition_whole_dataframe(
        "shard"
    )


def validate(table: pa.Table, suite: gx.ExpectationSuite) -> list[Failure]:
    """Validate one shard; return the failed expectations (empty when all pass)."""
    frame = table.to_pandas()
    batch = _batch_definition().get_batch(batch_parameters={"dataframe": frame})
    result = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    failures = []
    for item in result.results:
        if item.success:
            continue
        column = item.expectation_config.kwargs.get("column")
        indexes = (item.result or {}).get("unexpected_index_list") or []
        examples = tuple(
            f"{frame['raw_file'].iloc[i]} row {frame['raw_row'].iloc[i]}"
            for i in indexes[:MAX_EXAMPLES]
        )
        unexpected = int((item.result or {}).get("unexpected_count") or len(indexes))
        failures.append(Failure(item.expectation_config.type, column, unexpected, examples))
    return failures


@cache
def _suite(features: tuple[str, ...], ranges: tuple[tuple[str, tuple], ...]) -> gx.ExpectationSuite:
    return build_suite(features, dict(ranges))


def validate_shard(
    shard: int,
    folder: Path,
    features: tuple[str, ...],
    ranges: dict[str, tuple[float | None, float | None]],
    batches: tuple[str, ...] | None = None,
) -> tuple[int, list[str]]:
    """Validate one shard of ``folder`` (a task for the engine's workers, each of which builds
    the suite once), or only its files of the raw batches ``batches``; return the suite's
    number of expectations and the shard's failures described, each prefixed with the shard."""
    suite = _suite(features, tuple(sorted((k, tuple(v)) for k, v in ranges.items())))
    if batches is None:
        table = read_for_suite([part_path(folder, shard)])
    else:
        files = [batch_part_path(folder, shard, b) for b in batches]
        table = read_for_suite(files or [part_path(folder, shard)], rows=bool(files))
    failures = validate(table, suite)
    return len(suite.expectations), [f"shard {shard}: {f.describe()}" for f in failures]


def read_for_suite(paths: list[Path], rows: bool = True) -> pa.Table:
    """The rows of ``paths`` (files, or shard folders) concatenated as the suite validates
    them: every column but the text, which :func:`build_suite` only asks to exist, in the
    files' column order; where the files hold a text column, ``text`` is 1 in every row (a
    marker of the column, not its values). ``rows`` False: none of the rows (the schema only)."""
    held = {file: pq.read_schema(file).names for path in paths for file in shard_files(path)}
    names = list(dict.fromkeys(name for file_names in held.values() for name in file_names))
    tables = [
        pq.read_table(file, columns=[n for n in file_names if n != TEXT])
        for file, file_names in held.items()
    ]
    table = pa.concat_tables(tables, promote_options="default")
    if not rows:
        table = table.slice(0, 0)
    if TEXT not in names:
        return table
    marker = pa.array(np.ones(len(table), dtype=np.int8))
    return table.add_column(names.index(TEXT), TEXT, marker)
