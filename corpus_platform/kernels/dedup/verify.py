"""Step 3: every candidate pair verified by exact Jaccard (or the MinHash estimate), one block
(pair of shard ranges sized by their candidate rows) per engine task."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import list_parts
from corpus_platform.base.shards import (
    iter_scratch,
    part_path,
    read_parquet,
    read_scratch,
    scratch_part_path,
    write_parquet,
    write_scratch,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import gathered, scatter_to
from corpus_platform.kernels.dedup.candidates import (
    candidate_file,
    candidate_groups,
    candidate_ids,
)
from corpus_platform.kernels.dedup.params import DedupParams


def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted arrays of distinct shingle hashes."""
    if len(a) > len(b):
        a, b = b, a
    if len(a) == 0:
        return 1.0 if len(b) == 0 else 0.0
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    common = int(np.count_nonzero(b[at] == a))
    return common / (len(a) + len(b) - common)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The MinHash estimate of Jaccard similarity: the fraction of equal signature slots."""
    return float(np.count_nonzero(a == b)) / len(a)


def read_sketches(
    path: Path, field: str, rows: np.ndarray | None = None
) -> dict[str, tuple[str, np.ndarray]]:
    """(entity, ``field``) of every row of a sketch file (of the rows at positions ``rows``,
    ascending, when given), streamed batch by batch; ``field`` is ``"shingles"`` (sorted shingle
    hashes) or ``"signature"`` (MinHash). Shingle sets are views of the mapped file, not
    copies."""
    found = {}
    start = 0
    for batch in iter_scratch(path, ["doc_id", "entity", field]):
        stop = start + batch.num_rows
        if rows is None:
            chosen = np.arange(batch.num_rows)
        else:
            chosen = rows[np.searchsorted(rows, start) : np.searchsorted(rows, stop)] - start
        start = stop
        if not len(chosen):
            continue
        taken = pa.array(chosen, pa.int64())
        names, entities = (batch.column(c).take(taken).to_pylist() for c in ("doc_id", "entity"))
        if field == "signature":
            values = batch.column(field).take(taken).to_pylist()
            sketches = [np.frombuffer(b, dtype=np.uint32) for b in values]
        else:
            flat, ends = list_parts(batch.column(field))
            sketches = [flat[ends[i] : ends[i + 1]] for i in chosen.tolist()]
        found.update(zip(names, zip(entities, sketches, strict=True), strict=True))
    return found


def _field(params: DedupParams) -> str:
    return "shingles" if params.verify else "signature"


SKETCH_ROW_BYTES = 256  # a candidate row held while scoring, besides its values: id, entity, view
MIN_RANGES = 3  # at least six blocks, so that the workers share the scoring


CANDIDATE_ROWS = pa.schema([("row", pa.int64())])


def candidate_rows_path(scratch: Path, shard: int) -> Path:
    """Where :func:`candidate_bytes` writes the positions of ``shard``'s candidate rows in its
    sketch file."""
    return scratch_part_path(scratch / "candidate-rows", shard)


def candidate_bytes(shard: int, scratch: Path, params: DedupParams) -> int:
    """Write the positions of ``shard``'s rows that are in a candidate pair (in its sketch file,
    ascending) to :func:`candidate_rows_path`, and return the bytes their sketches take while
    scoring: :func:`score_block` takes them from the mapped sketch file by position. An engine
    task: one pass over the shard's doc ids and list offsets.

    The rows used to be copied to a file of their own first: at 100,000 benchmark documents,
    0.4 GB written and read once, of shingle lists the sketch file already holds."""
    keep = candidate_ids(scratch, shard)
    field = _field(params)
    held, start, positions = 0, 0, []
    for batch in iter_scratch(scratch_part_path(scratch / "sketches", shard), ["doc_id", field]):
        chosen = pc.is_in(batch.column("doc_id"), value_set=keep).to_numpy(zero_copy_only=False)
        if field == "signature":
            sizes = pc.binary_length(batch.column(field)).to_numpy(zero_copy_only=False)
        else:
            sizes = 8 * np.diff(list_parts(batch.column(field))[1])
        held += int(np.count_nonzero(chosen)) * SKETCH_ROW_BYTES + int(sizes[chosen].sum())
        positions.append(start + np.flatnonzero(chosen))
        start += batch.num_rows
    rows = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    write_scratch(
        pa.table([rows.astype(np.int64)], schema=CANDIDATE_ROWS),
        candidate_rows_path(scratch, shard),
    )
    return held


def candidate_rows(scratch: Path, shard: int) -> np.ndarray:
    """The positions :func:`candidate_bytes` wrote for ``shard``."""
    return read_scratch(candidate_rows_path(scratch, shard)).column("row").to_numpy()


def shard_ranges(held: list[int], budget: int) -> list[int]:
    """Each shard's range: contiguous runs of shards whose candidate rows take at most
    ``budget`` bytes and at most a third of all (so there are at least :data:`MIN_RANGES`
    when there are that many shards); a shard over that is a range alone. A block of
    verification is a pair of ranges, so each range's rows are read once per range, not once
    per shard."""
    cap = min(budget, -(-sum(held) // MIN_RANGES))
    ranges, current, used = [], 0, 0
    for size in held:
        if ranges and used + size > cap:
            current, used = current + 1, 0
        ranges.append(current)
        used += size
    return ranges


def range_blocks(ranges: list[int]) -> list[tuple[int, int]]:
    """The verification blocks: every pair of ranges (low <= high)."""
    count = max(ranges, default=-1) + 1
    return [(low, high) for low in range(count) for high in range(low, count)]


SCORED_SCHEMA = pa.schema(
    [
        ("doc_a", pa.string()),
        ("doc_b", pa.string()),
        ("entity_a", pa.string()),
        ("entity_b", pa.string()),
        ("similarity", pa.float64()),
    ]
)


PAIR_SCHEMA = pa.schema([("doc_a", pa.string()), ("doc_b", pa.string())])


def route_candidates(group: int, scratch: Path, ranges: list[int]) -> int:
    """Scatter one band group's candidate pairs to ``blocks/`` by verification block (the pair
    of their rows' shard ranges); return the pairs routed. An engine task."""
    table = read_parquet(candidate_file(scratch, group))
    index = np.asarray(ranges, dtype=np.int64)
    a, b = (index[table.column(c).to_numpy()] for c in ("shard_a", "shard_b"))
    low, high, count = np.minimum(a, b), np.maximum(a, b), int(index.max(initial=-1)) + 1
    block = low * count - low * (low - 1) // 2 + (high - low)  # position in range_blocks
    blocks = count * (count + 1) // 2
    scatter_to(table.select(PAIR_SCHEMA.names), block, scratch / "blocks", group, blocks)
    return len(table)


def score_block(
    block: int,
    scratch: Path,
    ranges: list[int],
    params: DedupParams,
    min_similarity: float = 0.0,
) -> tuple[int, int]:
    """Score the candidate pairs between two shard ranges (exact Jaccard of their shingle
    sets, or the MinHash estimate when ``params.verify`` is off); write those at or above
    ``min_similarity`` to ``scored/``, sorted; return (pairs scored, pairs written). An engine
    task: the candidate rows of two ranges in memory."""
    low, high = range_blocks(ranges)[block]
    pairs = gathered(scratch / "blocks", block, PAIR_SCHEMA)
    pairs = (
        pairs.group_by(PAIR_SCHEMA.names, use_threads=False).aggregate([]).select(PAIR_SCHEMA.names)
    )
    pairs = pairs.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])
    field = _field(params)
    measure = sorted_jaccard if params.verify else estimated_jaccard
    rows: dict[str, tuple[str, np.ndarray]] = {}
    for shard in (s for s, r in enumerate(ranges) if r in (low, high)):
        sketches = scratch_part_path(scratch / "sketches", shard)
        rows.update(read_sketches(sketches, field, candidate_rows(scratch, shard)))
    firsts, seconds = pairs.column("doc_a").to_pylist(), pairs.column("doc_b").to_pylist()
    entity_a, entity_b, similarity = [], [], []
    for a, b in zip(firsts, seconds, strict=True):
        (first_entity, x), (second_entity, y) = rows[a], rows[b]
        entity_a.append(first_entity)
        entity_b.append(second_entity)
        similarity.append(measure(x, y))
    table = pa.table([firsts, seconds, entity_a, entity_b, similarity], schema=SCORED_SCHEMA)
    table = table.filter(pc.greater_equal(table.column("similarity"), min_similarity))
    write_parquet(table, part_path(scratch / "scored", block))
    return len(firsts), len(table)


@dataclass(frozen=True)
class Scored:
    """What :func:`score_candidates` counted: candidate pairs scored, pairs written."""

    candidates: int
    kept: int


def score_candidates(
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    engine: Engine | None = None,
    min_similarity: float = 0.0,
    memory_mb: int = 1024,
) -> Scored:
    """Score every candidate pair written under ``scratch/candidates`` on the engine: the
    bytes of each shard's candidate rows counted, the pairs routed by block (pair of shard
    ranges whose rows fit in a quarter of ``memory_mb`` each), then one task per block; the
    pairs at or above ``min_similarity`` stay on disk under ``scratch/scored``
    (:func:`scored_table`)."""
    engine = engine or LocalEngine()
    for folder in ("scored", "blocks", "candidate-rows"):
        shutil.rmtree(scratch / folder, ignore_errors=True)
    task = partial(candidate_bytes, scratch=scratch, params=params)
    ranges = shard_ranges(engine.map_shards(task, range(num_shards)), (memory_mb << 20) // 4)
    route = partial(route_candidates, scratch=scratch, ranges=ranges)
    engine.map_shards(route, candidate_groups(scratch))
    score = partial(
        score_block, scratch=scratch, ranges=ranges, params=params, min_similarity=min_similarity
    )
    counts = engine.map_shards(score, range(len(range_blocks(ranges))))
    return Scored(sum(c for c, _ in counts), sum(k for _, k in counts))


def scored_table(scratch: Path, min_similarity: float = 0.0) -> pa.Table:
    """The scored pairs at or above ``min_similarity``, sorted by (doc_a, doc_b)."""
    tables = [read_parquet(p) for p in sorted((scratch / "scored").glob("part-*.parquet"))]
    table = pa.concat_tables(tables) if tables else SCORED_SCHEMA.empty_table()
    table = table.filter(pc.greater_equal(table.column("similarity"), min_similarity))
    return table.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")]).combine_chunks()


def scored_blocks(scratch: Path) -> list[int]:
    """The blocks :func:`score_block` wrote."""
    paths = (scratch / "scored").glob("part-*.parquet")
    return sorted(int(p.name.removeprefix("part-").split(".")[0]) for p in paths)


def write_similar_pairs(_: int, scratch: Path, min_similarity: float, out: Path) -> int:
    """Write :func:`scored_table` to ``out`` (an engine task, so the pairs never pass through
    the caller); return its rows."""
    table = scored_table(scratch, min_similarity)
    write_parquet(table, out)
    return len(table)
