"""Every whitespace word's xxh3-64 hash, for a whole batch of texts in one compiled pass.

Word n-gram shingles (the dedup stage's MinHash and exact Jaccard, the split's neighbour search
and recall check, the evaluation sets' n-grams) are built from 64-bit word hashes:
``xxhash.xxh3_64_intdigest`` of each word's UTF-8 bytes, words where ``str.split()`` splits.
They used to get there by Arrow's split, a dictionary encoding of the batch's words and one
Python call per distinct word, bookkeeping for words that are only hashed. Here a kernel
compiled by numba (:mod:`corpus_platform.base.word_kernels`) walks the batch's bytes once, finds
each word and hashes it where it lies with XXH3's own arithmetic; a word longer than
``word_kernels.LONGEST`` bytes (rare) is hashed by the xxhash library afterwards. The hashes are
the library's bit for bit (``tests/base/test_word_hashes.py``: every length class, generated
and real text), so nothing built from them changes.

Whitespace is ``str.split()``'s: the bytes first go through
:func:`corpus_platform.base.words.ascii_spaced` (whitespace above ASCII and the four separators
overwritten with spaces), after which a byte is whitespace exactly when it is ASCII whitespace
to ``str.split()``.

numba is imported on the first call, not with this module: processes that never hash words
(the Dagster process, the CLI) do not pay for it. The compiled kernel is cached on disk beside
its module, so a worker process loads it instead of compiling it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import xxhash

from corpus_platform.base.words import ascii_spaced, text_buffers


def word_hashes(texts: Sequence[str | None] | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The xxh3-64 hash of every whitespace word of ``texts``, texts end to end (uint64), and
    each text's number of words (int64; 0 for a null or an empty text)."""
    if not isinstance(texts, pa.Array):
        texts = pa.array(texts, pa.large_string())
    elif not pa.types.is_large_string(texts.type):
        texts = texts.cast(pa.large_string())
    texts = ascii_spaced(texts)
    raw, offsets = text_buffers(texts)
    valid = ~texts.is_null().to_numpy(zero_copy_only=False)
    from corpus_platform.base.word_kernels import hash_words  # numba: on first use only

    hashes, counts, longs = hash_words(raw, offsets, valid)
    for at, start, end in longs.tolist():  # words longer than LONGEST bytes: rare
        hashes[at] = xxhash.xxh3_64_intdigest(raw[start:end].tobytes())
    return hashes, counts


@dataclass(frozen=True)
class HashSet:
    """A set of 64-bit hashes (word hashes, n-gram hashes) for membership tests of many values
    at once: an open-addressing table walked by compiled code
    (:mod:`corpus_platform.base.hash_set_kernel`), about ten times ``np.searchsorted`` on a
    sorted array for a vocabulary that fits the CPU's cache."""

    table: np.ndarray
    bits: int
    has_zero: bool

    @classmethod
    def of(cls, values: Iterable[int] | np.ndarray) -> HashSet:
        """The set of ``values`` (unsigned 64-bit)."""
        from corpus_platform.base import hash_set_kernel  # numba: on first use only

        array = np.fromiter(values, np.uint64) if not isinstance(values, np.ndarray) else values
        table, bits, has_zero = hash_set_kernel.build(array.astype(np.uint64, copy=False))
        return cls(table, int(bits), bool(has_zero))

    def contains(self, values: np.ndarray) -> np.ndarray:
        """For each of ``values`` (uint64), whether the set holds it."""
        from corpus_platform.base import hash_set_kernel

        return hash_set_kernel.contains(values, self.table, self.bits, self.has_zero)
