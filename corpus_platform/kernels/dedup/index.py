"""The index of published rows: what an append compares its new rows with.

``deduplicated_documents/index/`` holds, per logical shard and generation, one row per filtered
row the stage has seen (kept or dropped): its doc id, its exact key and its LSH band keys (one
uint64 per band, null for a row without text). It is the whole memory of the published rows an
append needs to find candidates (:mod:`corpus_platform.kernels.dedup.append`): about 8 bytes a
band, the exact key and the doc id a row, a few hundred bytes a document whatever its length
(:func:`index_bytes`). Candidates are then verified by exact Jaccard on the rows' texts, as in a
build from scratch, so the index holds neither shingles nor signatures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import generation_path
from corpus_platform.base.shards import (
    HASH_FILE_OPTIONS,
    part_path,
    read_parquet,
    shard_files,
    write_parquet,
)
from corpus_platform.kernels.dedup.params import DedupParams

INDEX = "index"  # the side table's folder in deduplicated_documents
LOW_32 = np.uint64(0xFFFFFFFF)


def index_schema(bands: int) -> pa.Schema:
    """The index's columns for a layout of ``bands`` bands."""
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("key", pa.string()),
            ("bands", pa.list_(pa.uint64(), bands)),
        ]
    )


def band_matrix(scratch: Path, shard: int, params: DedupParams, rows: int) -> np.ndarray:
    """The band keys of one scratch shard's sketched rows as a ``(rows, bands)`` matrix, row
    ``i`` being the ``i``-th sketched row (its position)."""
    matrix = np.zeros((rows, params.bands[0]), dtype=np.uint64)
    for group in range(len(params.band_groups())):
        table = read_parquet(part_path(scratch / "bands" / f"group-{group}", shard))
        positions = (table.column("row").to_numpy() & LOW_32).astype(np.int64)
        bands = table.column("band").to_numpy().astype(np.int64)
        matrix[positions, bands] = table.column("key").to_numpy()
    return matrix


def index_table(scratch: Path, shard: int, params: DedupParams) -> pa.Table:
    """The index rows of one shard sketched into ``scratch`` (its ``keys``, ``positions`` and
    ``bands`` files, :func:`~corpus_platform.kernels.dedup.signatures.sketch_table`), sorted by
    doc id."""
    keys = read_parquet(part_path(scratch / "keys", shard), ["doc_id", "key"])
    positions = read_parquet(part_path(scratch / "positions", shard), ["doc_id"]).column(0)
    bands = params.bands[0]
    matrix = band_matrix(scratch, shard, params, len(positions))
    flat = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1), pa.uint64()), bands)
    where = pc.index_in(keys.column("doc_id"), value_set=positions.combine_chunks())
    table = pa.table(
        {"doc_id": keys.column("doc_id"), "key": keys.column("key"), "bands": flat.take(where)},
        schema=index_schema(bands),
    )
    return table.sort_by("doc_id")


def write_index_shard(
    shard: int, scratch: Path, out: Path, params: DedupParams, generation: int
) -> int:
    """Write the index rows of one scratch shard as generation ``generation`` of ``out`` (an
    engine task); return how many."""
    table = index_table(scratch, shard, params)
    write_parquet(table, generation_path(out, shard, generation), **HASH_FILE_OPTIONS)
    return len(table)


def index_bytes(index: Path, num_shards: int) -> int:
    """Bytes on disk of every generation of the index."""
    return sum(
        f.stat().st_size
        for shard in range(num_shards)
        if part_path(index, shard).exists()
        for f in shard_files(part_path(index, shard))
    )


def band_columns(table: pa.Table, bands: int) -> np.ndarray | None:
    """The band keys of index rows as a ``(rows, bands)`` matrix (rows without text: zeros,
    never a key), or None for no rows."""
    if not len(table):
        return None
    column = table.column("bands").combine_chunks()
    filled = pc.fill_null(column, pa.scalar([0] * bands, column.type))
    return filled.flatten().to_numpy(zero_copy_only=False).reshape(-1, bands)
