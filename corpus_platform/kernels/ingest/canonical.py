"""Raw ingest: map input columns onto the canonical schema and spread rows over logical shards.

:func:`canonicalize_file` streams one input file batch by batch and canonicalizes each batch.
An input file whose rows fit in half of ``engine.memory_mb`` (the common case: a raw file is a
few hundred MB) is kept in memory and its file of every shard written at once, rows ordered by
``doc_id``. A larger one is spilled: its rows go to per-shard spill files, and
:func:`assemble_shard` later reads one shard's spill files and writes that batch's file of the
shard, so memory stays bounded by a batch and a shard, not the file. Both ways write the same
bytes (:func:`_write_batch_file`); equal inputs give equal shards whatever the order work was
done in; a batch's files never change once written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import one_array
from corpus_platform.base.files import Identity, hashed_md5
from corpus_platform.base.hashing import content_hashes, shard_of
from corpus_platform.base.names import batch_key
from corpus_platform.base.shards import (
    batch_part_path,
    iter_shards,
    read_scratch,
    write_parquet,
    write_scratch,
)
from corpus_platform.config import CorpusConfig
from corpus_platform.kernels.ingest.licences import LICENSE, row_licences
from corpus_platform.kernels.ingest.readers import Decoding, InputError, ReadStats, read_batches


def canonical_schema(features: tuple[str, ...], licensed: bool = False) -> pa.Schema:
    """The schema every stage after ingest builds on (with a ``license`` column when the
    config records licences: :attr:`CorpusConfig.records_licences`)."""
    fields = [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("text", pa.string()),
        pa.field("source", pa.string(), nullable=False),
        pa.field("entity", pa.string(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        *[pa.field(name, pa.float64()) for name in features],
        pa.field("label", pa.float64()),
        pa.field("url", pa.string()),
        *([pa.field(LICENSE, pa.string(), nullable=False)] if licensed else []),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("raw_file", pa.string(), nullable=False),
        pa.field("raw_row", pa.int64(), nullable=False),
    ]
    return pa.schema(fields)


@dataclass(frozen=True)
class BatchContext:
    """Where a batch came from, for error messages and lineage columns."""

    path: Path
    relative: str


def _column(
    table: pa.Table, name: str | None, ctx: BatchContext, canonical: str
) -> pa.Array | None:
    if name is None:
        return None
    if name not in table.column_names:
        raise InputError(
            f"{ctx.path}: column {name!r} (mapped to {canonical!r} in corpus.yaml) is missing; "
            f"the file has {sorted(c for c in table.column_names if c != '__row')}. "
            "Fix the mapping under input.columns or the file"
        )
    return one_array(table.column(name))


def _first_bad_row(rows: pa.Array, bad: np.ndarray) -> int:
    return int(rows.to_numpy()[np.flatnonzero(bad)[0]])


def _as_strings(
    values: pa.Array, rows: pa.Array, ctx: BatchContext, canonical: str, required: bool
) -> pa.Array:
    strings = pc.cast(values, pa.string()) if values.type != pa.string() else values
    if required and strings.null_count:
        bad = strings.is_null().to_numpy(zero_copy_only=False)
        row = _first_bad_row(rows, bad)
        raise InputError(
            f"{ctx.path}: row {row}: column for {canonical!r} is empty; every row needs a "
            f"{canonical}; fill it in or drop the row"
        )
    return strings


def _as_floats(values: pa.Array, rows: pa.Array, ctx: BatchContext, column: str) -> pa.Array:
    if pa.types.is_floating(values.type) or pa.types.is_integer(values.type):
        return pc.cast(values, pa.float64())
    if pa.types.is_boolean(values.type):
        return pc.cast(pc.cast(values, pa.int8()), pa.float64())
    series = pd.Series(values.to_pylist(), dtype="object")
    parsed = pd.to_numeric(series, errors="coerce")
    bad = parsed.isna().to_numpy() & series.notna().to_numpy()
    if bad.any():
        row = _first_bad_row(rows, bad)
        value = series[np.flatnonzero(bad)[0]]
        raise InputError(
            f"{ctx.path}: row {row}: column {column!r} must be numeric, got {value!r}; "
            "fix the value or remove the column from input.features"
        )
    return pa.array(
        parsed.to_numpy(dtype="float64"), type=pa.float64(), mask=series.isna().to_numpy()
    )


def _as_timestamps(values: pa.Array, rows: pa.Array, ctx: BatchContext, column: str) -> pa.Array:
    target = pa.timestamp("us", tz="UTC")
    if pa.types.is_timestamp(values.type):
        if values.type.tz is None:
            values = pc.assume_timezone(values, "UTC")
        return pc.cast(values, target)
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        micros = pc.cast(pc.multiply(pc.cast(values, pa.float64()), 1e6), pa.int64())
        return pc.cast(micros, pa.timestamp("us")).cast(target)
    series = pd.Series(values.to_pylist(), dtype="object")
    parsed = pd.to_datetime(series, utc=True, errors="coerce", format="ISO8601")
    bad = parsed.isna().to_numpy() & series.notna().to_numpy()
    if bad.any():
        row = _first_bad_row(rows, bad)
        value = series[np.flatnonzero(bad)[0]]
        raise InputError(
            f"{ctx.path}: row {row}: column {column!r} is not a timestamp: {value!r}; "
            "use ISO 8601 (2024-01-31T12:00:00Z) or epoch seconds"
        )
    return pa.array(parsed.dt.as_unit("us"), type=target)


def _licences(table: pa.Table, source: pa.Array, config: CorpusConfig) -> pa.Array:
    """Each row's licence (:func:`row_licences`); a file without the mapped licence column
    gives every row its source's licence."""
    name = config.input.input_name(LICENSE)
    declared = table.column(name).combine_chunks() if name in table.column_names else None
    return row_licences(declared, source, config.licenses.sources)


def canonicalize(table: pa.Table, config: CorpusConfig, ctx: BatchContext) -> pa.Table:
    """Map one raw batch onto the canonical schema, adding content hash and lineage columns.

    Raises:
        InputError: naming the file, the row and the column, with the fix.
    """
    mapping = config.input
    rows = table.column("__row").combine_chunks()
    raw_ids = _column(table, mapping.input_name("doc_id"), ctx, "doc_id")
    doc_id = _as_strings(raw_ids, rows, ctx, "doc_id", required=True)
    n = len(doc_id)

    text_raw = _column(table, mapping.input_name("text"), ctx, "text")
    text = (
        _as_strings(text_raw, rows, ctx, "text", False)
        if text_raw is not None
        else pa.nulls(n, pa.string())
    )

    source_raw = _column(table, mapping.input_name("source"), ctx, "source")
    default_source = ctx.relative.split("/")[-1].split(".")[0]
    source = (
        _as_strings(source_raw, rows, ctx, "source", True)
        if source_raw is not None
        else pa.array([default_source] * n, pa.string())
    )
    entity_raw = _column(table, mapping.input_name("entity"), ctx, "entity")
    entity = (
        _as_strings(entity_raw, rows, ctx, "entity", True) if entity_raw is not None else doc_id
    )

    ts_name = mapping.input_name("timestamp")
    ts_raw = _column(table, ts_name, ctx, "timestamp")
    timestamp = (
        _as_timestamps(ts_raw, rows, ctx, ts_name or "")
        if ts_raw is not None
        else pa.nulls(n, pa.timestamp("us", tz="UTC"))
    )
    features = {
        name: _as_floats(_column(table, name, ctx, name), rows, ctx, name)
        for name in mapping.features
    }
    label_name = mapping.input_name("label")
    label_raw = _column(table, label_name, ctx, "label")
    label = (
        _as_floats(label_raw, rows, ctx, label_name or "")
        if label_raw is not None
        else pa.nulls(n, pa.float64())
    )

    url_raw = _column(table, mapping.input_name("url"), ctx, "url")
    url = (
        _as_strings(url_raw, rows, ctx, "url", False)
        if url_raw is not None
        else pa.nulls(n, pa.string())
    )
    hashes = pa.array(content_hashes(text), pa.string())
    licensed = config.records_licences
    licences = {LICENSE: _licences(table, source, config)} if licensed else {}
    columns = {
        "doc_id": doc_id,
        "text": text,
        "source": source,
        "entity": entity,
        "timestamp": timestamp,
        **features,
        "label": label,
        "url": url,
        **licences,
        "content_hash": hashes,
        "raw_file": pa.array([ctx.relative] * n, pa.string()),
        "raw_row": pc.cast(rows, pa.int64()),
    }
    return pa.table(columns, schema=canonical_schema(mapping.features, licensed))


def spill_dir(staging: Path, shard: int) -> Path:
    """Scratch folder for one shard's spilled batches."""
    return staging / "_spill" / f"{shard:05d}"


Hashed = tuple[tuple[str, Identity | None], ...]  # each written file's MD5 and identity read


@dataclass(frozen=True)
class FileSummary:
    """What reading one input file found.

    Attributes:
        rows: Rows read.
        replaced_chars: Undecodable bytes replaced with U+FFFD (``input.decode_errors: replace``).
        licences: Rows per licence, when recorded.
        spilled: Its rows were spilled: :func:`assemble_shard` writes its files.
        hashed: The MD5 and identity of each file written while reading it (none when spilled).
    """

    rows: int
    replaced_chars: int = 0
    licences: dict[str, int] = field(default_factory=dict)
    spilled: bool = field(default=False, compare=False)
    hashed: Hashed = field(default=(), compare=False)


def canonicalize_file(
    file_index: int,
    files: list[Path],
    root: Path,
    config: CorpusConfig,
    staging: Path,
    hold_bytes: int | None = None,
) -> FileSummary:
    """Canonicalize one input file into its file of every shard under ``staging``, or, once its
    rows outgrow ``hold_bytes`` (half of ``engine.memory_mb`` by default), into per-shard spill
    files for :func:`assemble_shard`.

    Returns:
        The rows read, the characters replaced while decoding and what was written.

    Raises:
        InputError: when the file cannot be decoded or parsed, or a row does not fit the schema.
    """
    path = files[file_index]
    ctx = BatchContext(path=path, relative=path.relative_to(root).as_posix())
    decoding = Decoding(config.input.encoding, config.input.decode_errors)
    stats = ReadStats()
    total, licences = 0, Counter[str]()
    held: dict[int, list[tuple[int, pa.Table]]] = {}  # shard -> (batch index, rows)
    budget = config.engine.memory_mb << 19 if hold_bytes is None else hold_bytes
    held_bytes, spilled = 0, False
    for batch_index, (_, raw) in enumerate(read_batches(path, decoding, stats)):
        table = canonicalize(raw, config, ctx)
        if LICENSE in table.column_names:
            licences.update(table.column(LICENSE).to_pylist())
        shards = np.fromiter(
            (shard_of(d, config.num_shards) for d in table.column("doc_id").to_pylist()),
            dtype=np.int64,
            count=len(table),
        )
        for shard in np.unique(shards):
            part = table.filter(pa.array(shards == shard))
            held.setdefault(int(shard), []).append((batch_index, part))
            held_bytes += part.nbytes
        total += len(table)
        if spilled or held_bytes > budget:
            _spill(held, file_index, staging)
            held, held_bytes, spilled = {}, 0, True
    summary = FileSummary(total, stats.replaced_chars, dict(sorted(licences.items())))
    if spilled:
        return replace(summary, spilled=True)
    schema = canonical_schema(config.input.features, config.records_licences)
    key = batch_key(ctx.relative)
    hashed = tuple(
        _write_batch_file([part for _, part in held.get(shard, [])], schema, staging, shard, key)
        for shard in range(config.num_shards)
    )
    return replace(summary, hashed=hashed)


def _spill(held: dict[int, list[tuple[int, pa.Table]]], file_index: int, staging: Path) -> None:
    """Write the held rows of one input file to their shards' spill files."""
    for shard, parts in held.items():
        for batch_index, part in parts:
            name = f"{file_index:05d}-{batch_index:06d}.arrow"
            write_scratch(part, spill_dir(staging, shard) / name)


def _write_batch_file(
    pieces: list[pa.Table], schema: pa.Schema, staging: Path, shard: int, key: str
) -> tuple[str, Identity | None]:
    """Write one batch's file of ``shard`` (present even when empty) from its rows in batch
    order, rows ordered by ``doc_id``; its MD5 and identity, read right after writing it while
    its pages are in memory (the raw stage's pin hands DVC those instead of DVC reading every
    byte again in its own, slower loop)."""
    table = pa.concat_tables(pieces) if pieces else schema.empty_table()
    table = table.sort_by([("doc_id", "ascending"), ("raw_row", "ascending")])
    path = batch_part_path(staging, shard, key)
    write_parquet(table, path)
    return hashed_md5(path)


def ingest_counts(names: list[str], summaries: list[FileSummary]) -> dict[str, object]:
    """The raw_documents counts: rows (in total and per file), the characters replaced
    while decoding (in total, and per file for the files that had any) and, when licences are
    recorded, rows per licence (in total and per file)."""
    replaced = {
        n: s.replaced_chars for n, s in zip(names, summaries, strict=True) if s.replaced_chars
    }
    licensed = {n: s.licences for n, s in zip(names, summaries, strict=True) if s.licences}
    total: Counter[str] = sum((Counter(s.licences) for s in summaries), Counter())
    licences = {"rows_per_license": dict(sorted(total.items())), "licenses_per_file": licensed}
    return {
        "rows": sum(s.rows for s in summaries),
        "files": len(names),
        "rows_per_file": {n: s.rows for n, s in zip(names, summaries, strict=True)},
        "replaced_chars": sum(replaced.values()),
        "replaced_chars_per_file": replaced,
        **licences,
    }


@dataclass(frozen=True)
class ShardSummary:
    """What assembling one shard found."""

    shard: int
    rows: int
    hashed: Hashed = ()  # each file's MD5 and identity read


def assemble_shard(
    shard: int, staging: Path, schema: pa.Schema, batches: tuple[tuple[int, str], ...]
) -> ShardSummary:
    """Write one shard's file of every spilled batch (``part-N.parquet/<batch>.parquet``,
    present even when empty) from its spill files, as :func:`canonicalize_file` writes it from
    memory. ``batches`` pairs the input file index the spill files are named by with its batch
    key."""
    folder = spill_dir(staging, shard)
    rows, hashed = 0, []
    for file_index, key in batches:
        spilled = sorted(folder.glob(f"{file_index:05d}-*.arrow")) if folder.is_dir() else []
        pieces = [read_scratch(p) for p in spilled]
        hashed.append(_write_batch_file(pieces, schema, staging, shard, key))
        rows += sum(len(p) for p in pieces)
    return ShardSummary(shard=shard, rows=rows, hashed=tuple(hashed))


def repeated_ids(folder: Path, num_shards: int) -> tuple[int, list[str]]:
    """Rows in a dataset and the doc_ids occurring more than once, sorted. A row's shard is a
    function of its id, so counting shard by shard finds every repeat."""
    rows, repeated = 0, []
    for _, table in iter_shards(folder, num_shards, ["doc_id"]):
        rows += len(table)
        counts = pc.value_counts(table.column("doc_id"))
        repeated += pc.filter(
            counts.field("values"), pc.greater(counts.field("counts"), 1)
        ).to_pylist()
    return rows, sorted(repeated)
