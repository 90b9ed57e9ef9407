r"""training_shards: the training mix as WebDataset tar shards and Parquet shards of the same
samples, in one seeded global order, with a manifest.

Samples. A mix row drawn ``k`` times (``times_drawn``) becomes ``k`` samples, draws ``0 .. k-1``,
keyed ``<doc_id>-<draw>``; a doc_id that is not a safe tar member name (letters, digits, ``_``
and ``-``, at most 64 characters: WebDataset cuts the key at the first dot) is replaced by its
readable part and a hash of it (:func:`sample_key`). In a tar a sample is ``<key>.json`` (the
row's metadata: every column but the text, plus ``key`` and ``draw``, canonical JSON) and
``<key>.txt`` (the text, UTF-8). The Parquet shard of the same number holds the same samples in
the same order, with the mix's columns plus ``key`` and ``draw``.

Order. Samples are sorted by ``xxh3("shards" \x1f key, seed)``, ties by key: one order for the
whole mix that depends only on the keys and the seed, never on the mix's shard layout, the
engine or its worker count. Shards cut that sequence into consecutive pieces.

Size cap. Boundaries are planned before anything is written, greedily along the order: a shard
takes the next sample while its tar file (a 512-byte header per member, payloads padded to 512
bytes, the two end-of-archive blocks, all rounded up to 10,240-byte records) stays within
``shards.max_bytes`` and its count within ``shards.max_samples``; a sample larger than the cap
alone gets a shard of its own. The tar is written by :class:`~.ustar.UstarWriter`, the bytes
``webdataset.ShardWriter`` writes at a fraction of ``tarfile``'s cost per member, with a fixed
mtime, owner and mode, uncompressed (gzip would stamp the time), so equal samples give
byte-identical files; its size is asserted equal to the plan.

Steps (:func:`build_shards`), engine tasks: :func:`explode_shard` (per mix shard: samples
without text, keys, sizes, tokens), :func:`plan_shards` (one task, in a worker: order and
boundaries, from an order hash, a key and four numbers a sample), :func:`scatter_shard` (per
mix shard: its samples with their texts, one scratch file per output shard), :func:`write_shard`
(per file of an output shard: its tar or its Parquet file, and its manifest entry).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import utf8_slices
from corpus_platform.base.generations import TEXT, TextSource, read_with_texts
from corpus_platform.base.hashing import stable_hash, stable_hex
from corpus_platform.base.names import PARQUET, WEBDATASET
from corpus_platform.base.shards import (
    SCRATCH_OPTIONS,
    part_path,
    read_parquet,
    read_scratch,
    write_in_order,
    write_parquet,
    write_scratch,
)
from corpus_platform.engine import Engine
from corpus_platform.kernels.mixing.tokens import TokenCounter
from corpus_platform.kernels.sharding.manifest import (
    file_entry,
    generation_entry,
    manifest,
    remember_hashed,
)
from corpus_platform.kernels.sharding.metadata import metadata_jsons
from corpus_platform.kernels.sharding.ustar import write_sample_tar

BLOCK = 512  # tar header and payload granularity
RECORD = 20 * BLOCK  # tarfile pads an archive to whole records
END_OF_ARCHIVE = 2 * BLOCK
TAR_MTIME = 0  # an int: a float mtime makes tarfile add a PAX header
TAR_OWNER = "corpus"
TAR_MODE = 0o444
PARQUET_ROW_GROUP = 1024  # samples per row group: the loader reads only the groups it needs
# The shards' Parquet files leave the platform (releases, exports): zstd, the codec every Parquet
# reader knows, at about half the text's size; the stage files before them are LZ4.
PARQUET_CODEC = {"compression": "zstd"}
SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
JSON_COLUMN = "_json"  # scratch only: the encoded metadata of each sample
TOKENS_COLUMN = "_tokens"  # scratch only: its whitespace words
ROW_COLUMN = "_row"  # scratch only: a sample's row in its mix shard, where its text is


def shard_name(index: int, fmt: str) -> str:
    """File name of output shard ``index`` in ``fmt`` (``webdataset`` or ``parquet``)."""
    return f"train-{index:06d}.{'tar' if fmt == WEBDATASET else 'parquet'}"


def sample_key(doc_id: str, draw: int) -> str:
    """The key of draw ``draw`` of ``doc_id``: ``<doc_id>-<draw>``, or for a doc_id that is no
    safe tar name its readable part, ``_`` and 16 hex digits of its hash."""
    if not SAFE_ID.fullmatch(doc_id):
        readable = re.sub(r"[^A-Za-z0-9_-]", "_", doc_id)[:40]
        doc_id = f"{readable}_{stable_hex(doc_id)[:16]}"
    return f"{doc_id}-{draw}"


def order_hash(key: str, seed: int) -> int:
    """A sample's place in the global order (sorted ascending, ties by key)."""
    return stable_hash(f"shards\x1f{key}", seed)


def member_bytes(payload: int) -> int:
    """Bytes a tar member of ``payload`` bytes takes: its header and its padded payload."""
    return BLOCK + math.ceil(payload / BLOCK) * BLOCK


def tar_file_bytes(members: int) -> int:
    """Size of a tar file whose members take ``members`` bytes."""
    return math.ceil((members + END_OF_ARCHIVE) / RECORD) * RECORD


def count_tokens(texts: Sequence[str | None], counter: TokenCounter | None) -> np.ndarray:
    """The tokens of every text in the mix's unit: ``counter``'s (a tokenizer's token ids) for
    ``mix.unit: tokens``, else whitespace words (``len(text.split())``, 0 for null), counted
    on Python strings by :class:`~corpus_platform.kernels.mixing.tokens.TokenCounter` (the
    shard audit's recount with a tokenizer; its whitespace recount is its own compiled walk)."""
    return np.asarray((counter or TokenCounter()).count(texts), np.int64)


def sample_tokens(texts: pa.Array, counter: TokenCounter | None) -> np.ndarray:
    """:func:`count_tokens` for the writer: whitespace words counted on the texts' bytes
    (:func:`~corpus_platform.base.words.word_counts`); the audit's recount (a walk over code
    points, :mod:`corpus_platform.kernels.sharding.compiled`) is not the writer's own code."""
    return (counter or TokenCounter()).count_column(texts)


def explode_shard(
    shard: int,
    folder: Path,
    scratch: Path,
    seed: int,
    counter: TokenCounter | None = None,
    generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> int:
    """Write mix shard ``shard``'s samples (every draw of every row, with ``key``, ``draw`` and
    the encoded metadata) to ``scratch/samples``, and per sample its order hash, key, tar
    bytes, tokens (counted by ``counter``, the mix's, or as whitespace words without one), this
    shard and its index in that file to :func:`order_path`; return the samples. ``generations``:
    the rows of those mix generations only (every row for None); ``texts``: where their texts
    are (the mix stores none).

    The samples file holds no text: a sample's ``text`` is a null placeholder and ``_row`` its
    row in the mix shard, from which :func:`scatter_shard` takes the text, so a text drawn
    ``k`` times is not written ``k`` times to scratch and read back."""
    table = read_with_texts(folder, shard, texts, generations)
    has_text = TEXT in table.column_names
    column = table.column(TEXT).combine_chunks().cast(pa.string()) if has_text else None
    column = pa.nulls(len(table), pa.string()) if column is None else column
    tokens = sample_tokens(column, counter)
    drawn = table.column("times_drawn").to_numpy().astype(np.int64)
    rows = np.repeat(np.arange(len(table), dtype=np.int64), drawn)
    starts = np.cumsum(drawn) - drawn
    draws = np.arange(len(rows), dtype=np.int64) - np.repeat(starts, drawn)
    samples = table.drop_columns([TEXT] if has_text else []).take(pa.array(rows, pa.int64()))
    doc_ids = samples.column("doc_id").to_pylist()
    keys = [sample_key(d, int(n)) for d, n in zip(doc_ids, draws, strict=True)]
    samples = samples.add_column(0, "draw", pa.array(draws, pa.int32()))
    samples = samples.add_column(0, "key", pa.array(keys, pa.string()))
    encoded = metadata_jsons(samples)
    if has_text:  # in its place among the columns, for write_shard's Parquet file
        where = table.schema.get_field_index(TEXT) + 2  # after key and draw
        samples = samples.add_column(where, pa.field(TEXT, pa.null()), pa.nulls(len(rows)))
    samples = samples.append_column(JSON_COLUMN, pa.array(encoded, pa.binary()))
    samples = samples.append_column(TOKENS_COLUMN, pa.array(np.repeat(tokens, drawn)))
    samples = samples.append_column(ROW_COLUMN, pa.array(rows, pa.int64()))
    write_parquet(samples, part_path(scratch / "samples", shard), **SCRATCH_OPTIONS)
    row_bytes = pc.fill_null(pc.binary_length(column), 0).to_numpy().astype(np.int64)
    text_bytes = np.repeat(row_bytes, drawn)
    json_bytes = np.fromiter((len(e) for e in encoded), np.int64, len(encoded))
    sizes = [
        member_bytes(int(t)) + member_bytes(int(j))
        for t, j in zip(text_bytes, json_bytes, strict=True)
    ]
    order = pa.table(
        {
            "hash": pa.array([order_hash(k, seed) for k in keys], pa.uint64()),
            "key": pa.array(keys, pa.string()),
            "tar_bytes": pa.array(sizes, pa.int64()),
            "tokens": samples.column(TOKENS_COLUMN),
            "mix_shard": pa.array(np.full(len(keys), shard, np.int32)),
            "index": pa.array(np.arange(len(keys), dtype=np.int64)),
        }
    )
    write_parquet(order, order_path(scratch, shard), **SCRATCH_OPTIONS)
    return len(keys)


def order_path(scratch: Path, shard: int) -> Path:
    """Scratch file of mix shard ``shard``'s order rows (:func:`explode_shard`)."""
    return part_path(scratch / "order", shard)


def shard_starts(tar_bytes: Sequence[int], max_bytes: int, max_samples: int | None) -> list[int]:
    """The first position of every shard along the global order (greedy, see the module)."""
    starts: list[int] = []
    members = count = 0
    for position, size in enumerate(tar_bytes):
        full = count >= max_samples if max_samples else False
        if not starts or full or (count and tar_file_bytes(members + size) > max_bytes):
            starts.append(position)
            members = count = 0
        members += size
        count += 1
    return starts


def plan_shards(
    task: int, scratch: Path, num_mix_shards: int, max_bytes: int, max_samples: int | None
) -> list[dict[str, int]]:
    """Order every sample (the order rows :func:`explode_shard` wrote), cut the order into
    shards, and write each mix shard's part of the plan (``index`` -> ``shard``, ``position``)
    to ``scratch/plan``. Return per output shard its samples, tokens and planned tar bytes.

    One engine task (``task`` is 0): on an engine with worker processes the order rows of the
    whole mix, about 100 bytes a sample, are held by a worker, not by the process that runs the
    build, whose memory then stays the same whatever the mix's size."""
    sizes = [read_parquet(order_path(scratch, m)) for m in range(num_mix_shards)]
    table = pa.concat_tables(sizes) if sizes else pa.table({})
    if not len(table):
        for mix_shard in range(len(sizes)):
            write_parquet(_plan_table([], [], []), part_path(scratch / "plan", mix_shard))
        return []
    order = pc.sort_indices(table, sort_keys=[("hash", "ascending"), ("key", "ascending")])
    ordered = table.take(order)
    tar_bytes = ordered.column("tar_bytes").to_numpy()
    starts = shard_starts(tar_bytes.tolist(), max_bytes, max_samples)
    bounds = np.array([*starts, len(ordered)], dtype=np.int64)
    shard_of_position = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(bounds))
    position = np.arange(len(ordered), dtype=np.int64) - np.repeat(bounds[:-1], np.diff(bounds))
    mix_shard = ordered.column("mix_shard").to_numpy()
    index = ordered.column("index").to_numpy()
    for shard in range(len(sizes)):
        mine = np.flatnonzero(mix_shard == shard)
        plan = _plan_table(index[mine], shard_of_position[mine], position[mine])
        write_parquet(plan, part_path(scratch / "plan", shard))
    tokens = ordered.column("tokens").to_numpy()
    return [
        {
            "samples": int(end - start),
            "tokens": int(tokens[start:end].sum()),
            "tar_bytes": tar_file_bytes(int(tar_bytes[start:end].sum())),
        }
        for start, end in pairwise(bounds.tolist())
    ]


def _plan_table(index: Any, shard: Any, position: Any) -> pa.Table:
    return pa.table(
        {
            "index": pa.array(np.asarray(index, np.int64)),
            "shard": pa.array(np.asarray(shard, np.int32)),
            "position": pa.array(np.asarray(position, np.int64)),
        }
    )


def bucket_path(scratch: Path, shard: int, mix_shard: int) -> Path:
    """Scratch file of output shard ``shard``'s samples from mix shard ``mix_shard``: Arrow IPC,
    which :func:`write_shard` maps (its texts stay in the page cache, not in the worker)."""
    return scratch / "buckets" / f"{shard:06d}" / f"part-{mix_shard:05d}.arrow"


def scatter_shard(
    shard: int,
    scratch: Path,
    folder: Path,
    generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> int:
    """Split mix shard ``shard``'s samples by output shard (with their positions) into
    :func:`bucket_path` files, each with its row's text (the rows of the mix in ``folder`` of
    its ``generations``, as :func:`explode_shard` read them, their texts from ``texts``);
    return the samples written."""
    samples = read_parquet(part_path(scratch / "samples", shard))
    plan = read_parquet(part_path(scratch / "plan", shard))
    placed = samples.take(plan.column("index"))
    if TEXT in placed.column_names:
        mix = read_with_texts(folder, shard, texts, generations, ["doc_id"])
        column = mix.column(TEXT).take(placed.column(ROW_COLUMN))
        where = placed.schema.get_field_index(TEXT)
        placed = placed.set_column(where, mix.schema.field(TEXT), column)
    placed = placed.drop_columns([ROW_COLUMN])
    placed = placed.append_column("_position", plan.column("position"))
    targets = plan.column("shard").to_numpy()
    for target in np.unique(targets):
        path = bucket_path(scratch, int(target), shard)
        chosen = placed.filter(pa.array(targets == target))
        write_scratch(chosen, path)
    return len(placed)


PLANNED_SIZES = "planned-tar-bytes.json"  # in scratch: the tar size of every planned shard


FORMATS = (WEBDATASET, PARQUET)  # the files of an output shard, one engine task each


def write_shard(
    task: int,
    scratch: Path,
    staging: Path,
    num_mix_shards: int,
    first_shard: int = 0,
    generation: int = 0,
) -> list[dict[str, Any]]:
    """Write file ``task`` of a generation's output shards, from its buckets in order: shard
    ``task // 2``'s tar (even ``task``) or Parquet file (odd), as shard ``first_shard + task //
    2`` (numbers go on across generations); return its manifest entry. A task a file: with two
    a task, a worker idled beside a generation's short last shard. The tar's planned size
    (``scratch/planned-tar-bytes.json``) is asserted."""
    local, fmt = divmod(task, len(FORMATS))
    shard, fmt = first_shard + local, FORMATS[fmt]
    parts = [
        read_scratch(path)
        for m in range(num_mix_shards)
        if (path := bucket_path(scratch, local, m)).is_file()
    ]
    table = pa.concat_tables(parts)  # the samples in bucket order; written in plan order
    order = pc.sort_indices(table, sort_keys=[("_position", "ascending")]).to_numpy()
    path = staging / shard_name(shard, fmt)
    if fmt == WEBDATASET:
        _write_tar(table, order, path)
        planned = json.loads((scratch / PLANNED_SIZES).read_text(encoding="utf-8"))
        if path.stat().st_size != planned[local]:
            raise RuntimeError(f"{path}: {path.stat().st_size} bytes, {planned[local]} planned")
    else:
        skipped = (JSON_COLUMN, TOKENS_COLUMN, "_position")
        columns = [c for c in table.column_names if c not in skipped]
        write_in_order(table.select(columns), order, path, PARQUET_ROW_GROUP, **PARQUET_CODEC)
    tokens = int(pc.sum(table.column(TOKENS_COLUMN)).as_py() or 0)
    return [file_entry(path, shard, fmt, len(table), tokens) | {"generation": generation}]


def _write_tar(table: pa.Table, order: np.ndarray, tar: Path) -> None:
    """The samples of ``table`` in ``order``, a ``.json`` and a ``.txt`` member each."""
    texts = table.column(TEXT) if TEXT in table.column_names else pa.nulls(len(table), pa.string())
    keys = table.column("key").take(order).to_pylist()
    metas = table.column(JSON_COLUMN).take(order).to_pylist()
    samples = zip(keys, utf8_slices(texts, order), metas, strict=True)
    write_sample_tar(tar, samples, TAR_OWNER, TAR_MODE, TAR_MTIME)


def build_shards(
    mix: Path,
    staging: Path,
    scratch: Path,
    num_shards: int,
    seed: int,
    max_bytes: int,
    max_samples: int | None,
    engine: Engine,
    counter: TokenCounter | None = None,
    generation: int = 0,
    first_shard: int = 0,
    mix_generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> dict[str, Any]:
    """Write the shards of the mix in ``mix`` (``num_shards`` logical shards; its rows' texts
    from ``texts``) into ``staging`` (``scratch`` must be an empty folder); return the manifest
    (the caller writes it). Token counts are ``counter``'s (the mix's tokenizer), or whitespace
    words without one. An append writes the rows of the mix generations ``mix_generations``
    alone, as generation ``generation`` of the shards, numbered from ``first_shard`` (the whole
    manifest: :func:`~corpus_platform.kernels.sharding.manifest.extend_manifest`)."""
    mix_shards, rows = range(num_shards), {"generations": mix_generations, "texts": texts}
    explode = partial(explode_shard, folder=mix, scratch=scratch, seed=seed, counter=counter)
    engine.map_shards(partial(explode, **rows), mix_shards)
    planner = partial(plan_shards, scratch=scratch, num_mix_shards=num_shards)
    plan = engine.map_shards(partial(planner, max_bytes=max_bytes, max_samples=max_samples), [0])[0]
    engine.map_shards(partial(scatter_shard, scratch=scratch, folder=mix, **rows), mix_shards)
    planned = json.dumps([p["tar_bytes"] for p in plan])
    (scratch / PLANNED_SIZES).write_text(planned, encoding="utf-8")
    task = partial(write_shard, scratch=scratch, staging=staging, num_mix_shards=num_shards)
    task = partial(task, first_shard=first_shard, generation=generation)
    files = range(len(plan) * len(FORMATS))  # each shard's tar, then its Parquet file
    written = [e for entries in engine.map_shards(task, files) for e in entries]
    remember_hashed(written)
    tars = [e for e in written if e["format"] == WEBDATASET]
    return manifest(written, seed, max_bytes, max_samples, [generation_entry(generation, tars)])
