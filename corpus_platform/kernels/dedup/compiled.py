"""The compiled loop of :mod:`corpus_platform.kernels.dedup.minhash` (numba, nopython mode).

MinHash signatures row by row: datasketch's affine32 arithmetic (MurmurHash3's 32-bit
finalizer of a shingle's low 32 bits, then ``a * h + b`` modulo 2^32, the least value per
permutation), with a row's running minimums held in the CPU's cache and the permutation loop
vectorized by the compiler. numpy needed a (permutation x shingle) matrix per chunk of rows and a
``minimum.reduceat`` over it: about four times the time (0.37 to 0.49 s against 0.105 s for the
signatures of 8,192 benchmark documents, 128 permutations). ``tests/kernels/dedup/test_minhash.py``
holds the result to datasketch's.

Shingle hashes too: each text's windows hashed in one pass (a rolling polynomial, then the
avalanche), written end to end, and each row made distinct once sorted. The sort between them
stays numpy's (vectorized, AVX-512 where the CPU has it): 12 ms for the rows of 4,096 benchmark
documents against 18 ms for a bucket-and-insertion sort here, 26 ms for an LSD radix sort and
150 ms for numba's own ``sort``.

Imported on first use (:func:`.minhash.signatures` and :func:`.minhash.normalized_shingle_sets`
import it); numba keeps the machine code in ``__pycache__`` beside this file (``cache=True``).
It uses nothing from another file: numba checks a cached function against its own file only.
"""

from __future__ import annotations

import numba
import numpy as np

FMIX32_1, FMIX32_2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)  # MurmurHash3's finalizer
MAX32 = np.uint32(0xFFFFFFFF)
# minhash.NGRAM_BASE and base.arrays' MIX_1, MIX_2 (MurmurHash3's 64-bit finalizer), copied:
# a cached kernel must not read another file's constants.
NGRAM_BASE = np.uint64(0x100000001B3)
MIX_1, MIX_2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
SHIFT = np.uint64(33)


@numba.njit(cache=True, nogil=True)
def signatures(values: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One MinHash signature per row (``len(a)`` uint32): for each permutation, the least
    ``a * fmix32(low 32 bits) + b`` modulo 2^32 over the row's shingles (2^32 - 1, datasketch's
    empty value, for a row without any)."""
    rows = len(offsets) - 1
    num_perm = len(a)
    out = np.empty((rows, num_perm), np.uint32)
    least = np.empty(num_perm, np.uint32)
    for r in range(rows):
        least[:] = MAX32
        for j in range(offsets[r], offsets[r + 1]):
            x = np.uint32(values[j] & np.uint64(0xFFFFFFFF))
            x = np.uint32(x ^ (x >> np.uint32(16)))
            x = np.uint32(x * FMIX32_1)
            x = np.uint32(x ^ (x >> np.uint32(13)))
            x = np.uint32(x * FMIX32_2)
            x = np.uint32(x ^ (x >> np.uint32(16)))
            for p in range(num_perm):
                permuted = np.uint32(a[p] * x + b[p])
                if permuted < least[p]:
                    least[p] = permuted
        out[r, :] = least
    return out


@numba.njit(cache=True, nogil=True)
def _avalanche64(x: np.uint64) -> np.uint64:
    """``base.arrays.avalanche64`` of one value."""
    x ^= x >> SHIFT
    x *= MIX_1
    x ^= x >> SHIFT
    x *= MIX_2
    return x ^ (x >> SHIFT)


@numba.njit(cache=True, nogil=True)
def shingle_windows(
    words: np.ndarray, counts: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every text's shingle hashes, unsorted, and their offsets (text ``i``'s are
    ``values[offsets[i]:offsets[i + 1]]``): each window of ``size`` of its ``counts[i]`` words
    (``words`` end to end), or one shingle of all its words when it has fewer (``size >= 1``).

    The polynomial rolls: a window's is the previous one's less its first word's term, times the
    base, plus the new word, which over 2^64 is the same number as evaluating it anew. The hashes
    overwrite ``words`` itself (read before they are overwritten: each row's hashes end before
    the next row's words begin) unless empty texts early in the batch would make a row's
    hashes pass its words: a second array of the batch's size costs 12 ms of fresh pages for
    4,096 benchmark documents, more than the hashing itself (9 ms)."""
    rows = len(counts)
    offsets = np.empty(rows + 1, np.int64)
    offsets[0] = 0
    start = 0
    in_place = True
    for r in range(rows):
        offsets[r + 1] = offsets[r] + (counts[r] - size + 1 if counts[r] >= size else 1)
        start += counts[r]
        in_place &= offsets[r + 1] <= start
    values = words if in_place else np.empty(offsets[rows], np.uint64)
    leading = np.uint64(1)  # the base to the power size - 1: a window's first word's factor
    for _ in range(size - 1):
        leading *= NGRAM_BASE
    start = 0
    for r in range(rows):
        count, at = counts[r], offsets[r]
        gram = np.uint64(0)
        for k in range(start, start + min(count, size)):
            gram = gram * NGRAM_BASE + words[k]
        leaving = words[start] if count else np.uint64(0)  # read before values[at] is written
        values[at] = _avalanche64(gram + np.uint64(min(count, size)))
        for k in range(start + size, start + count):  # the window of words k - size + 1 to k
            gram = (gram - leaving * leading) * NGRAM_BASE + words[k]
            leaving = words[k - size + 1]
            at += 1
            values[at] = _avalanche64(gram + np.uint64(size))
        start += count
    return values, offsets


@numba.njit(cache=True, nogil=True)
def distinct_rows(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The offsets of the rows of ``values`` (each sorted) once each keeps one of every value,
    compacted in place to lie end to end again. Every value is written and the end moves past
    it only when it is new: no branch to mispredict."""
    compacted = np.empty(len(offsets), np.int64)
    compacted[0] = 0
    at = np.uint64(0)  # unsigned: no check for a negative index on every store (half the time)
    for r in range(len(offsets) - 1):
        if offsets[r] == offsets[r + 1]:
            compacted[r + 1] = at
            continue
        previous = ~values[offsets[r]]  # unlike the row's first value
        for j in range(np.uint64(offsets[r]), np.uint64(offsets[r + 1])):
            value = values[j]
            values[at] = value
            at += np.uint64(value != previous)
            previous = value
        compacted[r + 1] = at
    return compacted
