"""The compiled loop of the filter's n-gram ids (numba): a factorization one document at a time.

:func:`corpus_platform.kernels.filtering.textstats.ngram_scores` numbers every word n-gram of a
batch with ``factorize(previous id * vocabulary + next word's code)``, ids in order of first
appearance. The keys are scoped to their document (unigram keys hold the document's number,
every later key an id of the same document), so no key occurs in two documents, and a batch's
positions come document by document. The numbering is therefore the same when each document's
keys are numbered in a small hash table of their own, continuing from the last document's
highest id: a table of a few thousand slots stays in the CPU's cache, where one table for the
whole batch (pandas' ``factorize``, a million keys and more) misses it on almost every key.
``tests/kernels/filtering/test_textstats_compiled.py`` holds the result to ``pandas.factorize``.
Imported on first use; numba keeps the machine code in ``__pycache__`` beside this file.
"""

from __future__ import annotations

import numba
import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the key times 2**64 / phi


@numba.njit(cache=True, nogil=True, inline="always")
def _segment_end(owner: np.ndarray, start: int) -> int:
    end = start + 1
    while end < len(owner) and owner[end] == owner[start]:
        end += 1
    return end


@numba.njit(cache=True, nogil=True, inline="always")
def _table_bits(length: int) -> int:
    bits = 1
    while (1 << bits) < 2 * length:
        bits += 1
    return bits


@numba.njit(cache=True, nogil=True)
def segmented_factorize(keys: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """``pandas.factorize(keys)[0]`` (int64 ids in order of first appearance) for keys that
    never occur under two owners; ``owner``: each key's document, non-decreasing."""
    size = len(keys)
    ids = np.empty(size, np.int64)
    longest = 0
    start = 0
    while start < size:
        end = _segment_end(owner, start)
        longest = max(longest, end - start)
        start = end
    slots = 1 << _table_bits(max(longest, 1))
    table_keys = np.empty(slots, np.int64)
    table_ids = np.full(slots, -1, np.int64)
    filled = np.empty(slots, np.int64)
    next_id = 0
    start = 0
    while start < size:
        end = _segment_end(owner, start)
        bits = _table_bits(end - start)
        mask = (1 << bits) - 1
        shift = np.uint64(64 - bits)
        used = 0
        for i in range(start, end):
            key = keys[i]
            slot = np.int64((np.uint64(key) * GOLDEN) >> shift)
            while table_ids[slot] >= 0 and table_keys[slot] != key:
                slot = (slot + 1) & mask
            if table_ids[slot] < 0:
                table_keys[slot] = key
                table_ids[slot] = next_id
                filled[used] = slot
                used += 1
                next_id += 1
            ids[i] = table_ids[slot]
        for j in range(used):
            table_ids[filled[j]] = -1
        start = end
    return ids


@numba.njit(cache=True, nogil=True)
def factorize_codes(codes: np.ndarray, owner: np.ndarray, vocabulary: int) -> np.ndarray:
    """:func:`segmented_factorize` of the unigram keys ``owner * vocabulary + codes`` (``codes``
    in ``[0, vocabulary)``, ``owner`` non-decreasing): a word's code indexes its last document
    and its id there directly, no hash table (the first round of the n-gram ids, over every
    word of the batch)."""
    seen_in = np.full(vocabulary, -1, np.int64)
    id_of = np.empty(vocabulary, np.int64)
    ids = np.empty(len(codes), np.int64)
    next_id = 0
    for i in range(len(codes)):
        code = codes[i]
        if seen_in[code] != owner[i]:
            seen_in[code] = owner[i]
            id_of[code] = next_id
            next_id += 1
        ids[i] = id_of[code]
    return ids
