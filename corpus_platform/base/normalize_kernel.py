"""The compiled half of :meth:`corpus_platform.base.hashing.TextNormalization.apply_all` (numba,
nopython mode): the ASCII texts of a batch normalized in one walk over their bytes.

For an ASCII text, NFKC and casefolding are lowercasing and a Unicode ``\\w`` character is one of
``[A-Za-z0-9_]``, so the default normalization is a byte table (``hashing.ASCII_WORDS``: a word
byte to its lowercase, any other byte to a space) followed by collapsing runs of spaces and
trimming the ends: what ``apply`` does with ``bytes.translate`` and a regular expression, here
without a Python object per text. A text holding any byte above ASCII is normalized by
``apply``; the walk only copies its bytes into place.

Self-contained, like every compiled module of the project: numba checks a cached function
against its own file only (see :mod:`corpus_platform.base.word_kernels`). Imported on first use.
"""

from __future__ import annotations

import numba
import numpy as np

SPACE = 0x20


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fold_ascii_words(
    data: np.ndarray,
    offsets: np.ndarray,
    plain: np.ndarray,
    table: np.ndarray,
    given: np.ndarray,
    given_data: np.ndarray,
    given_offsets: np.ndarray,
    out: np.ndarray,
    out_offsets: np.ndarray,
) -> None:
    """Write every text's normalized bytes into ``out``, texts end to end, text ``t`` ending at
    ``out_offsets[t + 1]`` (``out_offsets[0]`` is 0).

    A ``plain`` text (ASCII) ``data[offsets[t]:offsets[t + 1]]`` is normalized here: each byte
    mapped by ``table`` (a space for a byte outside words), runs of spaces made one, none at
    either end. A text with ``given[t] = k >= 0`` was normalized by the caller: its bytes are
    ``given_data[given_offsets[k]:given_offsets[k + 1]]``. Any other text (a null) gets none."""
    # Unsigned positions: numba wraps a negative signed index around, a check on every byte's
    # load and store that it cannot prove away for a range starting at a run-time offset
    # (twice the time of this loop on benchmark texts).
    size = np.uint64(0)
    out_offsets[0] = 0
    for t in range(len(offsets) - 1):
        k = given[t]
        if k >= 0:
            for i in range(np.uint64(given_offsets[k]), np.uint64(given_offsets[k + 1])):
                out[size] = given_data[i]
                size += np.uint64(1)
        elif plain[t]:  # without a branch per byte: every byte is written, a space kept only
            first = size  # after a word byte (a text's leading spaces never)
            after_space = True
            for i in range(np.uint64(offsets[t]), np.uint64(offsets[t + 1])):
                byte = table[data[i]]
                is_space = byte == SPACE
                out[size] = byte
                size += np.uint64(not (is_space and after_space))
                after_space = is_space
            if after_space and size > first:  # the one space kept after the last word
                size -= np.uint64(1)
        out_offsets[t + 1] = size
