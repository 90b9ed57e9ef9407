"""The compiled loop of :func:`corpus_platform.kernels.splitting.recall.batch_hits` (numba,
nopython mode).

A batch of train rows against the recall sample in one pass: every shingle is tested in the
sample's bitmap of low bits (without a branch, the passing ones listed); the few that pass are
searched in the sample's sorted shingles, within the bucket of their top bits; every sampled row
holding an equal shingle has its count raised in a dense array, reset through the list of the
rows it touched, so a train row costs its own shingles, not the sample's size. The Jaccard of
each touched pair is then computed as numpy computed it. numpy made a pass over the batch per
step (the bitmap test, two ``searchsorted``, ``repeat``, ``unique``), each allocating arrays the
size of the batch: four times the time (65 ms against 16 ms for the 8,400 train rows, 9.1
million shingles, of one shard of the 100,000-document benchmark against its 200 sampled rows).
``tests/kernels/splitting/test_recall.py`` holds the result to the numpy version: the same
tuples in the same order, the same floats bit for bit.

Imported on first use (:func:`.recall.batch_hits` imports it); numba keeps the machine code in
``__pycache__`` beside this file (``cache=True``). It uses nothing from another file: numba checks
a cached function against its own file only.
"""

from __future__ import annotations

import numba
import numpy as np

LOW_MASK = np.uint64((1 << 24) - 1)  # recall.FILTER_BITS: the bits the bitmap is indexed by
TOP_BITS = 16  # a shingle's top bits index the table of where its bucket starts
TOP_SHIFT = np.uint64(64 - TOP_BITS)


@numba.njit(cache=True, nogil=True)
def _bucket_starts(shingles: np.ndarray) -> np.ndarray:
    """Where each value of the top ``TOP_BITS`` bits starts in the sorted ``shingles`` (one more
    entry: the end), so a search looks at one bucket (a few entries), not the whole array:
    counted, then summed (a walk comparing each shingle with the next bucket took five times
    as long)."""
    starts = np.zeros((1 << TOP_BITS) + 1, np.int64)
    for k in range(len(shingles)):
        starts[np.int64(shingles[k] >> TOP_SHIFT) + 1] += 1
    for b in range(1, len(starts)):
        starts[b] += starts[b - 1]
    return starts


@numba.njit(cache=True, nogil=True)
def _lower_bound(sorted_values: np.ndarray, value: np.uint64, lo: int, hi: int) -> int:
    """The first index of ``sorted_values[lo:hi]`` not below ``value`` (``searchsorted``, left;
    exact for the whole array when every value before ``lo`` is below ``value`` and every value
    from ``hi`` on is not)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_values[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def batch_hits(
    values: np.ndarray,
    offsets: np.ndarray,
    shingles: np.ndarray,
    owners: np.ndarray,
    sample_sizes: np.ndarray,
    bitmap: np.ndarray,
    threshold: float,
    min_shingles: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, sampled row, Jaccard) of every pair of a train row (``values[offsets[i]:
    offsets[i + 1]]``) and a sampled row sharing a shingle, with Jaccard at or above
    ``threshold`` and both sets of ``min_shingles`` n-grams or more; ordered by row, then
    sampled row (numpy's ``unique`` over row * width + owner gave that order)."""
    width = len(sample_sizes)
    shared = np.zeros(width, np.int64)  # shingles each sampled row shares with the current row
    touched = np.empty(width, np.int64)  # the sampled rows whose count is not zero
    # the batch's shingles that pass the bitmap, found without a branch: about 1% pass, and a
    # branch per shingle, mispredicted, doubled the time of this loop (most of the whole)
    rows = len(offsets) - 1
    first, last = (offsets[0], offsets[rows]) if rows > 0 else (0, 0)
    maybe = np.empty(last - first, np.int64)
    m = 0
    for j in range(first, last):
        low = np.int64(values[j] & LOW_MASK)
        maybe[m] = j
        m += (np.int64(bitmap[low >> 3]) >> (low & 7)) & 1
    capacity = 64
    out_row = np.empty(capacity, np.int64)
    out_owner = np.empty(capacity, np.int64)
    out_jaccard = np.empty(capacity, np.float64)
    found = 0
    end = len(shingles)
    starts = _bucket_starts(shingles)
    i = 0
    for r in range(rows):
        size = np.int64(offsets[r + 1] - offsets[r])
        n = 0
        while i < m and maybe[i] < offsets[r + 1]:  # the row's shingles that passed
            value = values[maybe[i]]
            i += 1
            bucket = np.int64(value >> TOP_SHIFT)
            k = _lower_bound(shingles, value, starts[bucket], starts[bucket + 1])
            while k < end and shingles[k] == value:  # one entry per sampled row holding it
                owner = owners[k]
                if shared[owner] == 0:
                    touched[n] = owner
                    n += 1
                shared[owner] += 1
                k += 1
        if n == 0:
            continue
        mine = np.sort(touched[:n])
        for t in range(n):
            owner = mine[t]
            common = shared[owner]
            shared[owner] = 0
            other = np.int64(sample_sizes[owner])
            union = size + other - common
            jaccard = common / union if union > 0 else 0.0
            if jaccard >= threshold and min(size, other) >= min_shingles:
                if found == capacity:
                    capacity *= 2
                    out_row = _grown(out_row, capacity)
                    out_owner = _grown(out_owner, capacity)
                    out_jaccard = _grown(out_jaccard, capacity)
                out_row[found] = r
                out_owner[found] = owner
                out_jaccard[found] = jaccard
                found += 1
    return out_row[:found], out_owner[:found], out_jaccard[:found]


@numba.njit(cache=True, nogil=True)
def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    """``array`` copied into a longer one of ``capacity`` items."""
    bigger = np.empty(capacity, array.dtype)
    bigger[: len(array)] = array
    return bigger
