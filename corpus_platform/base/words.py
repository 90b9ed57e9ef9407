"""Whitespace words of a batch of texts, split by Arrow where ``str.split()`` splits.

The filter's scores, the statistics' token counts, MinHash shingles and decontamination all
tokenize a batch the same way: split at whitespace, drop the empty strings Arrow keeps for
leading and trailing whitespace, dictionary-encode the words so that anything per word is
computed once per distinct word. Where only the number of words is wanted
(:func:`word_counts`), word starts are counted on the texts' bytes instead, about seven times
as fast as Arrow's split and a third faster than ``len(str.split())`` on 200-2,000-word texts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Python's str.split() and Arrow's UTF-8 kernel treat the four ASCII bytes from this one on
# (file, group, record and unit separators, 0x1c-0x1f) as whitespace; Arrow's ASCII kernel does
# not.
_FIRST_SEPARATOR = np.uint8(0x1C)


def split_whitespace(texts: pa.Array) -> pa.Array:
    """Each text's words, split where ``str.split()`` splits, as an Arrow list array: by
    Arrow's ASCII kernel (1.5x as fast) when every byte of the texts is ASCII and none is one
    of the separators ``\\x1c``-``\\x1f``, by its UTF-8 kernel otherwise.

    Both kernels keep empty strings where a text begins or ends with whitespace (an empty text
    is one empty string), not always as many of them: callers drop them (:class:`Words`) or
    pass texts that are words joined by single spaces, where the two kernels agree exactly."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    data = (
        texts.buffers()[2]
        if pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)
        else None
    )
    if data is not None:
        raw = np.frombuffer(data, np.uint8)
        if not len(raw) or (raw.max() < 0x80 and not np.any((raw - _FIRST_SEPARATOR) < 4)):
            return pc.ascii_split_whitespace(texts)
    return pc.utf8_split_whitespace(texts)


def _split_words(texts: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """The non-empty whitespace words of ``texts`` end to end, and each text's number of
    words."""
    split = split_whitespace(texts)
    words = pc.list_flatten(split)
    nonempty = pc.greater(pc.binary_length(words), 0)
    parents = pc.filter(pc.list_parent_indices(split), nonempty).to_numpy()
    counts = np.bincount(parents, minlength=len(split)).astype(np.int64)
    return pc.filter(words, nonempty), counts


def _ascii_space(raw: np.ndarray) -> np.ndarray:
    """The bytes ``str.split()`` splits an ASCII text at: ``\t \n \v \f \r`` (0x09-0x0d), the
    four separators and space (0x1c-0x20); compared, not looked up, so no index array is made."""
    return ((raw >= 0x09) & (raw <= 0x0D)) | ((raw >= 0x1C) & (raw <= 0x20))


COUNT_BATCH_BYTES = 1 << 22  # text bytes counted at a time: the temporary arrays stay small


def word_counts(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each text's number of whitespace words, ``len(text.split())`` (0 for a null).

    Counted on the UTF-8 bytes without making a Python string, a batch of about
    :data:`COUNT_BATCH_BYTES` at a time: a word begins at a byte that is not whitespace where the
    text begins or whitespace precedes it. A text holding any byte above ASCII may hold Unicode
    whitespace (U+0085, U+2028, U+3000 ...), so those texts alone are counted with
    ``str.split()``."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    counts = np.zeros(len(texts), dtype=np.int64)
    lengths = pc.fill_null(pc.binary_length(texts), 0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths, dtype=np.int64)
    first = 0
    while first < len(texts):
        byte_end = (ends[first - 1] if first else 0) + COUNT_BATCH_BYTES
        last = max(first + 1, int(np.searchsorted(ends, byte_end, side="right")))
        counts[first:last] = _batch_word_counts(texts.slice(first, last - first))
        first = last
    return counts


def _batch_word_counts(texts: pa.Array) -> np.ndarray:
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    offsets = np.frombuffer(texts.buffers()[1], width)[texts.offset : texts.offset + len(texts) + 1]
    offsets = offsets.astype(np.int64)
    data = texts.buffers()[2]
    raw = np.frombuffer(data, np.uint8)[offsets[0] : offsets[-1]] if data else np.empty(0, np.uint8)
    bounds = offsets - offsets[0]
    filled = np.flatnonzero(bounds[1:] > bounds[:-1])
    if not len(filled):
        return np.zeros(len(texts), dtype=np.int64)
    space = _ascii_space(raw)
    starts = ~space
    starts[1:] &= space[:-1]
    firsts = bounds[filled]
    starts[firsts] = ~space[firsts]  # a text's first byte follows no space
    counts = np.diff(np.searchsorted(np.flatnonzero(starts), bounds)).astype(np.int64)
    wide = np.diff(np.searchsorted(np.flatnonzero(raw >= 0x80), bounds))
    if texts.null_count:  # a null slot's bytes, if it has any, are no text
        nulls = texts.is_null().to_numpy(zero_copy_only=False)
        counts[nulls], wide[nulls] = 0, 0
    for index in np.flatnonzero(wide).tolist():
        counts[index] = len(texts[index].as_py().split())
    return counts


@dataclass(frozen=True)
class Words:
    """Every word of a batch, texts end to end: ``codes`` index ``dictionary`` (the batch's
    distinct words); ``counts`` holds each text's number of words."""

    codes: np.ndarray
    dictionary: pa.Array
    counts: np.ndarray

    @classmethod
    def of(cls, texts: pa.Array) -> Words:
        """The words of ``texts`` (``str.split()`` of each; none for a null)."""
        words, counts = _split_words(texts)
        encoded = words.dictionary_encode()
        return cls(
            codes=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            dictionary=encoded.dictionary,
            counts=counts,
        )

    def owners(self) -> np.ndarray:
        """The text each word belongs to."""
        return np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
