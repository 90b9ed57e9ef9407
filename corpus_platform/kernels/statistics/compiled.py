"""The compiled loop of :func:`corpus_platform.kernels.statistics.fit.token_statistics` (numba).

In how many texts each token occurs, from the batch's token codes laid end to end: one walk
that remembers, per token, the last text it was counted for. It replaces sorting every distinct
(text, token) pair of the batch, which took most of the fit's time besides tokenizing (13.7
million pairs a batch of benchmark text). The count is the same integer; the fit's check
(``fitted_on_exactly_train``) recounts it independently, in Python. Imported on first use;
numba keeps the machine code in ``__pycache__`` beside this file (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def document_frequencies(codes: np.ndarray, counts: np.ndarray, vocabulary: int) -> np.ndarray:
    """For each of ``vocabulary`` token codes, the number of texts holding it; ``codes``: every
    text's token codes end to end, ``counts``: each text's number of tokens."""
    frequency = np.zeros(vocabulary, np.int64)
    last = np.full(vocabulary, -1, np.int64)
    position = 0
    for text in range(len(counts)):
        for _ in range(counts[text]):
            code = codes[position]
            if last[code] != text:
                last[code] = text
                frequency[code] += 1
            position += 1
    return frequency
