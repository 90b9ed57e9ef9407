"""The held-out neighbour search of a split built from scratch, shared by the split and its check.

``no_train_neighbour_of_held_out_rows`` looks for held-out rows with a train row at or above the
split's threshold among every pair of rows that share a band key across train and a held-out
split, a large bucket included. The dedup stage links a bucket of more than ``MAX_BUCKET_PAIRS``
rows as a star (every row with its smallest), so a pair of two other rows of such a bucket is
never verified and never linked: left alone, the split could place it across splits and be
rejected by its own check (license texts copied across hundreds of packages did). The split
therefore runs the check's search on its candidate and links what it finds
(:func:`corpus_platform.defs.splitting.assets.link_missed_neighbours`): one search, the same
candidates, so the check of the split it publishes finds nothing the split did not place
together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.hashing import ids_by_shard
from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS, SPLITS
from corpus_platform.base.shards import count_rows, rows_with_ids
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.dedup.minhash import shingle_sets
from corpus_platform.kernels.dedup.verify import SCORED_SCHEMA, sorted_jaccard
from corpus_platform.kernels.splitting.leakage import NeighbourReport, held_out_neighbours
from corpus_platform.kernels.splitting.neighbours import (
    held_out_neighbours_from_bands,
    reusable_groups,
)
from corpus_platform.store import band_cache
from corpus_platform.store.snapshots import current_snapshot

HELD_OUT = ("validation", "test")
# the last search of a candidate in this process, by the candidate's files (path, inode, size,
# modification time) and the config: the check of a candidate the split just searched reads it
_LAST: dict[tuple, NeighbourSearch] = {}


def _identity(corpus: CorpusProject, candidate: Path) -> tuple:
    files = []
    for path in sorted(candidate.rglob("*")):
        if path.is_file():
            info = path.stat()
            files.append((path.relative_to(candidate).as_posix(), info.st_ino, info.st_size))
            files.append(info.st_mtime_ns)
    return (str(candidate.resolve()), corpus.load().model_dump_json(), tuple(files))


@dataclass(frozen=True)
class NeighbourSearch:
    """What the search found, which band keys it used and the threshold it applied."""

    report: NeighbourReport
    source: str
    params: DedupParams


def search_held_out_neighbours(corpus: CorpusProject, candidate: Path) -> NeighbourSearch:
    """Held-out rows of the split in ``candidate`` with a train row at or above the split's
    threshold (both texts with ``split.min_link_shingles``), from the band keys the dedup stage
    grouped for the snapshot the split was built from (rows it did not sketch with the same text
    are sketched here); without them (another layout, a fresh clone) every split row is sketched
    afresh. A candidate searched before in this process, its files unchanged, gives that
    search's result."""
    dedup_id = current_snapshot(corpus.root_path, corpus.stage_dir(DEDUPLICATED_DOCUMENTS))
    kept = band_cache.band_keys_of(corpus.root_path, dedup_id)
    key = (*_identity(corpus, candidate), str(kept))
    if key in _LAST:
        return _LAST[key]
    config = corpus.load()
    rows = sum(count_rows(candidate / name, config.num_shards) for name in SPLITS)
    params = DedupParams.from_config(config).for_rows(rows, config.engine.memory_mb)
    engine = corpus.engine(config)
    groups = reusable_groups(kept / "bands", params, config.num_shards) if kept else None
    with corpus.scratch("held-out-neighbours") as scratch:
        if kept is not None and groups is not None:
            report, fresh = held_out_neighbours_from_bands(
                candidate, config.num_shards, params, HELD_OUT, kept, groups, scratch, engine
            )
            source = f"band keys of {DEDUPLICATED_DOCUMENTS} {dedup_id} ({fresh} rows sketched)"
        else:
            report = held_out_neighbours(
                candidate, config.num_shards, params, HELD_OUT, scratch, engine
            )
            source = "every split row sketched afresh"
    _LAST.clear()
    _LAST[key] = NeighbourSearch(report, source, params)
    return _LAST[key]


def shard_rows(
    shard: int, wanted: dict[int, set[str]], candidate: Path, params: DedupParams
) -> dict[str, tuple[str | None, np.ndarray]]:
    """The entity and shingle set of shard ``shard``'s rows in ``wanted``, from every split of
    ``candidate`` (an engine task: a shard's text column is read a row group at a time and
    shingled where it is read, in a worker, not in the Dagster process)."""
    found: dict[str, tuple[str | None, np.ndarray]] = {}
    for name in SPLITS:
        table = rows_with_ids(candidate / name, shard, wanted[shard], ["doc_id", "entity", "text"])
        ids, entities, texts = (table.column(c).to_pylist() for c in ("doc_id", "entity", "text"))
        sets = shingle_sets([t or "" for t in texts], params.shingle_size, params.normalization)
        for i, (doc_id, entity) in enumerate(zip(ids, entities, strict=True)):
            found[doc_id] = (entity, sets.row(i))
    return found


def neighbour_links(
    candidate: Path,
    num_shards: int,
    pairs: list[tuple[str, str]],
    params: DedupParams,
    engine: Engine,
) -> pa.Table:
    """The pairs (held-out row, train row) as similar pairs the split links: their rows'
    entities and shingle sets from ``candidate`` (read and shingled by ``engine``'s tasks, a
    shard each) and their exact Jaccard, sorted."""
    wanted = dict(ids_by_shard({d for pair in pairs for d in pair}, num_shards))
    task = partial(shard_rows, wanted=wanted, candidate=candidate, params=params)
    rows = {d: row for found in engine.map_shards(task, sorted(wanted)) for d, row in found.items()}
    ordered = sorted((min(a, b), max(a, b)) for a, b in pairs)
    similarity = [sorted_jaccard(rows[a][1], rows[b][1]) for a, b in ordered]
    return pa.table(
        {
            "doc_a": [a for a, _ in ordered],
            "doc_b": [b for _, b in ordered],
            "entity_a": [rows[a][0] for a, _ in ordered],
            "entity_b": [rows[b][0] for _, b in ordered],
            "similarity": similarity,
        },
        schema=SCORED_SCHEMA,
    )
