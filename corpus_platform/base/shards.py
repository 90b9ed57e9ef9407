"""Shard I/O: a dataset is a folder of Parquet files, one per logical shard.

``<folder>/part-00000.parquet ...`` (every shard present even when empty), optional subfolders
for side tables and a ``_manifest.json``. Files are written with fixed options, so equal tables
give byte-identical files and two runs on the same inputs produce identical folders.

A shard of a stage that keeps raw batches apart (``raw_documents``, ``filtered_documents``) is
a folder of the same name holding one file per batch (``part-00003.parquet/<batch>.parquet``,
:func:`batch_part_path`): an append adds files and never rewrites one. Every reader here reads
either form; a shard folder reads as its batch files concatenated in name order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.arrays import chunk_rows
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.unedited import TEXT, columns_to_read, fill

MANIFEST = "_manifest.json"


def part_name(shard: int) -> str:
    """File name of a logical shard."""
    return f"part-{shard:05d}.parquet"


def part_path(folder: Path, shard: int) -> Path:
    """Path of a logical shard inside a dataset folder (a file, or a folder of batch files)."""
    return folder / part_name(shard)


def batch_part_path(folder: Path, shard: int, batch: str) -> Path:
    """The file of batch ``batch`` (a :func:`~corpus_platform.base.names.batch_key`) inside
    logical shard ``shard`` of a dataset kept by batch."""
    return part_path(folder, shard) / f"{batch}.parquet"


def shard_files(path: Path) -> list[Path]:
    """The Parquet files a logical shard is made of: the file itself, or the batch files of a
    shard folder in name order. A missing shard is an error that names it."""
    if path.is_dir():
        files = sorted(path.glob("*.parquet"))
        if files:
            return files
    elif path.is_file():
        return [path]
    raise FileNotFoundError(f"{path}: dataset file missing; materialize the upstream asset first")


def read_schema(path: Path) -> pa.Schema:
    """The schema of a logical shard (file or shard folder)."""
    return pq.read_schema(shard_files(path)[0])


def shard_rows(path: Path) -> int:
    """Rows of a logical shard (file or shard folder), from the Parquet footers."""
    return sum(pq.ParquetFile(f).metadata.num_rows for f in shard_files(path))


# Stage files: fixed options, so equal tables give byte-identical files. LZ4 (Parquet's LZ4_RAW
# codec): a stage's texts are written once and read by every later step that needs them, and
# LZ4 writes them faster than zstd and reads them back twice as fast, in files about 1.6 times
# larger (docs/design-decisions.md, "Stage files are LZ4"). The training shards, which leave
# the platform, keep zstd (kernels/sharding/shards.PARQUET_CODEC).
PARQUET_OPTIONS = {"compression": "lz4", "write_statistics": True}
# Scratch files of hashes (sketches, band keys): random 64-bit values neither compress nor
# dictionary-encode, and trying costs more time to write and read than it saves.
HASH_FILE_OPTIONS = {"compression": "none", "use_dictionary": False}
# Scratch files of rows (spilled batches, a stage's intermediate rows) are written once and read
# once by the next step on the same disk: zstd costs four times the write time and saves nothing.
SCRATCH_OPTIONS = {"compression": "none"}


def write_parquet(table: pa.Table, path: Path, **options: object) -> None:
    """Write ``table`` with fixed options so equal tables give byte-identical files;
    ``options`` (e.g. :data:`HASH_FILE_OPTIONS`) override the defaults."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **{**PARQUET_OPTIONS, **options})


def write_scratch(table: pa.Table, path: Path) -> None:
    """Write a scratch table (written once, read back once on this machine by the next step) as
    an Arrow IPC file: no encoding, no statistics; :func:`read_scratch` maps it."""
    write_scratch_batches([table], table.schema, path)


def scratch_part_path(folder: Path, shard: int) -> Path:
    """Path of shard ``shard``'s Arrow IPC scratch file in ``folder`` (:func:`write_scratch`,
    :func:`write_scratch_batches`)."""
    return folder / f"part-{shard:05d}.arrow"


def write_scratch_batches(tables: Iterable[pa.Table], schema: pa.Schema, path: Path) -> int:
    """Write tables one after another into one Arrow IPC scratch file, so that a reader can
    stream it back batch by batch, mapped (:func:`iter_scratch`); return the rows written.
    No encoding and no statistics: for hashes (shingle sets, signatures) that neither compress
    nor dictionary-encode, written once and read back on this machine, a Parquet file's list
    encoding cost more to write and to decode than the bytes it stored."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as out:
        for table in tables:
            out.write_table(table)
            rows += len(table)
    return rows


def iter_scratch(path: Path, columns: list[str]) -> Iterator[pa.Table]:
    """``columns`` of a scratch file :func:`write_scratch_batches` wrote, record batch by
    record batch, mapped rather than decoded."""
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    for index in range(reader.num_record_batches):
        yield pa.Table.from_batches([reader.get_batch(index)]).select(columns)


def read_scratch(path: Path) -> pa.Table:
    """A table :func:`write_scratch` wrote, memory-mapped rather than decoded: its buffers are
    the page cache's pages the writer left, never fresh memory."""
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def write_batches(
    tables: Iterable[pa.Table], schema: pa.Schema, path: Path, **options: object
) -> int:
    """Write tables one after another into one Parquet file, each its own row group, so a
    reader can stream it back batch by batch; return the rows written. ``options`` as for
    :func:`write_parquet`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with pq.ParquetWriter(path, schema, **{**PARQUET_OPTIONS, **options}) as writer:
        for table in tables:
            writer.write_table(table)
            rows += len(table)
    return rows


def write_in_order(
    table: pa.Table, order: np.ndarray, path: Path, row_group_size: int, **options: object
) -> None:
    """Write the rows of ``table`` in the order ``order`` (row numbers), ``row_group_size`` rows
    a row group, taking one row group's rows at a time: the same file as writing
    ``table.take(order)`` with that row group size, without a reordered copy of the table in
    memory. ``options`` as for :func:`write_parquet`."""
    batches = table.to_batches()
    groups = (
        _take_rows(batches, order[first : first + row_group_size], table.schema)
        for first in range(0, len(order), row_group_size)
    )
    write_batches(groups, table.schema, path, **options)


def _take_rows(batches: list[pa.RecordBatch], rows: np.ndarray, schema: pa.Schema) -> pa.Table:
    """``rows`` (row numbers of the batches end to end) of ``batches``, in that order. Taken
    from each batch on its own: a take from a chunked table copies all its chunks into one
    first, every time (0.75 s for 30 takes of 1,024 rows from 200 MB of texts)."""
    owners, local = chunk_rows([len(b) for b in batches], rows)
    grouped = np.argsort(owners, kind="stable")
    pieces = [
        batches[owner].take(pa.array(local[grouped][owners[grouped] == owner]))
        for owner in np.unique(owners).tolist()
    ]
    picked = pa.Table.from_batches(pieces, schema).combine_chunks()
    return picked.take(np.argsort(grouped))


def iter_batches(path: Path, columns: list[str], batch_size: int = 4096) -> Iterator[pa.Table]:
    """Stream a Parquet file (or a shard folder, file by file) in batches of at most
    ``batch_size`` rows."""
    for file in shard_files(path):
        parquet = pq.ParquetFile(file)
        wanted = columns_to_read(parquet.schema_arrow, columns)
        for batch in parquet.iter_batches(batch_size=batch_size, columns=wanted):
            yield fill(file, pa.Table.from_batches([batch]), columns)


def rows_with_ids(folder: Path, shard: int, doc_ids: Iterable[str], columns: list[str]) -> pa.Table:
    """The rows of one shard whose ``doc_id`` is in ``doc_ids``, streamed a batch at a time so
    that a few rows never cost a whole shard's text in memory. ``columns`` must hold ``doc_id``."""
    keep = pa.array(sorted(set(doc_ids)), pa.string())
    found = [
        batch.filter(pc.is_in(batch.column("doc_id"), keep))
        for batch in iter_batches(part_path(folder, shard), columns)
    ]
    found = [t for t in found if len(t)]
    if not found:
        return read_schema(part_path(folder, shard)).empty_table().select(columns)
    return pa.concat_tables(found)


def write_sharded(table: pa.Table, folder: Path, num_shards: int) -> None:
    """Write a side table as one file per logical shard of its ``doc_id`` (all shards present)."""
    shards = np.array(
        [shard_of(d, num_shards) for d in table.column("doc_id").to_pylist()], dtype=np.int64
    )
    for shard in range(num_shards):
        write_parquet(table.filter(pa.array(shards == shard)), part_path(folder, shard))


def count_rows(folder: Path, num_shards: int) -> int:
    """Rows in every shard of a dataset, from the Parquet footers (no data read)."""
    return sum(shard_rows(part_path(folder, s)) for s in range(num_shards))


def read_all_shards(folder: Path, num_shards: int) -> pa.Table:
    """Every shard of a (small) side table, concatenated in shard order."""
    return pa.concat_tables([table for _, table in iter_shards(folder, num_shards)])


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """Read one Parquet file, or a shard folder as its batch or generation files concatenated in
    name order (a column only later files have is null in the earlier ones); a missing file is
    an error that names it. Texts a file stores elsewhere are put back
    (:mod:`~corpus_platform.base.unedited`)."""
    files = shard_files(path)
    if len(files) == 1:
        return _read_file(files[0], columns)
    tables = [_read_file(f, _present(f, columns)) for f in files]
    table = pa.concat_tables(tables, promote_options="default")  # a later file may add columns
    return table.select(columns) if columns is not None else table


def _read_file(file: Path, columns: list[str] | None) -> pa.Table:
    """One Parquet file's ``columns``, its texts put back where it stores only edited ones."""
    if columns is not None and TEXT not in columns:
        return pq.read_table(file, columns=columns)
    table = pq.read_table(file, columns=columns_to_read(pq.read_schema(file), columns))
    return fill(file, table, columns)


def _present(path: Path, columns: list[str] | None) -> list[str] | None:
    """The ``columns`` that the file at ``path`` holds (all of them when None)."""
    if columns is None:
        return None
    names = set(pq.read_schema(path).names)
    return [c for c in columns if c in names]


def read_shard(folder: Path, shard: int, columns: list[str] | None = None) -> pa.Table:
    """Read one logical shard of a dataset."""
    return read_parquet(part_path(folder, shard), columns)


def iter_shards(
    folder: Path, num_shards: int, columns: list[str] | None = None
) -> Iterator[tuple[int, pa.Table]]:
    """Yield ``(shard, table)`` in shard order; one shard in memory at a time."""
    for shard in range(num_shards):
        yield shard, read_shard(folder, shard, columns)


def write_json(data: Any, path: Path) -> None:
    """Write canonical JSON (sorted keys, fixed separators, trailing newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    """Read a JSON file written by :func:`write_json`."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; materialize the asset that writes it first")
    return json.loads(path.read_text(encoding="utf-8"))


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a published stage folder."""
    return read_json(folder / MANIFEST)
