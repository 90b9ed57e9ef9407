"""The compiled split behind :func:`corpus_platform.base.words.split_words` (numba, nopython
mode): one walk over a batch's UTF-8 bytes copies every whitespace word's bytes end to end and
records where each word ends, which Arrow then wraps as a string array without another copy.

Whitespace is ``str.split()``'s once the batch has been through
:func:`corpus_platform.base.words.ascii_spaced` (every other whitespace character overwritten
with spaces): the bytes 0x09-0x0d and 0x1c-0x20, looked up in :data:`SPACE`. A word's bytes above
ASCII are never whitespace, so a word is copied byte for byte, whatever its characters.

Self-contained, like every compiled module of the project: numba checks a cached function
against its own file only (see :mod:`corpus_platform.base.word_kernels`). Imported on first use.
"""

from __future__ import annotations

import numba
import numpy as np

SPACE = np.zeros(256, np.bool_)  # the bytes a spaced text splits at
SPACE[0x09:0x0E] = True
SPACE[0x1C:0x21] = True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def split_into_words(
    data: np.ndarray,
    offsets: np.ndarray,
    valid: np.ndarray,
    space: np.ndarray,
    words: np.ndarray,
    ends: np.ndarray,
    counts: np.ndarray,
) -> int:
    """Copy the words of every valid text ``data[offsets[t]:offsets[t + 1]]`` into ``words``,
    end to end, set ``ends[k + 1]`` to where word ``k`` ends there (``ends[0]`` is 0) and
    ``counts[t]`` to text ``t``'s number of words; return the number of words.

    ``words`` must hold the batch's bytes and ``ends`` two more entries than it can have words
    (a word takes a byte and, but for a text's last, a separator)."""
    # Unsigned positions, as in base/normalize_kernel.py: a signed index is wrapped around
    # when negative, a check on every byte that made this loop twice as slow.
    w = np.uint64(0)
    size = np.uint64(0)
    ends[0] = 0
    for t in range(len(offsets) - 1):
        counts[t] = 0
        if not valid[t]:
            continue
        # Without a branch per byte: every byte is written and kept unless it is a space; the
        # current word's end is rewritten at every byte and kept when a space follows a word.
        after_space = True
        first = w
        for i in range(np.uint64(offsets[t]), np.uint64(offsets[t + 1])):
            byte = data[i]
            is_space = space[byte]
            words[size] = byte
            size += np.uint64(not is_space)
            w += np.uint64(is_space and not after_space)
            ends[w + np.uint64(1)] = size
            after_space = is_space
        w += np.uint64(not after_space)  # the last word, when no space follows it
        counts[t] = w - first
    return w
