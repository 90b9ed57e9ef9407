"""Array helpers shared by the kernels: sorted distinct values, a 64-bit bit mixer."""

from __future__ import annotations

import numpy as np

MIX_1, MIX_2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)


def distinct(values: np.ndarray, runs: bool = False) -> np.ndarray:
    """``values`` sorted, each once: ``np.unique`` without its hash table (numpy 2's default
    for integers), which is several times slower than a sort on long arrays. ``runs``: the
    values come in long ascending runs (keys led by an ascending owner), which a stable sort
    (timsort) merges in about half a quicksort's time."""
    ordered = np.sort(values, kind="stable" if runs else "quicksort")
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def avalanche64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, element-wise (a bijection that spreads every bit)."""
    x = x ^ (x >> np.uint64(33))
    x = x * MIX_1
    x = x ^ (x >> np.uint64(33))
    x = x * MIX_2
    return x ^ (x >> np.uint64(33))
