"""Step 1, per shard: exact keys, shingles, MinHash signatures and LSH band keys."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import stable_hex, stable_hexes
from corpus_platform.base.shards import (
    HASH_FILE_OPTIONS,
    part_path,
    read_shard,
    scratch_part_path,
    write_parquet,
    write_scratch_batches,
)
from corpus_platform.kernels.dedup import minhash
from corpus_platform.kernels.dedup.minhash import ShingleSets
from corpus_platform.kernels.dedup.params import BATCH_ROWS, DedupParams


def sketch(
    normalized: Sequence[str] | pa.Array, params: DedupParams
) -> tuple[ShingleSets, np.ndarray]:
    """The shingle sets and MinHash signatures (one row of ``num_perm`` uint32) of texts
    already normalized by ``params.normalization`` (or with the same whitespace words:
    ``TextNormalization.spaced``)."""
    sets = minhash.normalized_shingle_sets(normalized, params.shingle_size)
    return sets, minhash.signatures(sets, params.num_perm, params.seed)


def normalized_texts(table: pa.Table, params: DedupParams) -> pa.Array:
    """Every row's text normalized as ``dedup.normalization`` says (null where no text), a
    large_string array (:meth:`~corpus_platform.base.hashing.TextNormalization.apply_all`)."""
    return params.normalization.apply_all(table.column("text"))


def exact_keys(
    table: pa.Table, params: DedupParams, normalized: pa.Array | None = None
) -> pa.Array:
    """The exact-duplicate key of every row: the hash of the normalized text for rows with text;
    for rows without text, a hash of the ``dedup.columns`` values (null when none are set).
    ``normalized``: the rows' texts already normalized (:func:`normalized_texts`), if at hand."""
    texts = normalized_texts(table, params) if normalized is None else normalized
    keys = stable_hexes(texts)
    if texts.null_count:
        values = [table.column(c).to_pylist() for c in params.columns]
        for i in np.flatnonzero(texts.is_null().to_numpy(zero_copy_only=False)).tolist():
            if params.columns:
                row = json.dumps([v[i] for v in values], default=str)
                keys[i] = "cols:" + stable_hex(row)
    return pa.array(keys, pa.string())


def _quality(table: pa.Table) -> pa.Array:
    if "quality_score" in table.column_names:
        return pc.fill_null(table.column("quality_score"), 0.0)
    return pa.array(np.ones(len(table)), pa.float64())


POSITION_SCHEMA = pa.schema([("doc_id", pa.string()), ("text_hash", pa.string())])


def text_positions(table: pa.Table) -> pa.Table:
    """Each row's doc id and the hash of its exact text, in the order the rows are sketched (a
    band row's position): what lets a later check reuse the band keys of an unchanged row."""
    hashes = stable_hexes(table.column("text"))
    return pa.table([table.column("doc_id"), pa.array(hashes, pa.string())], schema=POSITION_SCHEMA)


SKETCH_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("entity", pa.string()),
        ("signature", pa.binary()),
        ("shingles", pa.list_(pa.uint64())),
    ]
)
BAND_SCHEMA = pa.schema([("band", pa.int16()), ("key", pa.uint64()), ("row", pa.uint64())])


def _sketch_batches(
    table: pa.Table,
    normalized: pa.Array,
    shard: int,
    params: DedupParams,
    band_rows: list[list[pa.Table]],
) -> Iterator[pa.Table]:
    """Sketch ``table`` (rows with text; ``normalized``: their normalized texts) ``BATCH_ROWS``
    at a time; band keys go to ``band_rows``.

    A band row names its document by ``shard << 32 | position`` in the shard's sketch file, so
    grouping band keys never holds doc id strings.
    """
    bands, rows = params.bands
    for start in range(0, len(table), BATCH_ROWS):
        batch = table.slice(start, BATCH_ROWS)
        sets, sigs = sketch(normalized[start : start + BATCH_ROWS], params)
        keys = minhash.band_keys(sigs, bands, rows)
        positions = (np.uint64(shard) << np.uint64(32)) + np.arange(
            start, start + len(batch), dtype=np.uint64
        )
        for number, group in enumerate(params.band_groups()):
            band_rows[number].append(
                pa.table(
                    {
                        "band": np.tile(
                            np.arange(group.start, group.stop, dtype=np.int16), len(batch)
                        ),
                        "key": keys[:, group.start : group.stop].reshape(-1),
                        "row": np.repeat(positions, len(group)),
                    },
                    schema=BAND_SCHEMA,
                )
            )
        yield pa.table(
            {
                "doc_id": batch.column("doc_id"),
                "entity": batch.column("entity"),
                "signature": pa.array([s.tobytes() for s in sigs], pa.binary()),
                "shingles": pa.ListArray.from_arrays(pa.array(sets.offsets), pa.array(sets.values)),
            },
            schema=SKETCH_SCHEMA,
        )


@dataclass(frozen=True)
class SketchFiles:
    """Where the sketch of one table goes: its exact keys, the positions of its sketched rows,
    its sketches and its band keys (one file per band group)."""

    keys: Path
    positions: Path
    sketches: Path
    bands: tuple[Path, ...]

    @classmethod
    def of_shard(cls, scratch: Path, shard: int, groups: int) -> SketchFiles:
        """The scratch files of shard ``shard`` (what the later dedup steps read)."""
        return cls(
            part_path(scratch / "keys", shard),
            part_path(scratch / "positions", shard),
            scratch_part_path(scratch / "sketches", shard),
            tuple(part_path(scratch / "bands" / f"group-{g}", shard) for g in range(groups)),
        )


def sketch_table(table: pa.Table, number: int, params: DedupParams, out: SketchFiles) -> int:
    """Write the exact keys, the positions of the sketched rows (:func:`text_positions`), the
    sketches and the band keys of ``table`` to ``out``; band rows name their document by
    ``number << 32 | position``. Returns the rows sketched."""
    normalized = normalized_texts(table, params)
    keyed = pa.table(
        {
            "doc_id": table.column("doc_id"),
            "entity": table.column("entity"),
            "key": exact_keys(table, params, normalized),
            "quality_score": _quality(table),
        }
    )
    write_parquet(keyed.filter(pc.is_valid(keyed.column("key"))), out.keys)
    table = table.filter(pc.is_valid(table.column("text")))
    write_parquet(text_positions(table), out.positions)
    band_rows: list[list[pa.Table]] = [[] for _ in params.band_groups()]
    with_text = normalized.filter(normalized.is_valid())
    sketches = _sketch_batches(table, with_text, number, params, band_rows)
    signed = write_scratch_batches(sketches, SKETCH_SCHEMA, out.sketches)
    for path, tables in zip(out.bands, band_rows, strict=True):
        band_table = pa.concat_tables(tables) if tables else BAND_SCHEMA.empty_table()
        write_parquet(band_table, path, **HASH_FILE_OPTIONS)
    return signed


def signature_shard(
    shard: int, upstream: Path, scratch: Path, params: DedupParams, as_shard: int | None = None
) -> int:
    """Write one shard's exact keys, sketches, band keys and the positions of its sketched rows
    (:func:`text_positions`) to ``scratch``; return rows signed.

    ``as_shard``: the number the shard's scratch files (and band rows) carry, when several
    folders are sketched into one scratch (the held-out neighbour search); ``shard`` by default.
    """
    number = shard if as_shard is None else as_shard
    out = SketchFiles.of_shard(scratch, number, len(params.band_groups()))
    return sketch_table(read_shard(upstream, shard), number, params, out)
