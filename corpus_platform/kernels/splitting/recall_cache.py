"""The recall check's shingle sets of train rows, kept per split file.

The recall check (:mod:`corpus_platform.kernels.splitting.recall`) compares its sample with
every train row by exact word n-gram Jaccard, without band keys, so it must have every train
row's shingle set. Shingling is most of its cost, and a published split file never changes (an
append adds files beside it), so the check keeps the sets it computed, one Arrow IPC file
(mapped when read) per split file under ``.corpus/cache/recall-shingles/``, named by the split
file's identity (inode, size, modification time: a published file keeps all three; a rebuilt
one has new ones) and the shingle settings. An append then reads the published train rows' sets
and shingles only the new ones. It is the check's own computation (nothing of the dedup
stage's), a cache outside ``data/``: deleting it costs one shingling of train; entries of files
no longer in the split are removed after the check (:func:`prune`). About 8 bytes a shingle.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.arrays import list_parts
from corpus_platform.base.generations import shard_generation_files
from corpus_platform.base.hashing import TextNormalization, fingerprint
from corpus_platform.base.shards import part_path, read_parquet, read_scratch, write_scratch
from corpus_platform.kernels.dedup.minhash import ShingleSets, shingle_sets

CACHE = Path(".corpus") / "cache" / "recall-shingles"
SCHEMA = pa.schema([("doc_id", pa.string()), ("shingles", pa.list_(pa.uint64()))])
BATCH = 2048  # rows shingled together


def entry_name(file: Path, ngram: int, normalization: TextNormalization) -> str:
    """The cache entry of one split file under these shingle settings."""
    info = file.stat()
    settings = json.dumps(asdict(normalization), sort_keys=True)
    parts = [str(info.st_ino), str(info.st_size), str(info.st_mtime_ns), str(ngram), settings]
    return f"{fingerprint(parts)}.arrow"


def _shingled(table: pa.Table, ngram: int, normalization: TextNormalization) -> ShingleSets:
    texts = [t or "" for t in table.column("text").to_pylist()]
    parts = [
        shingle_sets(texts[start : start + BATCH], ngram, normalization)
        for start in range(0, len(texts), BATCH)
    ]
    sizes = np.concatenate([np.diff(p.offsets) for p in parts]) if parts else np.zeros(0)
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(sizes)
    values = np.concatenate([p.values for p in parts]) if parts else np.zeros(0, np.uint64)
    return ShingleSets(values.astype(np.uint64, copy=False), offsets)


def file_sets(
    file: Path, ngram: int, normalization: TextNormalization, cache: Path | None
) -> tuple[list[str], ShingleSets]:
    """The doc ids and shingle sets of one split file's rows: from the cache when it holds
    them, else computed (and kept, when there is a cache)."""
    entry = cache / entry_name(file, ngram, normalization) if cache is not None else None
    if entry is not None and entry.is_file():
        table = read_scratch(entry)  # mapped: the sets are the page cache's pages
        values, offsets = list_parts(table.column("shingles"))
        sets = ShingleSets(values.astype(np.uint64, copy=False), offsets)
        return table.column("doc_id").to_pylist(), sets
    table = read_parquet(file, ["doc_id", "text"])
    sets = _shingled(table, ngram, normalization)
    if entry is not None:
        lists = pa.ListArray.from_arrays(pa.array(sets.offsets), pa.array(sets.values))
        kept = pa.table([table.column("doc_id"), lists], schema=SCHEMA)
        partial = entry.with_name(f"{entry.name}.{os.getpid()}.partial")
        write_scratch(kept, partial)
        partial.replace(entry)  # whole or absent, whatever a reader sees
    return table.column("doc_id").to_pylist(), sets


def prune(
    cache: Path,
    folder: Path,
    num_shards: int,
    ngram: int,
    normalization: TextNormalization,
) -> int:
    """Remove every cache entry but those of the split files in ``folder`` now; return how
    many were removed."""
    if not cache.is_dir():
        return 0
    wanted = {
        entry_name(f, ngram, normalization)
        for shard in range(num_shards)
        for f in shard_generation_files(part_path(folder, shard))
    }
    removed = 0
    for entry in cache.iterdir():
        if entry.name not in wanted:
            entry.unlink(missing_ok=True)
            removed += 1
    return removed
