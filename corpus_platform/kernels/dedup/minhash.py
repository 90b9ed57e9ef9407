"""Word n-gram shingles, MinHash signatures and LSH band keys for a batch of texts.

The arithmetic is datasketch's: the signature of a row equals
``datasketch.MinHash(num_perm, seed)`` (its default ``affine32`` scheme: a MurmurHash3
finalizer, then ``a * h + b`` modulo 2^32 with datasketch's own permutations) updated with the
row's 32-bit shingle hashes; ``tests/kernels/dedup/test_minhash.py`` checks it against
datasketch.
What changes is the loop: a whole batch is hashed by compiled code (:mod:`.compiled`, numba)
instead of a Python call per shingle and per document, which is where datasketch spends its
time; band keys are a few numpy operations.

A shingle is the hash of ``size`` consecutive normalized words, built from 64-bit word hashes
(xxh3) by a polynomial over 2^64 and a final avalanche; texts of fewer words than ``size`` give
one shingle of all their words. The 64-bit shingle hashes are also the sets that exact Jaccard
verification compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
from datasketch import MinHash

from corpus_platform.base.arrays import MIX_2, avalanche64
from corpus_platform.base.hashing import TextNormalization
from corpus_platform.base.word_hashes import word_hashes

NGRAM_BASE = np.uint64(0x100000001B3)  # FNV-1a's 64-bit prime: the polynomial's base


@dataclass(frozen=True)
class ShingleSets:
    """Sorted distinct 64-bit shingle hashes of a batch of texts, as one flat array.

    Row ``i``'s shingles are ``values[offsets[i]:offsets[i + 1]]`` (Arrow's list layout).
    """

    values: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> np.ndarray:
        """The shingle hashes of row ``i``."""
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    @classmethod
    def of_rows(cls, rows: list[np.ndarray]) -> ShingleSets:
        """The sets whose row ``i`` is ``rows[i]`` (each sorted and distinct already)."""
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(r) for r in rows])
        values = np.concatenate(rows) if rows else np.empty(0, dtype=np.uint64)
        return cls(values.astype(np.uint64, copy=False), offsets)


def shingle_sets(texts: list[str], size: int, normalization: TextNormalization) -> ShingleSets:
    """The sorted distinct word ``size``-gram hashes of every text."""
    return normalized_shingle_sets([normalization.spaced(t) for t in texts], size)


def normalized_shingle_sets(normalized: Sequence[str] | pa.Array, size: int) -> ShingleSets:
    """:func:`shingle_sets` of texts already normalized (as dedup does once per row), or of texts
    with the same whitespace words (:meth:`TextNormalization.spaced`).

    Each text's windows of ``size`` words are hashed by compiled code
    (:func:`.compiled.shingle_windows`, over the word hashes' own array); a text of fewer words
    is one shingle of all its words (an empty text one shingle of none). Each text's shingles are
    then sorted by numpy, row by row in place, and made distinct (:func:`.compiled.distinct_rows`):
    0.10 s for 4,096 benchmark documents where whole-batch numpy arrays and a row's
    ``distinct`` took 0.18 s. ``values`` is a view of a buffer that may be somewhat longer.
    """
    if size < 1:
        raise ValueError(f"a shingle has at least one word, not {size}")
    from corpus_platform.kernels.dedup import compiled  # numba: on first use only

    words, counts = word_hashes(normalized)  # xxh3 of each word, one compiled pass
    values, offsets = compiled.shingle_windows(words, counts, size)
    for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        values[start:end].sort()  # numpy's vectorized sort: faster than any tried in numba
    offsets = compiled.distinct_rows(values, offsets)
    return ShingleSets(values[: offsets[-1]], offsets)


@cache
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's affine32 permutation parameters ``(a, b)`` for ``num_perm`` and ``seed``."""
    a, b = MinHash(num_perm=num_perm, seed=seed).permutations
    return a.astype(np.uint32), b.astype(np.uint32)


def signatures(sets: ShingleSets, num_perm: int, seed: int) -> np.ndarray:
    """One MinHash signature (``num_perm`` uint32) per row, from the low 32 bits of its
    shingle hashes, row by row in compiled code (:func:`.compiled.signatures`)."""
    from corpus_platform.kernels.dedup import compiled  # numba: on first use only

    a, b = permutations(num_perm, seed)
    return compiled.signatures(sets.values, sets.offsets, a, b)


def band_keys(signature_rows: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """A 64-bit key per (row, band): a hash of that band's slice of the signature, salted by the
    band number so equal slices in different bands do not share a key."""
    sliced = signature_rows[:, : bands * rows].reshape(len(signature_rows), bands, rows)
    keys = np.zeros((len(signature_rows), bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(rows):
            keys = keys * NGRAM_BASE + sliced[:, :, j].astype(np.uint64)
        return avalanche64(keys + np.arange(1, bands + 1, dtype=np.uint64) * MIX_2)
