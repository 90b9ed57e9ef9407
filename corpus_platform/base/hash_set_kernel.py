"""The compiled loops of :class:`corpus_platform.base.word_hashes.HashSet` (numba, nopython).

An open-addressing table of 64-bit values (linear probing, Fibonacci hashing of the value, at
most half full; 0 marks an empty slot, so the value 0 is kept beside the table). Imported on
first use; numba keeps the machine code in ``__pycache__`` beside this file (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / the golden ratio: spreads any bits to the top


@numba.njit(cache=True, nogil=True)
def build(values: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """The table of ``values`` (uint64), its size in bits, and whether 0 is among them."""
    bits = 4
    while (1 << bits) < 2 * len(values):
        bits += 1
    table = np.zeros(1 << bits, np.uint64)
    mask = (1 << bits) - 1
    has_zero = False
    for value in values:
        if value == 0:
            has_zero = True
            continue
        slot = np.int64((value * GOLDEN) >> np.uint64(64 - bits))
        while table[slot] != 0 and table[slot] != value:
            slot = (slot + 1) & mask
        table[slot] = value
    return table, bits, has_zero


@numba.njit(cache=True, nogil=True)
def contains(values: np.ndarray, table: np.ndarray, bits: int, has_zero: bool) -> np.ndarray:
    """For each of ``values``, whether the table holds it."""
    out = np.empty(len(values), np.bool_)
    mask = (1 << bits) - 1
    for i in range(len(values)):
        value = values[i]
        if value == 0:
            out[i] = has_zero
            continue
        slot = np.int64((value * GOLDEN) >> np.uint64(64 - bits))
        found = False
        while True:
            held = table[slot]
            if held == value:
                found = True
                break
            if held == 0:
                break
            slot = (slot + 1) & mask
        out[i] = found
    return out
