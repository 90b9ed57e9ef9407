"""Stream raw input files (jsonl, jsonl.gz, parquet, csv) as batches of rows.

Each reader yields ``(first_row, table)`` where ``first_row`` is the 1-based row number of the
table's first row in the file (the line number for jsonl), so every row can be traced back.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from corpus_platform.redact import CorpusError

SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet", ".csv")
BATCH_ROWS = 10_000


class InputError(CorpusError):
    """Raw input that cannot be ingested; the message names the file, the row and the fix."""


def input_format(path: Path) -> str | None:
    """The supported suffix of ``path``, or None."""
    name = path.name.lower()
    return next((suffix for suffix in SUFFIXES if name.endswith(suffix)), None)


def list_input_files(root: Path) -> list[Path]:
    """Every input file under ``root`` in a stable (sorted relative path) order.

    Raises:
        InputError: when the folder is missing, empty, or holds a file of unknown format.
    """
    if not root.is_dir():
        raise InputError(f"{root}: input folder not found; put raw files there or set input.path")
    files = sorted(
        (p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    unknown = [p for p in files if input_format(p) is None]
    if unknown:
        raise InputError(
            f"{unknown[0]}: unsupported input format; use one of {', '.join(SUFFIXES)} "
            "or move the file out of the input folder"
        )
    if not files:
        raise InputError(f"{root}: no input files; add {', '.join(SUFFIXES)} files")
    return files


def _jsonl_batches(path: Path, opener) -> Iterator[tuple[int, pa.Table]]:
    rows: list[dict] = []
    first = 0
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(
                    f"{path}: line {line_no}: not valid JSON ({error.msg}); fix or remove the line"
                ) from None
            if not isinstance(record, dict):
                raise InputError(f"{path}: line {line_no}: expected a JSON object per line")
            record["__row"] = line_no
            if not rows:
                first = line_no
            rows.append(record)
            if len(rows) >= BATCH_ROWS:
                yield first, _records_table(rows)
                rows = []
    if rows:
        yield first, _records_table(rows)


def _records_table(rows: list[dict]) -> pa.Table:
    # Values are kept as Python objects per column; canonicalization casts them.
    columns: dict[str, list] = {}
    for index, row in enumerate(rows):
        for key in row:
            if key not in columns:
                columns[key] = [None] * index
        for key, values in columns.items():
            values.append(row.get(key))
    return pa.table({key: _loose_array(values) for key, values in columns.items()})


def _loose_array(values: list) -> pa.Array:
    """An Arrow array of JSON values: numbers widen to float, mixed kinds become strings."""
    kinds = {type(v) for v in values if v is not None}
    if kinds and kinds <= {int, float} and kinds != {int}:
        return pa.array(values, pa.float64())
    if len(kinds) > 1 or kinds & {dict, list}:
        return pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.array(values)


def _parquet_batches(path: Path) -> Iterator[tuple[int, pa.Table]]:
    first = 1
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
        table = pa.Table.from_batches([batch])
        yield first, table.append_column("__row", pa.array(range(first, first + len(table))))
        first += len(table)


def _csv_batches(path: Path) -> Iterator[tuple[int, pa.Table]]:
    first = 1
    options = pacsv.ReadOptions(block_size=1 << 22)
    convert = pacsv.ConvertOptions(strings_can_be_null=True)
    try:
        reader = pacsv.open_csv(path, read_options=options, convert_options=convert)
        for batch in reader:
            table = pa.Table.from_batches([batch])
            yield first, table.append_column("__row", pa.array(range(first, first + len(table))))
            first += len(table)
    except pa.ArrowInvalid as error:
        raise InputError(f"{path}: not readable as CSV near row {first}: {error}") from None


def read_batches(path: Path) -> Iterator[tuple[int, pa.Table]]:
    """Yield ``(first_row, table)`` batches of one input file, with a ``__row`` column."""
    kind = input_format(path)
    if kind == ".jsonl":
        yield from _jsonl_batches(path, open)
    elif kind == ".jsonl.gz":
        yield from _jsonl_batches(path, gzip.open)
    elif kind == ".parquet":
        yield from _parquet_batches(path)
    elif kind == ".csv":
        yield from _csv_batches(path)
    else:
        raise InputError(f"{path}: unsupported input format; use one of {', '.join(SUFFIXES)}")
