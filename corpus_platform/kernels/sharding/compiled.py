"""The shard audit's own recount of whitespace words (numba): ``len(text.split())`` of every
text, read off its UTF-8 bytes.

``shards_match_manifest`` recounts the tokens of every sample it reads back and compares them
with what the writer recorded. The writer counts words on the texts' bytes once the whitespace
above ASCII has been overwritten with spaces (:func:`corpus_platform.base.words.word_counts`);
the audit used ``str.split()`` per text, a Python list of every word, about 2 CPU-s of a
100,000-document build. This walk shares nothing with the writer's: it decodes each code point
and looks it up among ``str.isspace()``'s code points (:data:`WHITESPACE`;
``tests/kernels/sharding/test_recount.py`` checks every code point and real text against
``str.split``). Self-contained, like every compiled module of the project; imported on first use.
"""

from __future__ import annotations

import numba
import numpy as np

# The code points str.split() splits at (str.isspace()): the test compares every code point.
WHITESPACE = np.array(
    [
        *range(0x09, 0x0E),
        *range(0x1C, 0x21),
        *(0x85, 0xA0, 0x1680),
        *range(0x2000, 0x200B),
        *(0x2028, 0x2029, 0x202F, 0x205F, 0x3000),
    ],
    np.int64,
)


ASCII_WHITESPACE = np.zeros(128, np.bool_)
ASCII_WHITESPACE[WHITESPACE[WHITESPACE < 128]] = True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def utf8_word_counts(
    data: np.ndarray, offsets: np.ndarray, whitespace: np.ndarray, ascii_whitespace: np.ndarray
) -> np.ndarray:
    """The number of whitespace-separated words of each text ``data[offsets[t]:offsets[t +
    1]]`` (valid UTF-8), whitespace being the sorted code points ``whitespace`` (those below
    128 also marked in ``ascii_whitespace``, looked up without a search)."""
    counts = np.zeros(len(offsets) - 1, np.int64)
    for t in range(len(offsets) - 1):
        i, end = offsets[t], offsets[t + 1]
        in_word = False
        words = 0
        while i < end:
            lead = data[i]
            if lead < 0x80:
                space = ascii_whitespace[lead]
                if not space and not in_word:
                    words += 1
                in_word = not space
                i += 1
                continue
            if lead < 0xE0:
                point, width = np.int64(lead & 0x1F) << 6 | (data[i + 1] & 0x3F), 2
            elif lead < 0xF0:
                point = np.int64(lead & 0x0F) << 12 | np.int64(data[i + 1] & 0x3F) << 6
                point, width = point | (data[i + 2] & 0x3F), 3
            else:
                point = np.int64(lead & 0x07) << 18 | np.int64(data[i + 1] & 0x3F) << 12
                point = point | np.int64(data[i + 2] & 0x3F) << 6 | (data[i + 3] & 0x3F)
                width = 4
            at = np.searchsorted(whitespace, point)
            space = at < len(whitespace) and whitespace[at] == point
            if not space and not in_word:
                words += 1
            in_word = not space
            i += width
        counts[t] = words
    return counts


def recount_words(texts: list[str]) -> np.ndarray:
    """``len(text.split())`` of every text (0 for an empty one), by :func:`utf8_word_counts`."""
    import pyarrow as pa

    array = pa.array(texts, pa.large_string())
    if not len(array) or array.buffers()[2] is None:
        return np.zeros(len(array), np.int64)
    data = np.frombuffer(array.buffers()[2], np.uint8)
    offsets = np.frombuffer(array.buffers()[1], np.int64)[: len(array) + 1]
    return utf8_word_counts(data, offsets, WHITESPACE, ASCII_WHITESPACE)
