"""Whitespace words of a batch of texts, split where ``str.split()`` splits.

The filter's scores, the statistics' token counts, MinHash shingles and decontamination all
tokenize a batch the same way: split at whitespace, dictionary-encode the words so that anything
per word is computed once per distinct word. First the whitespace characters Arrow's ASCII
kernel does not know (the separators 0x1c-0x1f and 19 code points above ASCII) are overwritten
with spaces in a copy of the batch's bytes (:func:`ascii_spaced`); the bytes of every other
character above ASCII are never whitespace. Then the words are cut out of those bytes by a
compiled walk (:func:`split_words`), or by Arrow's ASCII kernel where a list per text is wanted
(:func:`split_whitespace`), or split and dictionary-encoded at once by another compiled walk
(:meth:`Words.of_compiled`, the filter's). Where only the number of words is wanted
(:func:`word_counts`), word starts are counted on those bytes instead, about seven times as fast
as Arrow's split and a third faster than ``len(str.split())`` on 200-2,000-word texts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import one_array

# The code points str.split() splits at besides ASCII's \t \n \v \f \r and space, which Arrow's
# ASCII kernel splits at: the four separators 0x1c-0x1f and, above ASCII, these (str.isspace();
# tests/base/test_words.py checks every code point), by their UTF-8 bytes.
_FIRST_SEPARATOR = np.uint8(0x1C)
_WIDE_SPACES = (
    "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WIDE_SPACE_BYTES = {
    width: np.array(
        [int.from_bytes(c.encode(), "big") for c in _WIDE_SPACES if len(c.encode()) == width],
        np.uint32,
    )
    for width in (2, 3)
}
_FIRST_WIDE_LEAD = np.uint8(0xC2)  # the lowest lead byte among them


def ascii_spaced(texts: pa.Array, separators: bool = True) -> pa.Array:
    """``texts`` (string or large_string, no chunks) with every whitespace character that
    Arrow's ASCII kernel does not split at overwritten by as many spaces as it has bytes: the
    same words, for ``str.split()``, and a split by the ASCII kernel finds them exactly. A
    word's bytes above ASCII are never whitespace to that kernel, so they stay in the word.
    Texts that hold none of those characters are returned as they are (no copy).
    ``separators=False``: the separators 0x1c-0x1f are left for a compiled walk that splits at
    them itself (:mod:`corpus_platform.base.word_kernels`), which saves a pass over the bytes."""
    data = texts.buffers()[2]
    if data is None or not len(data) or not len(texts):
        return texts
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    offsets = np.frombuffer(texts.buffers()[1], width)
    first, last = int(offsets[texts.offset]), int(offsets[texts.offset + len(texts)])
    raw = np.frombuffer(data, np.uint8)[first:last]  # a slice's own bytes only
    found = np.flatnonzero((raw - _FIRST_SEPARATOR) < 4) if separators else np.zeros(0, np.intp)
    leads = np.flatnonzero(raw >= _FIRST_WIDE_LEAD)
    spans: list[tuple[np.ndarray, int]] = [(found, 1)]
    if len(leads):
        end = len(raw) - 1
        two = raw[leads].astype(np.uint32) << 8 | raw[np.minimum(leads + 1, end)]
        three = two << 8 | raw[np.minimum(leads + 2, end)]
        spans.append((leads[np.isin(two, _WIDE_SPACE_BYTES[2])], 2))
        spans.append((leads[np.isin(three, _WIDE_SPACE_BYTES[3])], 3))
    if not any(len(starts) for starts, _ in spans):
        return texts
    spaced = np.frombuffer(data, np.uint8).copy()
    for starts, size in spans:
        for k in range(size):
            spaced[first + starts + k] = 0x20
    return pa.Array.from_buffers(
        texts.type,
        len(texts),
        [texts.buffers()[0], texts.buffers()[1], pa.py_buffer(spaced)],
        null_count=texts.null_count,
        offset=texts.offset,
    )


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of ``texts`` (a string or large_string array, no chunks) as numpy, no
    copy: the array's whole data buffer (uint8; empty when it has none) and the ``len(texts)
    + 1`` int64 offsets of its texts into it (a slice's own, so text ``i`` is
    ``raw[offsets[i]:offsets[i + 1]]``). What a compiled kernel walks."""
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    offsets = np.frombuffer(texts.buffers()[1], width)[texts.offset : texts.offset + len(texts) + 1]
    data = texts.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return raw, offsets.astype(np.int64, copy=False)


def split_whitespace(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each text's words, split where ``str.split()`` splits, as an Arrow list array, by
    Arrow's ASCII kernel (twice as fast as its UTF-8 kernel, which one text above ASCII in a
    batch used to call for) on the texts with every other whitespace character overwritten by
    spaces (:func:`ascii_spaced`).

    The kernel keeps empty strings where a text begins or ends with whitespace (an empty text
    is one empty string): callers drop them (:class:`Words`) or pass texts that are words
    joined by single spaces."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        return pc.utf8_split_whitespace(texts)
    return pc.ascii_split_whitespace(ascii_spaced(texts))


def split_words(texts: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """The whitespace words of ``texts`` end to end (string for string texts, else
    large_string), and each text's number of words (0 for a null).

    Split by a compiled walk over the bytes (:mod:`corpus_platform.base.split_kernel`) that
    copies the words end to end and records their ends, once every whitespace character above
    ASCII is a space (:func:`ascii_spaced`): three times as fast as Arrow's ASCII split, then
    dropping its empty strings, on 200-2,000-word texts."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())  # as word_counts does
    from corpus_platform.base.split_kernel import SPACE, split_into_words

    data, offsets = text_buffers(ascii_spaced(texts))
    size = int(offsets[-1] - offsets[0])
    valid = (
        texts.is_valid().to_numpy(zero_copy_only=False)
        if texts.null_count
        else np.ones(len(texts), np.bool_)
    )
    words = np.empty(size, np.uint8)
    ends = np.empty(size // 2 + len(texts) + 2, np.int64)
    counts = np.empty(len(texts), np.int64)
    found = split_into_words(data, offsets, valid, SPACE, words, ends, counts)
    split = pa.Array.from_buffers(
        pa.large_string(),
        found,
        [None, pa.py_buffer(ends[: found + 1]), pa.py_buffer(words[: int(ends[found])])],
    )
    return (split.cast(texts.type) if pa.types.is_string(texts.type) else split), counts


def _ascii_space(raw: np.ndarray) -> np.ndarray:
    """The bytes ``str.split()`` splits an ASCII text at: ``\t \n \v \f \r`` (0x09-0x0d), the
    four separators and space (0x1c-0x20); compared, not looked up, so no index array is made."""
    return ((raw >= 0x09) & (raw <= 0x0D)) | ((raw >= 0x1C) & (raw <= 0x20))


COUNT_BATCH_BYTES = 1 << 22  # text bytes counted at a time: the temporary arrays stay small


def word_counts(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each text's number of whitespace words, ``len(text.split())`` (0 for a null).

    Counted on the UTF-8 bytes without making a Python string, a batch of about
    :data:`COUNT_BATCH_BYTES` at a time: a word begins at a byte that is not whitespace where the
    text begins or whitespace precedes it, once every whitespace character above ASCII has been
    overwritten with spaces (:func:`ascii_spaced`; a word's other bytes above ASCII are not
    whitespace)."""
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
    data, offsets = text_buffers(ascii_spaced(texts))
    raw = data[offsets[0] : offsets[-1]]
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
    if texts.null_count:  # a null slot's bytes, if it has any, are no text
        counts[texts.is_null().to_numpy(zero_copy_only=False)] = 0
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
        words, counts = split_words(texts)
        encoded = words.dictionary_encode()
        return cls(
            codes=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            dictionary=encoded.dictionary,
            counts=counts,
        )

    @classmethod
    def of_compiled(cls, texts: pa.Array | pa.ChunkedArray) -> Words:
        """:meth:`of` (equal codes, dictionary, type included, and counts) by one compiled walk
        that splits the words and numbers them in order of first appearance, as
        ``dictionary_encode`` does (:func:`corpus_platform.base.word_kernels.tokenize`): about
        twice as fast on the filter's batches of real documents (the statistics' fit keeps
        :meth:`of`, from which the audit's count, sharing this walk, stays apart)."""
        texts = one_array(texts)  # a slice is walked where it lies
        if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
            texts = texts.cast(pa.large_string())  # as split_words does
        from corpus_platform.base.word_kernels import tokenize  # numba: on first use only

        data, offsets = text_buffers(ascii_spaced(texts, separators=False))
        valid = np.ones(0, np.bool_)  # empty: every text is valid
        if texts.null_count:
            valid = texts.is_valid().to_numpy(zero_copy_only=False)
        starts, tokens, _, codes, counts = tokenize(data, offsets, valid, True)
        if pa.types.is_string(texts.type):
            string, starts = pa.string(), starts.astype(np.int32)
        else:
            string = pa.large_string()
        buffers = [None, pa.py_buffer(starts), pa.py_buffer(tokens)]
        dictionary = pa.Array.from_buffers(string, len(starts) - 1, buffers)
        return cls(codes=codes, dictionary=dictionary, counts=counts)

    def owners(self) -> np.ndarray:
        """The text each word belongs to."""
        return np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
