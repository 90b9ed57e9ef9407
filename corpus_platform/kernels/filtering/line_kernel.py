"""The filter's character, line and paragraph scores of a batch of ASCII texts, compiled (numba).

:func:`corpus_platform.kernels.filtering.textstats.line_scores` (the definition, kept as the
fallback) splits, strips and hashes each document's lines and paragraphs in Python, about a
seventh of the filter's CPU. Here compiled loops over the batch's UTF-8 bytes compute the same
scores for every text made of ASCII bytes only, where a byte is a character:

* whitespace is ``str.strip()``'s and the regex ``\\s``'s, ``\\t \\n \\v \\f \\r``, the four
  separators 0x1c-0x1f and space;
* a paragraph break (``\\n\\s*\\n``, leftmost and greedy) runs from the first to the last
  ``\\n`` of a whitespace run holding two or more of them, so paragraphs are found among the
  lines, not in another walk over the bytes;
* repeated lines and paragraphs are found in a small hash table per text, a hash match
  confirmed by comparing the bytes, so the counts are those of Python's ``set``;
* every ratio divides the same two integers as Python does, so the float64 is the same.

A text is walked three times, each fast: once by vectorized loops (ASCII, newlines, symbols),
once eight bytes at a time to its newlines, once to hash its lines, eight bytes at a time too
(about 0.5 ns a byte in all, seven times as fast as ``line_scores``).

Texts holding a byte above ASCII are flagged for the Python definition. The lorem-ipsum flag is
left to Python (its column stays 0). ``tests/kernels/filtering/test_line_kernel.py`` holds the
scores to ``line_scores`` bit for bit. Self-contained, like every compiled module of the project:
numba checks a cached function against its own file only. Imported on first use.
"""

from __future__ import annotations

import numba
import numpy as np

# line_scores' keys, in its order: the rows of the kernel's output.
COLUMNS = (
    "chars",
    "symbol_word_ratio",
    "bullet_lines_ratio",
    "ellipsis_lines_ratio",
    "duplicate_line_fraction",
    "duplicate_paragraph_fraction",
    "duplicate_line_char_fraction",
    "duplicate_paragraph_char_fraction",
    "c4_lorem_ipsum",
    "c4_curly_braces",
    "code_line_ratio",
)
LOREM = COLUMNS.index("c4_lorem_ipsum")
# Bytes as uint8, as the text's are: compared alike, the loops over a text vectorize.
NEWLINE, HASH, DOT, DASH, STAR = (np.uint8(c) for c in b"\n#.-*")
SEMICOLON, OPEN_BRACE, CLOSE_BRACE = (np.uint8(c) for c in b";{}")
BRACES = (OPEN_BRACE, CLOSE_BRACE)
# The starts of a code line (textstats.CODE_LINE) that need no more than a prefix test.
DEF, CLASS, IMPORT = tuple(b"def "), tuple(b"class "), tuple(b"import ")
INCLUDE, FOR, IF = tuple(b"#include"), tuple(b"for ("), tuple(b"if (")
RETURN, FROM, SPACE_IMPORT = tuple(b"return"), tuple(b"from "), tuple(b" import")
# Eight bytes at a time, as uint64 (numba makes a float of a uint64 mixed with an int64).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # multiplicative hashing: 2**64 / the golden ratio
NEWLINES, ONES, HIGHS = (np.uint64(0x0101010101010101 * c) for c in (0x0A, 0x01, 0x80))


@numba.njit(cache=True, nogil=True, inline="always")
def _space(byte: int) -> bool:
    """``chr(byte).isspace()`` for an ASCII byte."""
    return (0x09 <= byte <= 0x0D) or (0x1C <= byte <= 0x20)


@numba.njit(cache=True, nogil=True, inline="always")
def _word_char(byte: int) -> bool:
    """The regex ``\\w`` for an ASCII byte: a letter, a digit or ``_`` (what ``\\b`` looks at)."""
    return (
        (0x30 <= byte <= 0x39) or (0x41 <= byte <= 0x5A) or (0x61 <= byte <= 0x7A) or byte == 0x5F
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _starts_with(text: np.ndarray, start: int, end: int, prefix: tuple) -> bool:
    if end - start < len(prefix):
        return False
    k = 0
    while k < len(prefix) and text[start + k] == prefix[k]:
        k += 1
    return k == len(prefix)


@numba.njit(cache=True, nogil=True)
def _code_line(text: np.ndarray, start: int, end: int) -> bool:
    """``CODE_LINE.search(line)`` for the stripped, non-empty line ``text[start:end]``: no
    whitespace at either end, so ``^\\s*`` matches nothing and ``[;{}]\\s*$`` only a last
    byte."""
    if text[end - 1] in (SEMICOLON, OPEN_BRACE, CLOSE_BRACE) or text[start] in BRACES:
        return True
    if (
        _starts_with(text, start, end, DEF)
        or _starts_with(text, start, end, CLASS)
        or _starts_with(text, start, end, IMPORT)
        or _starts_with(text, start, end, INCLUDE)
        or _starts_with(text, start, end, FOR)
        or _starts_with(text, start, end, IF)
    ):
        return True
    if _starts_with(text, start, end, RETURN):  # return\b
        return end - start == 6 or not _word_char(text[start + 6])
    if _starts_with(text, start, end, FROM):  # from \S+ import: \S+ ends at the next space
        k = start + 5
        while k < end and not _space(text[k]):
            k += 1
        return k > start + 5 and _starts_with(text, k, end, SPACE_IMPORT)
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _eight(text: np.ndarray, at: int) -> np.uint64:
    """``text[at:at + 8]`` as a little-endian uint64. Unsigned indices need no check for a
    negative index, so the compiler makes the eight loads one."""
    k = np.uint64(at)
    word = np.uint64(0)
    for j in range(8):
        word |= np.uint64(text[k + np.uint64(j)]) << np.uint64(8 * j)
    return word


@numba.njit(cache=True, nogil=True, inline="always")
def _line_end(text: np.ndarray, i: int) -> int:
    """The first newline of ``text`` from ``i`` on (its length if none), skipping eight bytes at
    a time while none is a newline: with ``x`` the eight bytes xor eight newlines,
    ``(x - 0x0101..) & ~x & 0x8080..`` is non-zero exactly when a byte of ``x`` is zero."""
    n = len(text)
    while i + 8 <= n:
        x = _eight(text, i) ^ NEWLINES
        if (x - ONES) & ~x & HIGHS:
            break
        i += 8
    while i < n and text[i] != NEWLINE:
        i += 1
    return i


@numba.njit(cache=True, nogil=True, inline="always")
def _hash(text: np.ndarray, start: int, end: int) -> np.uint64:
    """A hash of ``text[start:end]``, eight bytes at a time (the last eight overlap the ones
    before them; a shorter text is read byte by byte)."""
    h = np.uint64(end - start)
    k = start
    while k + 8 <= end:
        h = (h ^ _eight(text, k)) * GOLDEN
        k += 8
    if k < end:
        word = np.uint64(0)
        if end - start >= 8:
            word = _eight(text, end - 8)
        else:
            for j in range(end - k):
                word |= np.uint64(text[k + j]) << np.uint64(8 * j)
        h = (h ^ word) * GOLDEN
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def _table_bits(count: int) -> int:
    """The hash table of ``count`` items: ``2 ** bits`` slots, at least twice as many."""
    bits = 1
    while (1 << bits) < 2 * count:
        bits += 1
    return bits


@numba.njit(cache=True, nogil=True)
def _distinct(
    text: np.ndarray, items: np.ndarray, hashes: np.ndarray, count: int, table: np.ndarray
) -> tuple[int, int]:
    """(number of distinct byte strings among the first ``count`` items, their total length):
    ``len(set(items))`` and ``sum(map(len, set(items)))``, equal hashes confirmed byte for
    byte. ``items``: rows of starts and ends in ``text``. ``table`` (all -1, at least ``2 **
    _table_bits(count)`` slots) is left all -1."""
    bits = _table_bits(count)
    mask = (1 << bits) - 1
    distinct = 0
    chars = 0
    for j in range(count):
        start, end, h = items[0, j], items[1, j], hashes[j]
        slot = np.int64(h >> np.uint64(64 - bits))
        while table[slot] >= 0:
            other = table[slot]
            if hashes[other] == h and items[1, other] - items[0, other] == end - start:
                offset = items[0, other] - start
                k = start
                while k < end and text[k + offset] == text[k]:
                    k += 1
                if k == end:
                    break
            slot = (slot + 1) & mask
        if table[slot] < 0:
            table[slot] = j
            distinct += 1
            chars += end - start
    table[: mask + 1] = -1
    return distinct, chars


@numba.njit(cache=True, nogil=True, inline="always")
def _ratio(count: int, total: int) -> float:
    return count / total if total else 0.0


@numba.njit(cache=True, nogil=True)
def _symbols(text: np.ndarray) -> tuple[bool, int, int, bool]:
    """(whether every byte is ASCII, the number of newlines, of ``#`` and ``...`` together
    (``text.count``: a run of dots counts its whole triples), whether a ``{`` is there) of
    ``text``. The loops are branch-free (but for the rare texts with three dots in a row), so
    they vectorize."""
    high = np.uint8(0)
    newlines = hashes = braces = triples = 0
    for i in range(len(text)):
        byte = text[i]
        high |= byte
        newlines += np.int64(byte == NEWLINE)
        hashes += np.int64(byte == HASH)
        braces += np.int64(byte == OPEN_BRACE)
    for i in range(len(text) - 2):
        triples += np.int64((text[i] == DOT) & (text[i + 1] == DOT) & (text[i + 2] == DOT))
    if triples:  # overlapping so far: count each run's whole triples
        triples = run = 0
        for i in range(len(text)):
            run = run + 1 if text[i] == DOT else 0
            if run == 3:
                triples += 1
                run = 0
    return high < 0x80, newlines, hashes + triples, braces > 0


@numba.njit(cache=True, nogil=True)
def _paragraphs(
    lines_at: np.ndarray,
    line_hashes: np.ndarray,
    lines: int,
    paragraphs_at: np.ndarray,
    paragraph_hashes: np.ndarray,
) -> tuple[int, int]:
    """``PARAGRAPH_BREAK.split(text)``, stripped, the empty ones dropped, from the text's
    stripped non-empty ``lines`` (rows start, end, newlines before it): a break is a whitespace
    run with two newlines or more, so it lies between two such lines exactly where an empty one
    lies between them, and a stripped paragraph runs from its first line's start to its last
    line's end. Its hash is its lines' (equal paragraphs have equal lines). Fills the
    paragraphs' starts, ends and hashes; returns their number and total length."""
    paragraphs = chars = 0
    for j in range(lines):
        if j == 0 or lines_at[2, j] > lines_at[2, j - 1] + 1:
            paragraphs_at[0, paragraphs] = lines_at[0, j]
            paragraph_hashes[paragraphs] = 0
            paragraphs += 1
        paragraphs_at[1, paragraphs - 1] = lines_at[1, j]
        last = paragraph_hashes[paragraphs - 1]
        paragraph_hashes[paragraphs - 1] = (last ^ line_hashes[j]) * GOLDEN
    for j in range(paragraphs):
        chars += paragraphs_at[1, j] - paragraphs_at[0, j]
    return paragraphs, chars


@numba.njit(cache=True, nogil=True)
def line_stats(
    data: np.ndarray, offsets: np.ndarray, words: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Fill ``out[k, t]`` with score ``COLUMNS[k]`` of text ``t`` (``data[offsets[t]:offsets[t
    + 1]]``, ``words[t]`` words) for every text of ASCII bytes, all but the lorem-ipsum flag;
    return which texts those are (the others' columns are left as they were)."""
    texts = len(offsets) - 1
    ascii_only = np.zeros(texts, np.bool_)
    size = 64  # the lines (and paragraphs) the arrays hold
    lines_at = np.empty((3, size), np.int64)  # start, end, newlines before it
    line_hashes = np.empty(size, np.uint64)
    paragraphs_at = np.empty((2, size), np.int64)  # start, end
    paragraph_hashes = np.empty(size, np.uint64)
    table = np.full(1 << _table_bits(size), -1, np.int64)
    for t in range(texts):
        text = data[offsets[t] : offsets[t + 1]]
        n = len(text)
        clean, newlines, symbols, brace = _symbols(text)
        if not clean:
            continue
        ascii_only[t] = True
        if newlines + 1 > size:
            size = 2 * (newlines + 1)
            lines_at = np.empty((3, size), np.int64)
            line_hashes = np.empty(size, np.uint64)
            paragraphs_at = np.empty((2, size), np.int64)
            paragraph_hashes = np.empty(size, np.uint64)
            table = np.full(1 << _table_bits(size), -1, np.int64)
        # Lines: text.split("\n"), stripped, the empty ones dropped.
        lines = bullets = ellipses = code = line_chars = newline = 0
        begin = 0
        while True:
            i = _line_end(text, begin)
            start, end = begin, i
            while start < end and _space(text[start]):
                start += 1
            while end > start and _space(text[end - 1]):
                end -= 1
            if start < end:
                lines_at[0, lines], lines_at[1, lines], lines_at[2, lines] = start, end, newline
                line_hashes[lines] = _hash(text, start, end)
                lines += 1
                line_chars += end - start
                if text[start] == DASH or text[start] == STAR:  # BULLETS' ASCII ones
                    bullets += 1
                if end - start >= 3 and text[end - 3] == text[end - 2] == text[end - 1] == DOT:
                    ellipses += 1
                if _code_line(text, start, end):
                    code += 1
            if i == n:
                break
            begin = i + 1
            newline += 1
        paragraphs, paragraph_chars = _paragraphs(
            lines_at, line_hashes, lines, paragraphs_at, paragraph_hashes
        )
        line_distinct, line_distinct_chars = _distinct(text, lines_at, line_hashes, lines, table)
        distinct, distinct_chars = _distinct(
            text, paragraphs_at, paragraph_hashes, paragraphs, table
        )
        out[0, t] = n
        out[1, t] = _ratio(symbols, words[t])
        out[2, t] = _ratio(bullets, lines)
        out[3, t] = _ratio(ellipses, lines)
        out[4, t] = _ratio(lines - line_distinct, lines)
        out[5, t] = _ratio(paragraphs - distinct, paragraphs)
        out[6, t] = _ratio(line_chars - line_distinct_chars, line_chars)
        out[7, t] = _ratio(paragraph_chars - distinct_chars, paragraph_chars)
        out[9, t] = 1.0 if brace else 0.0
        out[10, t] = _ratio(code, lines)
    return ascii_only
