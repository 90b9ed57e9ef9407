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
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import list_parts
from corpus_platform.base.generations import shard_generation_files
from corpus_platform.base.hashing import TextNormalization, fingerprint, stable_hexes
from corpus_platform.base.shards import (
    part_path,
    read_json,
    read_parquet,
    read_scratch,
    write_scratch,
)
from corpus_platform.kernels.dedup.minhash import ShingleSets, shingle_sets
from corpus_platform.kernels.splitting.neighbours import LAYOUT_FILE

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


@dataclass(frozen=True)
class DedupSets:
    """The shingle sets the dedup stage computed for every row with text of the snapshot a
    split was built from, kept with its band keys (:mod:`corpus_platform.store.band_cache`):
    ``positions/`` (doc_id, hash of the exact text) and ``sketches/`` (a ``shingles`` column,
    row for row), one file per shard."""

    folder: Path
    shard: int

    @staticmethod
    def usable(folder: Path | None, ngram: int, normalization: TextNormalization) -> bool:
        """Whether ``folder`` (a band-cache entry) holds sets made with these settings."""
        if folder is None or not (folder / "sketches").is_dir():
            return False
        layout = folder / "bands" / LAYOUT_FILE
        saved = read_json(layout) if layout.is_file() else {}
        return saved.get("shingle_size") == ngram and saved.get("normalization") == asdict(
            normalization
        )

    def sets_of(self, table: pa.Table) -> ShingleSets | None:
        """The sets of the rows of ``table`` (doc_id, text), or None unless the dedup stage
        sketched every one of them with the same exact text."""
        positions = read_parquet(part_path(self.folder / "positions", self.shard))
        at = pc.index_in(table.column("doc_id"), value_set=positions.column("doc_id"))
        if at.null_count:
            return None
        known = positions.column("text_hash").take(at)
        if known.to_pylist() != stable_hexes(table.column("text")):
            return None
        sketches = part_path(self.folder / "sketches", self.shard)
        values, offsets = list_parts(read_parquet(sketches, ["shingles"]).column(0).take(at))
        return ShingleSets(values.astype(np.uint64, copy=False), offsets)


def file_sets(
    file: Path,
    ngram: int,
    normalization: TextNormalization,
    cache: Path | None,
    dedup: DedupSets | None = None,
) -> tuple[list[str], ShingleSets]:
    """The doc ids and shingle sets of one split file's rows: from the cache when it holds
    them, else the dedup stage's (``dedup``, when it sketched every row with the same text),
    else computed; kept in the cache, when there is one."""
    entry = cache / entry_name(file, ngram, normalization) if cache is not None else None
    if entry is not None and entry.is_file():
        table = read_scratch(entry)  # mapped: the sets are the page cache's pages
        values, offsets = list_parts(table.column("shingles"))
        sets = ShingleSets(values.astype(np.uint64, copy=False), offsets)
        return table.column("doc_id").to_pylist(), sets
    table = read_parquet(file, ["doc_id", "text"])
    found = dedup.sets_of(table) if dedup is not None else None
    sets = found if found is not None else _shingled(table, ngram, normalization)
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
