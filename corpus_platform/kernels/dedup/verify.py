"""Step 3: every candidate pair verified by exact Jaccard (or the MinHash estimate)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
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
    iter_batches,
    part_path,
)
from corpus_platform.kernels.dedup.params import DedupParams
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


def load_sketches(
    scratch: Path, shard: int, wanted: set[str], field: str
) -> dict[str, tuple[str, np.ndarray]]:
    """(entity, ``field``) of the ``wanted`` rows of one shard, streamed batch by batch;
    ``field`` is ``"shingles"`` (sorted shingle hashes) or ``"signature"`` (MinHash)."""
    keep = pa.array(sorted(wanted), pa.string())
    found = {}
    for batch in iter_batches(part_path(scratch / "sketches", shard), ["doc_id", "entity", field]):
        batch = batch.filter(pc.is_in(batch.column("doc_id"), keep))
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


class SketchCache:
    """Candidate rows' sketches per shard, kept while they fit in ``budget_bytes`` (least
    recently used shard evicted first), so verification reads each shard once when the
    candidates fit in memory and stays within the budget when they do not."""

    def __init__(self, scratch: Path, wanted: dict[int, set[str]], field: str, budget_bytes: int):
        self.scratch, self.wanted, self.field, self.budget = scratch, wanted, field, budget_bytes
        self.loaded: dict[int, dict[str, tuple[str, np.ndarray]]] = {}
        self.sizes: dict[int, int] = {}

    def shard(self, shard: int) -> dict[str, tuple[str, np.ndarray]]:
        """The wanted rows of ``shard`` (loaded, and others evicted, as needed)."""
        if shard in self.loaded:
            self.loaded[shard] = self.loaded.pop(shard)  # most recently used last
            return self.loaded[shard]
        rows = load_sketches(self.scratch, shard, self.wanted[shard], self.field)
        size = sum(values.nbytes for _, values in rows.values())
        while self.loaded and sum(self.sizes.values()) + size > self.budget:
            oldest = next(iter(self.loaded))
            del self.loaded[oldest], self.sizes[oldest]
        self.loaded[shard], self.sizes[shard] = rows, size
        return rows


def score_pairs(
    pairs: list[tuple[str, str]],
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    memory_mb: int = 1024,
) -> list[ScoredPair]:
    """Score candidate pairs: exact Jaccard of their shingle sets (the MinHash estimate when
    ``params.verify`` is off), in sorted pair order.

    Pairs are taken block by block, one pair of shards at a time; the candidate rows' sketches
    are kept in a :class:`SketchCache` of ``memory_mb``.
    """
    blocks: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    wanted: dict[int, set[str]] = defaultdict(set)
    for a, b in pairs:
        shard_a, shard_b = shard_of(a, num_shards), shard_of(b, num_shards)
        blocks[(min(shard_a, shard_b), max(shard_a, shard_b))].append((a, b))
        wanted[shard_a].add(a)
        wanted[shard_b].add(b)
    field, measure = (
        ("shingles", sorted_jaccard) if params.verify else ("signature", estimated_jaccard)
    )
    cache = SketchCache(scratch, wanted, field, memory_mb << 20)
    scored = []
    for (first, second), block in sorted(blocks.items()):
        mine, theirs = cache.shard(first), cache.shard(second)  # held for the block
        for a, b in block:
            (entity_a, x), (entity_b, y) = (
                (mine if a in mine else theirs)[a],
                (mine if b in mine else theirs)[b],
            )
            scored.append(ScoredPair(a, b, entity_a, entity_b, measure(x, y)))
    scored.sort(key=lambda p: (p.doc_a, p.doc_b))
    return scored
