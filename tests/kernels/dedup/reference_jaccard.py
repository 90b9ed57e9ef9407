"""Exact Jaccard similarity on Python sets: an independent reference implementation used as an
oracle for ``corpus_platform.kernels.dedup.verify.sorted_jaccard`` (the verification's Jaccard
on sorted hash arrays) and for the scores the dedup and split stages write."""

from __future__ import annotations

from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.kernels.dedup.minhash import shingle_sets


def shingle_set(
    text: str, size: int, normalization: TextNormalization = DEFAULT_NORMALIZATION
) -> frozenset[int]:
    """64-bit hashes of the distinct word shingles of a text (as the stage hashes them)."""
    return frozenset(shingle_sets([text], size, normalization).values.tolist())


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    """Exact Jaccard similarity of two shingle sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0
