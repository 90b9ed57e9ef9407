"""Stream raw input files (jsonl, jsonl.gz, parquet, csv) as batches of rows.

Each reader yields ``(first_row, table)`` where ``first_row`` is the 1-based row number of the
table's first row in the file (the line number for jsonl), so every row can be traced back.

Decoding. Text files (jsonl, jsonl.gz, csv) are decoded as :class:`Decoding` says: the codec of
``input.encoding`` and, for bytes that codec cannot decode, ``input.decode_errors``. ``fail``
raises :class:`InputError` naming the file, the line, the byte and the fix; ``replace`` puts one
U+FFFD per undecodable byte and counts them in :class:`ReadStats`. Parquet strings are UTF-8 by
the format's spec: they are validated, and ``replace`` repairs them the same way. Valid UTF-8
read with the defaults takes the native path it always took, so its rows are unchanged.

Every decode or parse error of an input file is an :class:`InputError` naming the file, the
row, line or byte where known, what is wrong and the fix.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import IO

import orjson
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from corpus_platform.kernels.ingest.decoding import (
    BATCH_ROWS,
    CSV_FIX,
    CSV_ROW_FIX,
    ESCAPED,
    GZIP_FIX,
    PARQUET_FIX,
    PARQUET_NESTED_FIX,
    PARQUET_UTF8_FIX,
    REPLACEMENT,
    Decoding,
    InputError,
    Opener,
    ReadStats,
    Utf8Stream,
    decoded_line,
    located_error,
    replace_escaped,
)

SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet", ".csv")


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


# --- jsonl ----------------------------------------------------------------------------------


def _jsonl_batches(
    path: Path, opener: Opener, decoding: Decoding, stats: ReadStats
) -> Iterator[tuple[int, pa.Table]]:
    rows: list[dict] = []
    first = line_no = 0
    binary = codecs.lookup(decoding.encoding).name == "utf-8"  # lines as bytes: _utf8_lines
    try:
        # surrogateescape never changes valid text; it lets the bad line be named and repaired.
        with (
            opener(path, "rb")
            if binary
            else opener(
                path, "rt", encoding=decoding.encoding, errors="surrogateescape", newline=""
            )
        ) as handle:
            for line_no, line in enumerate(_utf8_lines(handle) if binary else handle, start=1):
                record = _line_record(path, line_no, line, decoding, stats)
                if record is None:
                    continue
                rows.append(record)
                if len(rows) == 1:
                    first = line_no
                if len(rows) >= BATCH_ROWS:
                    yield first, _records_table(rows)
                    rows = []
    except UnicodeDecodeError:  # a byte surrogateescape cannot carry (UTF-16 and kin)
        raise InputError(located_error(path, opener, decoding.encoding)) from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise InputError(f"{path}: after line {line_no}: {error}; {GZIP_FIX}") from None
    if rows:
        yield first, _records_table(rows)


LONE_CR = re.compile(rb"(?<=\r)(?!\n)")  # a carriage return that ends a line on its own
ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.strip removes of ASCII


def _utf8_lines(handle: IO[bytes]) -> Iterator[bytes]:
    """The lines of a UTF-8 file as bytes, split where text mode with ``newline=""`` splits
    them (after ``\\n``, ``\\r\\n`` and a lone ``\\r``): no byte of a multi-byte character is
    either, so each line decodes on its own as the whole file would."""
    for line in handle:
        if b"\r" in line and (line.count(b"\r") > 1 or not line.endswith(b"\r\n")):
            yield from (part for part in LONE_CR.split(line) if part)
        else:
            yield line


def _line_record(
    path: Path, line_no: int, line: str | bytes, decoding: Decoding, stats: ReadStats
) -> dict | None:
    """The JSON object of one line; None for a blank line. An ASCII line of a UTF-8 file is
    parsed from its bytes by orjson, which gives what ``json.loads`` gives for a flat object
    (:func:`_as_json_loads`; any other line goes to ``json.loads``, for its result or its
    error); other lines are decoded (undecodable bytes named or replaced) and parsed by
    ``json.loads``."""
    if isinstance(line, bytes):
        if line.isascii():
            if not line.strip(ASCII_SPACE):
                return None
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                record = None
            if not _as_json_loads(record):
                return _json_record(path, line_no, line.decode("ascii"))
            record["__row"] = line_no
            return record
        line = line.decode(decoding.encoding, "surrogateescape")
    text = line if line.isascii() else decoded_line(path, line_no, line, decoding, stats)
    return _json_record(path, line_no, text) if text.strip() else None


BIG = float(2**63)  # orjson gives a float for an integer at or beyond this magnitude


def _as_json_loads(record: object) -> bool:
    """Whether orjson's ``record`` is what ``json.loads`` gives: an object whose values hold no
    integer beyond 64 bits (orjson reads one as a float, ``json.loads`` as an int: a float this
    large may be either, so the line is read again) and no nested object or array."""
    return isinstance(record, dict) and not any(
        isinstance(value, dict | list) or (type(value) is float and not -BIG < value < BIG)
        for value in record.values()
    )


def _json_record(path: Path, line_no: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: line {line_no}: not valid JSON ({error.msg}); fix or remove the line"
        ) from None
    if not isinstance(record, dict):
        raise InputError(f"{path}: line {line_no}: expected a JSON object per line")
    record["__row"] = line_no
    return record


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


# --- parquet --------------------------------------------------------------------------------


def _parquet_batches(
    path: Path, decoding: Decoding, stats: ReadStats
) -> Iterator[tuple[int, pa.Table]]:
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(f"{path}: not a readable Parquet file ({error}); {PARQUET_FIX}") from None
    first = 1
    batches = parquet.iter_batches(batch_size=BATCH_ROWS)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(
                f"{path}: rows from {first}: corrupt Parquet data ({error}); {PARQUET_FIX}"
            ) from None
        if batch is None:
            return
        table = pa.Table.from_batches([_utf8_batch(path, first, batch, decoding, stats)])
        yield first, table.append_column("__row", pa.array(range(first, first + len(table))))
        first += len(table)


def _utf8_batch(
    path: Path, first: int, batch: pa.RecordBatch, decoding: Decoding, stats: ReadStats
) -> pa.RecordBatch:
    """``batch`` once its strings are valid UTF-8: repaired under ``replace``, else named."""
    try:
        batch.validate(full=True)
        return batch
    except pa.ArrowInvalid:
        pass
    columns = [
        _utf8_column(path, first, name, column, decoding, stats)
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    ]
    repaired = pa.RecordBatch.from_arrays(columns, schema=batch.schema)
    try:
        repaired.validate(full=True)
    except pa.ArrowInvalid as error:  # nested strings or damaged buffers
        fix = PARQUET_NESTED_FIX if "utf8" in str(error).lower() else PARQUET_FIX
        raise InputError(
            f"{path}: rows from {first}: invalid Parquet data ({error}); {fix}"
        ) from None
    return repaired


def _utf8_column(
    path: Path, first: int, name: str, column: pa.Array, decoding: Decoding, stats: ReadStats
) -> pa.Array:
    """A top-level string column with invalid UTF-8 replaced, or InputError naming the row."""
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column
    try:
        column.validate(full=True)
        return column
    except pa.ArrowInvalid as error:
        problem = str(error)
    binary = pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
    values = column.cast(binary).to_pylist()
    if decoding.errors == "fail":
        raise InputError(_parquet_string_error(path, first, name, values, problem))
    text = [
        None if v is None else replace_escaped(v.decode("utf-8", "surrogateescape"), stats)
        for v in values
    ]
    return pa.array(text, column.type)


def _parquet_string_error(
    path: Path, first: int, name: str, values: list[bytes | None], problem: str
) -> str:
    """The message naming the first value of a Parquet string column that is not UTF-8."""
    for index, value in enumerate(values):
        try:
            (value or b"").decode("utf-8")
        except UnicodeDecodeError as error:
            where = f"{path}: row {first + index}, column {name!r}, byte offset {error.start}"
            bad = (value or b"")[error.start : error.end]
            return f"{where} in the value: bytes {bad!r} are not valid UTF-8; {PARQUET_UTF8_FIX}"
    return f"{path}: rows from {first}, column {name!r}: {problem}; {PARQUET_FIX}"


# --- csv ------------------------------------------------------------------------------------


def _remember(seen: list[pacsv.InvalidRow], row: pacsv.InvalidRow) -> str:
    """pyarrow's invalid-row handler: keep the row to name it, then stop with an error."""
    seen.append(row)
    return "error"


def _row_line(path: Path, decoding: Decoding, text: str) -> int | None:
    """The line number of the first line of ``path`` reading ``text`` (the start of a row)."""
    wanted = text.split("\n")[0].rstrip("\r")
    try:
        with path.open("rt", encoding=decoding.encoding, errors="surrogateescape", newline="") as f:
            for line_no, line in enumerate(f, start=1):
                if ESCAPED.sub(REPLACEMENT, line).rstrip("\r\n") == wanted:
                    return line_no
    except UnicodeDecodeError:  # a byte surrogateescape cannot carry: no line to name
        return None
    return None


def _csv_error(
    path: Path, first: int, error: pa.ArrowInvalid, invalid: list, decoding: Decoding
) -> str:
    """The message for a CSV pyarrow could not read: the ragged row, the undecodable byte or
    the rows where reading stopped."""
    if invalid:
        row = invalid[0]
        line = _row_line(path, decoding, row.text)
        where = f"line {line}" if line else f"a row from data row {first} on"
        return (
            f"{path}: {where}: expected {row.expected_columns} columns, got "
            f"{row.actual_columns} ({row.text[:80]!r}); {CSV_ROW_FIX}"
        )
    if decoding.native and "utf8" in str(error).lower():  # invalid UTF-8 after the first block
        return located_error(path, open, "utf-8")
    return f"{path}: rows from {first}: not readable as CSV ({error}); {CSV_FIX}"


def _check_utf8_schema(path: Path, schema: pa.Schema) -> None:
    """Raise InputError when pyarrow met invalid UTF-8 in the first block: a bad header name
    does not decode, a bad value types its column binary (later blocks fail to convert)."""
    try:
        binary = [n for n, t in zip(schema.names, schema.types, strict=True) if t == pa.binary()]
    except UnicodeDecodeError:  # in the header
        binary = ["(header)"]
    if binary:
        raise InputError(located_error(path, open, "utf-8"))


def _csv_batches(
    path: Path, decoding: Decoding, stats: ReadStats
) -> Iterator[tuple[int, pa.Table]]:
    first = 1
    invalid: list[pacsv.InvalidRow] = []
    options = pacsv.ReadOptions(block_size=1 << 22)
    parse = pacsv.ParseOptions(invalid_row_handler=partial(_remember, invalid))
    convert = pacsv.ConvertOptions(strings_can_be_null=True)
    source = path if decoding.native else Utf8Stream(path, decoding, stats)
    try:
        reader = pacsv.open_csv(
            source, read_options=options, parse_options=parse, convert_options=convert
        )
        _check_utf8_schema(path, reader.schema)
        for batch in reader:
            table = pa.Table.from_batches([batch])
            yield first, table.append_column("__row", pa.array(range(first, first + len(table))))
            first += len(table)
    except UnicodeDecodeError:  # a byte surrogateescape cannot carry (UTF-16 and kin)
        raise InputError(located_error(path, open, decoding.encoding)) from None
    except pa.ArrowInvalid as error:
        raise InputError(_csv_error(path, first, error, invalid, decoding)) from None
    finally:
        if isinstance(source, Utf8Stream):
            source.close()


def read_batches(
    path: Path, decoding: Decoding | None = None, stats: ReadStats | None = None
) -> Iterator[tuple[int, pa.Table]]:
    """Yield ``(first_row, table)`` batches of one input file, with a ``__row`` column.

    Args:
        path: The input file; its suffix picks the reader.
        decoding: How text files are decoded; strict UTF-8 when omitted.
        stats: Filled in while reading (replaced characters); read it once the batches are done.

    Raises:
        InputError: naming the file, the row, line or byte where known, what is wrong and the
            fix, for any decode or parse error.
    """
    decoding = decoding or Decoding()
    stats = stats if stats is not None else ReadStats()
    kind = input_format(path)
    if kind == ".jsonl":
        yield from _jsonl_batches(path, open, decoding, stats)
    elif kind == ".jsonl.gz":
        yield from _jsonl_batches(path, gzip.open, decoding, stats)
    elif kind == ".parquet":
        yield from _parquet_batches(path, decoding, stats)
    elif kind == ".csv":
        yield from _csv_batches(path, decoding, stats)
    else:
        raise InputError(f"{path}: unsupported input format; use one of {', '.join(SUFFIXES)}")
