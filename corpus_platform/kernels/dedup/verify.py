"""Step 3: every candidate pair verified by exact Jaccard (or the MinHash estimate), one block
(pair of shards) per engine task."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import (
    DEFAULT_NORMALIZATION,
    TextNormalization,
    shard_of,
)
from corpus_platform.base.shards import (
    HASH_FILE_OPTIONS,
    iter_batches,
    part_path,
    read_parquet,
    write_batches,
    write_parquet,
)
from corpus_platform.kernels.dedup.candidates import block_candidates, block_of, candidate_blocks
from corpus_platform.kernels.dedup.params import DedupParams
from corpus_platform.kernels.dedup.signatures import SKETCH_SCHEMA
from corpus_platform.kernels.engine import Engine, LocalEngine
from corpus_platform.kernels.minhash import shingle_sets


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair with its Jaccard similarity and the rows' entities."""

    doc_a: str
    doc_b: str
    entity_a: str
    entity_b: str
    similarity: float


def shingle_set(
    text: str, size: int, normalization: TextNormalization = DEFAULT_NORMALIZATION
) -> frozenset[int]:
    """64-bit hashes of the distinct word shingles of a text."""
    return frozenset(shingle_sets([text], size, normalization).values.tolist())


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    """Exact Jaccard similarity of two shingle sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


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


def _read_sketches(
    path: Path, wanted: pa.Array | None, field: str
) -> dict[str, tuple[str, np.ndarray]]:
    found = {}
    for batch in iter_batches(path, ["doc_id", "entity", field]):
        if wanted is not None:
            batch = batch.filter(pc.is_in(batch.column("doc_id"), wanted))
        if not batch.num_rows:
            continue
        ids, entities = (batch.column(c).to_pylist() for c in ("doc_id", "entity"))
        values = batch.column(field).combine_chunks()
        if field == "signature":
            rows = [np.frombuffer(b, dtype=np.uint32) for b in values.to_pylist()]
        else:  # offsets index the list's whole value buffer, whatever the slice
            flat, ends = values.values.to_numpy(zero_copy_only=False), values.offsets.to_numpy()
            rows = [flat[ends[i] : ends[i + 1]] for i in range(len(ids))]
        found.update(zip(ids, zip(entities, rows, strict=True), strict=True))
    return found


def load_sketches(
    scratch: Path, shard: int, wanted: set[str], field: str
) -> dict[str, tuple[str, np.ndarray]]:
    """(entity, ``field``) of the ``wanted`` rows of one shard, streamed batch by batch;
    ``field`` is ``"shingles"`` (sorted shingle hashes) or ``"signature"`` (MinHash)."""
    keep = pa.array(sorted(wanted), pa.string())
    return _read_sketches(part_path(scratch / "sketches", shard), keep, field)


def _field(params: DedupParams) -> str:
    return "shingles" if params.verify else "signature"


def blocks_of_shard(shard: int, num_shards: int) -> list[int]:
    """The verification blocks (pairs of shards) that involve ``shard``."""
    return sorted({block_of(shard, other, num_shards) for other in range(num_shards)})


def extract_candidate_sketches(
    shard: int, scratch: Path, num_shards: int, params: DedupParams
) -> int:
    """Copy the sketches of ``shard``'s rows that are in a candidate pair to
    ``candidate-sketches/``, so each block's verification reads only those; return their
    number. An engine task: one pass over the shard's sketch file."""
    wanted: set[str] = set()
    for block in blocks_of_shard(shard, num_shards):
        table = block_candidates(scratch, block)
        for column in ("doc_a", "doc_b"):
            wanted.update(
                d for d in table.column(column).to_pylist() if shard_of(d, num_shards) == shard
            )
    keep = pa.array(sorted(wanted), pa.string())
    field = _field(params)
    schema = pa.schema([SKETCH_SCHEMA.field(name) for name in ("doc_id", "entity", field)])
    batches = (
        batch.filter(pc.is_in(batch.column("doc_id"), keep)).select(schema.names)
        for batch in iter_batches(part_path(scratch / "sketches", shard), schema.names)
    )
    return write_batches(
        batches, schema, part_path(scratch / "candidate-sketches", shard), **HASH_FILE_OPTIONS
    )


SCORED_SCHEMA = pa.schema(
    [
        ("doc_a", pa.string()),
        ("doc_b", pa.string()),
        ("entity_a", pa.string()),
        ("entity_b", pa.string()),
        ("similarity", pa.float64()),
    ]
)


def score_block(block: int, scratch: Path, num_shards: int, params: DedupParams) -> int:
    """Score one block's candidate pairs (exact Jaccard of their shingle sets, or the MinHash
    estimate when ``params.verify`` is off) into ``scored/``; return the pairs scored. An
    engine task: the candidate rows of two shards in memory."""
    pairs = block_candidates(scratch, block)
    field = _field(params)
    measure = sorted_jaccard if params.verify else estimated_jaccard
    rows: dict[str, tuple[str, np.ndarray]] = {}
    for shard in sorted(set(divmod(block, num_shards))):
        rows.update(_read_sketches(part_path(scratch / "candidate-sketches", shard), None, field))
    firsts, seconds = pairs.column("doc_a").to_pylist(), pairs.column("doc_b").to_pylist()
    entity_a, entity_b, similarity = [], [], []
    for a, b in zip(firsts, seconds, strict=True):
        (first_entity, x), (second_entity, y) = rows[a], rows[b]
        entity_a.append(first_entity)
        entity_b.append(second_entity)
        similarity.append(measure(x, y))
    table = pa.table([firsts, seconds, entity_a, entity_b, similarity], schema=SCORED_SCHEMA)
    write_parquet(table, part_path(scratch / "scored", block))
    return len(table)


def score_candidates(
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    engine: Engine | None = None,
    min_similarity: float = 0.0,
) -> tuple[int, list[ScoredPair]]:
    """Score every candidate pair written under ``scratch/candidates``, on the engine one block
    (pair of shards) per task; return how many were scored and those at or above
    ``min_similarity``, in sorted pair order (only these come back to the caller)."""
    engine = engine or LocalEngine()
    task = partial(
        extract_candidate_sketches, scratch=scratch, num_shards=num_shards, params=params
    )
    engine.map_shards(task, range(num_shards))
    blocks = candidate_blocks(scratch)
    counts = engine.map_shards(
        partial(score_block, scratch=scratch, num_shards=num_shards, params=params), blocks
    )
    scored = []
    for block in blocks:
        table = read_parquet(part_path(scratch / "scored", block))
        table = table.filter(pc.greater_equal(table.column("similarity"), min_similarity))
        columns = (table.column(c).to_pylist() for c in SCORED_SCHEMA.names)
        scored += [ScoredPair(*row) for row in zip(*columns, strict=True)]
    scored.sort(key=lambda p: (p.doc_a, p.doc_b))
    return sum(counts), scored
