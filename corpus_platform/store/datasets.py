"""Stage folders of sharded Parquet files, written as a candidate and renamed into place.

A dataset is ``data/<asset>/part-00000.parquet ...`` (one file per logical shard, every shard
present even when empty) with optional subfolders for side tables. Nothing run-specific is
written inside a stage folder, so two runs on the same inputs produce identical bytes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.kernels.hashing import shard_of

MANIFEST = "_manifest.json"
STAGE_ROOT = "data"


def stage_path(root: Path, asset: str) -> Path:
    """The published folder of a stage in the project at ``root``: ``data/<asset>``."""
    return root / STAGE_ROOT / asset


def part_name(shard: int) -> str:
    """File name of a logical shard."""
    return f"part-{shard:05d}.parquet"


def part_path(folder: Path, shard: int) -> Path:
    """Path of a logical shard inside a dataset folder."""
    return folder / part_name(shard)


PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}  # fixed: byte-identical files
# Scratch files of hashes (sketches, band keys): random 64-bit values neither compress nor
# dictionary-encode, and trying costs more time to write and read than it saves.
HASH_FILE_OPTIONS = {"compression": "none", "use_dictionary": False}


def write_parquet(table: pa.Table, path: Path, **options: object) -> None:
    """Write ``table`` with fixed options so equal tables give byte-identical files;
    ``options`` (e.g. :data:`HASH_FILE_OPTIONS`) override the defaults."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **{**PARQUET_OPTIONS, **options})


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


def iter_batches(path: Path, columns: list[str], batch_size: int = 4096) -> Iterator[pa.Table]:
    """Stream a Parquet file in batches of at most ``batch_size`` rows."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: dataset file missing; materialize the upstream asset first"
        )
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns):
        yield pa.Table.from_batches([batch])


def write_sharded(table: pa.Table, folder: Path, num_shards: int) -> None:
    """Write a side table as one file per logical shard of its ``doc_id`` (all shards present)."""
    shards = np.array(
        [shard_of(d, num_shards) for d in table.column("doc_id").to_pylist()], dtype=np.int64
    )
    for shard in range(num_shards):
        write_parquet(table.filter(pa.array(shards == shard)), part_path(folder, shard))


def count_rows(folder: Path, num_shards: int) -> int:
    """Rows in every shard of a dataset, from the Parquet footers (no data read)."""
    return sum(pq.ParquetFile(part_path(folder, s)).metadata.num_rows for s in range(num_shards))


def read_all_shards(folder: Path, num_shards: int) -> pa.Table:
    """Every shard of a (small) side table, concatenated in shard order."""
    return pa.concat_tables([table for _, table in iter_shards(folder, num_shards)])


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """Read one Parquet file; a missing file is an error that names it."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: dataset file missing; materialize the upstream asset first"
        )
    return pq.read_table(path, columns=columns)


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


def candidate_path(final: Path) -> Path:
    """Where the candidate of the stage folder ``final`` is written: ``.staging-<name>`` beside
    it, on the same filesystem, so publishing it is a rename."""
    return final.parent / f".staging-{final.name}"


@contextmanager
def candidate_folder(final: Path) -> Iterator[Path]:
    """Yield an empty candidate folder for ``final`` (a leftover one is removed first).

    On any exception the candidate is removed; on success it stays for the audit, and
    :func:`promote` makes it ``final``. ``final`` is never touched here.
    """
    staging = candidate_path(final)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def promote(final: Path) -> None:
    """Replace ``final`` by its candidate (renames only: the old folder is moved aside first and
    removed last)."""
    staging, previous = candidate_path(final), final.parent / f".previous-{final.name}"
    if previous.exists():
        shutil.rmtree(previous)
    if final.exists():
        final.rename(previous)
    staging.rename(final)
    if previous.exists():
        shutil.rmtree(previous)


def recover_stage_folders(root: Path) -> list[str]:
    """Clean what an interrupted build left under ``data/``; return one line per action.

    A leftover candidate (``.staging-<asset>``) is removed. A ``.previous-<asset>`` is a
    published folder moved aside by :func:`promote`: it is put back when ``<asset>`` is missing
    (the build died between the two renames), else removed.
    """
    data, actions = root / STAGE_ROOT, []
    if not data.is_dir():
        return actions
    for leftover in sorted(data.glob(".staging-*")):
        shutil.rmtree(leftover)
        actions.append(f"removed the unfinished candidate {leftover.relative_to(root)}")
    for previous in sorted(data.glob(".previous-*")):
        final = data / previous.name.removeprefix(".previous-")
        if final.exists():
            shutil.rmtree(previous)
            actions.append(f"removed {previous.relative_to(root)} (already replaced)")
        else:
            previous.rename(final)
            actions.append(f"restored {final.relative_to(root)} from an interrupted publish")
    return actions
