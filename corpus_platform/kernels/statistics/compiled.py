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


GOLDEN = np.uint64(0x9E3779B97F4A7C15)
FNV_OFFSET, FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


@numba.njit(cache=True, nogil=True, inline="always")
def _space(byte: np.uint8) -> bool:
    return (byte >= 9 and byte <= 13) or (byte >= 28 and byte <= 32)


@numba.njit(cache=True, nogil=True)
def _grown(array: np.ndarray, size: int) -> np.ndarray:
    if size <= len(array):
        return array
    bigger = np.empty(max(size, 2 * len(array)), array.dtype)
    bigger[: len(array)] = array
    return bigger


@numba.njit(cache=True, nogil=True)
def text_document_frequencies(
    data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In how many texts each whitespace token occurs, straight from the texts' UTF-8 bytes
    (``data`` and Arrow ``offsets``; whitespace is ASCII's, other whitespace having been
    overwritten with spaces). Tokens are told apart by their bytes in a table of their own
    (open addressing keyed by an FNV-1a hash, every hit compared byte for byte): the audit's own
    count, sharing no code with the fit's Arrow split and dictionary. Returns the distinct
    tokens as Arrow offsets and bytes, in order of first appearance, and their counts."""
    bits = 12
    table = np.full(1 << bits, -1, np.int64)
    hashes = np.empty(1024, np.uint64)
    starts = np.zeros(1025, np.int64)  # token i is tokens[starts[i]:starts[i + 1]]
    tokens = np.empty(8192, np.uint8)
    frequency = np.zeros(1024, np.int64)
    last = np.empty(1024, np.int64)
    distinct = 0
    for text in range(len(offsets) - 1):
        i, end = offsets[text], offsets[text + 1]
        while i < end:
            while i < end and _space(data[i]):
                i += 1
            if i == end:
                break
            first = i
            h = FNV_OFFSET
            while i < end and not _space(data[i]):
                h = (h ^ np.uint64(data[i])) * FNV_PRIME
                i += 1
            size = i - first
            mask = (1 << bits) - 1
            slot = np.int64((h * GOLDEN) >> np.uint64(64 - bits))
            while True:
                token = table[slot]
                if token < 0:  # a new token
                    token = distinct
                    distinct += 1
                    hashes = _grown(hashes, distinct)
                    frequency = _grown(frequency, distinct)
                    last = _grown(last, distinct)
                    starts = _grown(starts, distinct + 1)
                    tokens = _grown(tokens, starts[token] + size)
                    tokens[starts[token] : starts[token] + size] = data[first:i]
                    starts[distinct] = starts[token] + size
                    hashes[token], frequency[token], last[token] = h, 0, -1
                    table[slot] = token
                    if 2 * distinct > (1 << bits):  # keep the table at most half full
                        bits += 1
                        table = np.full(1 << bits, -1, np.int64)
                        for known in range(distinct):
                            at = np.int64((hashes[known] * GOLDEN) >> np.uint64(64 - bits))
                            while table[at] >= 0:
                                at = (at + 1) & ((1 << bits) - 1)
                            table[at] = known
                    break
                if hashes[token] == h and starts[token + 1] - starts[token] == size:
                    same = True
                    for k in range(size):
                        if tokens[starts[token] + k] != data[first + k]:
                            same = False
                            break
                    if same:
                        break
                slot = (slot + 1) & mask
            if last[token] != text:
                last[token] = text
                frequency[token] += 1
    return (
        starts[: distinct + 1].copy(),
        tokens[: starts[distinct]].copy(),
        frequency[:distinct].copy(),
    )
