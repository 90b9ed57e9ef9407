"""Compiled walks over a batch of texts' words (numba, nopython mode) straight from their UTF-8
bytes and Arrow offsets, whitespace being ``str.split()``'s once the texts have been through
:func:`corpus_platform.base.words.ascii_spaced`:

* :func:`hash_words` (behind ``word_hashes.word_hashes``): XXH3-64 of every word where it lies,
  by xxhash's arithmetic (xxhash.h: XXH3_64bits, seed 0, the default secret) for 1 to 128 bytes,
  the only paths a word of that size takes (``tests/base/test_word_hashes.py``: every length).
* :func:`tokenize`: the distinct words (tokens), told apart by their bytes in a table of their
  own, with each word's token id (``words.Words.of_compiled``, the filter's) or in how many
  texts each occurs (:func:`token_document_frequencies`, the statistics audit's own count).

Imported on first use only (numba's import takes a third of a second). Kernels are module-level
``njit(cache=True, nogil=True)`` functions: a later process loads their machine code from
``__pycache__`` beside this file. numba checks that cache against this file only, so nothing
compiled in another file is used. Helpers are inlined (``_inline``); globals are constants. The
two kernels each keep their own loop over a text's 64-byte blocks: a helper holding it cost 4-5x
(numba's reference counting on every call).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros  # one tzcnt; internal API: numba is pinned

LONGEST = 128  # words up to this many bytes are hashed here; longer ones by the caller

# XXH3's default secret (xxhash.h, XXH3_kSecret).
SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)
PRIME64_1, PRIME64_2 = np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F)
PRIME64_3 = np.uint64(0x165667B19E3779F9)
PRIME_MX1, PRIME_MX2 = np.uint64(0x165667919E3779F9), np.uint64(0x9FB21C651E98DF25)
LOW32 = np.uint64(0xFFFFFFFF)
# The secret's words the short paths read, folded as those paths fold them (seed 0).
_KEY = [int.from_bytes(SECRET[k : k + 8], "little") for k in range(0, len(SECRET), 8)]
FLIP_1TO3 = np.uint64((_KEY[0] & 0xFFFFFFFF) ^ (_KEY[0] >> 32))
FLIP_4TO8 = np.uint64(_KEY[1] ^ _KEY[2])
FLIP_9TO16_LOW, FLIP_9TO16_HIGH = np.uint64(_KEY[3] ^ _KEY[4]), np.uint64(_KEY[5] ^ _KEY[6])
SECRET_WORDS = np.array(_KEY, dtype=np.uint64)  # mix16 reads the secret as words


_inline = numba.njit(cache=True, nogil=True, inline="always")


@_inline
def read_le(data: np.ndarray, at: int, width: int) -> np.uint64:
    """The ``width`` bytes at ``at`` (none when ``width <= 0``) as a little-endian unsigned
    integer, by unsigned indexes, which LLVM merges into one load of a constant ``width`` (a
    signed index's wraparound check keeps the bytes' loads apart)."""
    value = np.uint64(0)
    base = np.uint64(at)
    for k in range(width):
        value |= np.uint64(data[base + np.uint64(k)]) << np.uint64(8 * k)
    return value


@_inline
def fold(a: np.uint64, b: np.uint64) -> np.uint64:
    """The 128-bit product of ``a`` and ``b``, its halves xored (XXH3_mul128_fold64)."""
    lo_lo = (a & LOW32) * (b & LOW32)
    hi_lo = (a >> np.uint64(32)) * (b & LOW32)
    lo_hi = (a & LOW32) * (b >> np.uint64(32))
    hi_hi = (a >> np.uint64(32)) * (b >> np.uint64(32))
    cross = (lo_lo >> np.uint64(32)) + (hi_lo & LOW32) + lo_hi
    upper = (hi_lo >> np.uint64(32)) + (cross >> np.uint64(32)) + hi_hi
    lower = (cross << np.uint64(32)) | (lo_lo & LOW32)
    return lower ^ upper


@_inline
def xxh64_avalanche(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(33)
    h *= PRIME64_2
    h ^= h >> np.uint64(29)
    h *= PRIME64_3
    return h ^ (h >> np.uint64(32))


@_inline
def xxh3_avalanche(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(37)
    h *= PRIME_MX1
    return h ^ (h >> np.uint64(32))


@_inline
def rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@_inline
def mix16(data: np.ndarray, at: int, s: int) -> np.uint64:
    """XXH3_mix16B with seed 0, the secret's bytes ``s`` to ``s + 16``."""
    low = read_le(data, at, 8) ^ SECRET_WORDS[s // 8]
    high = read_le(data, at + 8, 8) ^ SECRET_WORDS[s // 8 + 1]
    return fold(low, high)


@_inline
def xxh3(data: np.ndarray, start: int, length: int) -> np.uint64:
    """XXH3-64 (seed 0, default secret) of ``data[start:start + length]``, 1 to 128 bytes. Up
    to 8 bytes, the 1-3 and 4-8 byte paths both run on one load, one result kept without a branch
    (both sizes are common): a mispredicted branch cost more than the arithmetic (a sixth)."""
    n = np.uint64(length)
    if length <= 8:  # bytes past the word's last are loaded where the buffer has them, not used
        head = read_le(data, start, 8) if start + 8 <= len(data) else read_le(data, start, length)
        c1 = head & np.uint64(0xFF)
        c2 = (head >> np.uint64(8 * (length >> 1))) & np.uint64(0xFF)
        c3 = (head >> np.uint64(8 * (length - 1))) & np.uint64(0xFF)
        combined = (c1 << np.uint64(16)) | (c2 << np.uint64(24)) | c3 | (n << np.uint64(8))
        one_to_3 = xxh64_avalanche(combined ^ FLIP_1TO3)
        last = (head >> np.uint64(8 * max(length - 4, 0))) & LOW32
        keyed = (last + ((head & LOW32) << np.uint64(32))) ^ FLIP_4TO8
        keyed ^= rotl(keyed, 49) ^ rotl(keyed, 24)
        keyed *= PRIME_MX2
        keyed ^= (keyed >> np.uint64(35)) + n
        keyed *= PRIME_MX2
        short = np.uint64(0) - np.uint64(length <= 3)  # all ones for 1-3 bytes, else 0
        return (one_to_3 & short) | ((keyed ^ (keyed >> np.uint64(28))) & ~short)
    if length <= 16:
        low = read_le(data, start, 8) ^ FLIP_9TO16_LOW
        high = read_le(data, start + length - 8, 8) ^ FLIP_9TO16_HIGH
        byteswapped = np.uint64(0)
        for k in range(8):
            byteswapped |= ((low >> np.uint64(8 * k)) & np.uint64(0xFF)) << np.uint64(56 - 8 * k)
        return xxh3_avalanche(n + byteswapped + high + fold(low, high))
    acc = n * PRIME64_1
    if length > 32:
        if length > 64:
            if length > 96:
                acc += mix16(data, start + 48, 96)
                acc += mix16(data, start + length - 64, 112)
            acc += mix16(data, start + 32, 64)
            acc += mix16(data, start + length - 48, 80)
        acc += mix16(data, start + 16, 32)
        acc += mix16(data, start + length - 32, 48)
    acc += mix16(data, start, 0)
    acc += mix16(data, start + length - 16, 16)
    return xxh3_avalanche(acc)


@_inline
def space(byte: np.uint8) -> bool:
    """Whether ``byte`` is whitespace to ``str.split()`` in a text whose other whitespace has
    been overwritten with spaces (``words.ascii_spaced``): 0x09-0x0d and 0x1c-0x20."""
    return (byte >= 9 and byte <= 13) or (byte >= 28 and byte <= 32)


# SWAR: a byte below 0x80 plus FROM_x carries into its top bit when it is at least x; plus PAST_y,
# when it is above y (no byte carries into the next).
ALL, ONES = np.uint64(0xFFFFFFFFFFFFFFFF), 0x0101010101010101
LOW7, HIGH = np.uint64(0x7F * ONES), np.uint64(0x80 * ONES)
FROM_9, PAST_13 = np.uint64((0x80 - 9) * ONES), np.uint64((0x7F - 13) * ONES)
FROM_28, PAST_32 = np.uint64((0x80 - 28) * ONES), np.uint64((0x7F - 32) * ONES)
GATHER = np.uint64(0x0102040810204080)  # times 8 bytes of 0 or 1: byte k's bit at 56 + k


@_inline
def edges(
    data: np.ndarray, at: int, n: int, after_space: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64]:
    """Where words begin and end in the ``n`` bytes at ``at`` (at most 64) as two bitmasks, bit k
    for byte ``at + k``, alternating: a word ends at the whitespace byte after its last (bits from
    ``n`` up stand for the text's end, whitespace). ``after_space``: 1 if the byte before is
    whitespace or none, else 0; returned third for the next block, of the block's last byte."""
    spaces = np.uint64(0)
    if at + 64 <= len(data):
        for j in range(8):  # eight bytes at a time, a whitespace byte getting its top bit
            x = read_le(data, at + 8 * j, 8)
            low = x & LOW7
            top = ((low + FROM_9) & ~(low + PAST_13)) | ((low + FROM_28) & ~(low + PAST_32))
            top &= ~x & HIGH  # a byte from 0x80 up is never whitespace
            spaces |= (((top >> np.uint64(7)) * GATHER) >> np.uint64(56)) << np.uint64(8 * j)
    else:
        for k in range(n):
            if space(data[at + k]):
                spaces |= np.uint64(1) << np.uint64(k)
    if n < 64:
        spaces |= ALL << np.uint64(n)
    begins = ~spaces & ((spaces << np.uint64(1)) | after_space)
    ends = spaces & ((~spaces << np.uint64(1)) | (after_space ^ np.uint64(1)))
    return begins, ends, spaces >> np.uint64(63)


@_inline
def _grown(array: np.ndarray, size: int) -> np.ndarray:
    if size <= len(array):
        return array
    bigger = np.empty(max(size, 2 * len(array)), array.dtype)
    bigger[: len(array)] = array
    return bigger


@numba.njit(cache=True, nogil=True)
def hash_words(
    data: np.ndarray, offsets: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each word's hash (unset past LONGEST bytes), each text's number of words, and ``(word
    index, start, end)`` of each longer word. A text is read in 64-byte blocks (:func:`edges`)."""
    texts = len(offsets) - 1
    counts = np.zeros(texts, np.int64)
    # Room for a word per 4 bytes (text has one per 6 or 7), grown when a block's words might not
    # fit (at most 32 end in one). A word per 2 bytes, the most there can be, is 50 MB for 12 MB
    # of text: past glibc's 32 MB ceiling for reusing freed memory (fresh pages every call).
    hashes = np.empty((offsets[texts] - offsets[0]) // 4 + 32, np.uint64)
    long_words = np.empty(48, np.int64)  # (word index, start, end), end to end
    w = longs = 0
    for t in range(texts):
        if not valid[t]:
            continue
        at, end = offsets[t], offsets[t + 1]
        start = -1  # where the word being read began (-1: none)
        after_space = np.uint64(1)
        first = w
        while True:  # a text ending where a block does gets an empty block, ending its word
            n = min(64, end - at)
            begins, ends, after_space = edges(data, at, n, after_space)
            if w + 32 > len(hashes):
                hashes = _grown(hashes, w + 32)
            while True:  # beginnings and ends alternate
                if start < 0:
                    if not begins:
                        break
                    start = at + np.int64(trailing_zeros(begins))
                    begins &= begins - np.uint64(1)
                if not ends:
                    break
                stop = at + np.int64(trailing_zeros(ends))
                ends &= ends - np.uint64(1)
                if stop - start > LONGEST:
                    long_words = _grown(long_words, 3 * longs + 3)
                    long_words[3 * longs : 3 * longs + 3] = (w, start, stop)
                    longs += 1
                else:
                    hashes[w] = xxh3(data, start, stop - start)
                w += 1
                start = -1
            if n < 64:
                break
            at += 64
        counts[t] = w - first
    return hashes[:w].copy(), counts, long_words[: 3 * longs].copy().reshape((longs, 3))


# The token table's constants.
MIX_1, MIX_2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xFF51AFD7ED558CCD)
FIELDS = 5  # a token's record: its first 8 bytes, its next 8, size, last text, frequency


@_inline
def word_at(data: np.ndarray, at: int, count: int) -> np.uint64:
    """The ``count`` bytes at ``at`` (at most 8 of them, none when ``count <= 0``) as a
    little-endian integer, zero above."""
    if at + 8 <= len(data):
        half = np.uint64(4 * min(max(count, 0), 8))  # shifted twice: 64 is past a shift's reach
        return read_le(data, at, 8) & ~((ALL << half) << half)
    return read_le(data, at, min(count, 8))


@_inline
def token_hash(
    head: np.uint64, tail: np.uint64, data: np.ndarray, first: int, size: int
) -> np.uint64:
    """A hash of the ``size`` bytes at ``first``, whose first 16 are ``head`` and ``tail``
    (:func:`word_at`): the tokens' slots in the table, never their counts."""
    h = (head * MIX_1) ^ (tail + np.uint64(size))
    for at in range(first + 16, first + size, 8):
        h = (h ^ word_at(data, at, first + size - at)) * MIX_1
        h ^= h >> np.uint64(29)
    h = (h ^ (h >> np.uint64(32))) * MIX_2
    return h ^ (h >> np.uint64(29))


@_inline
def _table(records: np.ndarray, starts: np.ndarray, tokens: np.ndarray, bits: int) -> np.ndarray:
    """The token table of ``2**bits`` slots holding the tokens of ``records`` (0, 1, ...)."""
    mask = np.uint32((1 << bits) - 1)
    table = np.zeros(1 << bits, np.uint32)
    for token in range(len(starts) - 1):
        r = FIELDS * token
        head, tail, size = np.uint64(records[r]), np.uint64(records[r + 1]), records[r + 2]
        h = token_hash(head, tail, tokens, starts[token], size)
        slot = np.int64(h >> np.uint64(64 - bits))
        while table[slot] != 0:
            slot = (slot + 1) & np.int64(mask)
        table[slot] = (np.uint32(h & LOW32) & ~mask) | np.uint32(token + 1)
    return table


@numba.njit(cache=True, nogil=True)
def token_document_frequencies(
    data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`tokenize`'s tokens of every text and in how many texts each occurs: the audit's
    own count, sharing no code with the fit's Arrow split and dictionary."""
    starts, tokens, frequency, _, _ = tokenize(data, offsets, np.ones(0, np.bool_), False)
    return starts, tokens, frequency


@numba.njit(cache=True, nogil=True)
def tokenize(
    data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, emit: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct whitespace tokens of texts ``data[offsets[t]:offsets[t + 1]]`` (``valid[t]``
    ones if ``valid`` is not empty) as Arrow offsets and bytes, in order of first appearance;
    unless ``emit``, in how many texts each occurs (else 0); if ``emit``, each word's token id,
    words end to end (else none); each text's number of words. Behind ``Words.of_compiled``.

    Blocks of 64 bytes as in :func:`hash_words`. Tokens are told apart by their bytes: open
    addressing (linear probing, at most half full, rebuilt twice as large from the stored
    tokens; under ``2**31`` tokens) over ``table``, a slot keeping a token's id + 1 in its low
    ``bits`` bits and bits of its hash above them (0: empty), so a probe passing another token
    reads nothing else; confirmed on the token's record (``FIELDS`` int64 of ``records`` by id:
    first 16 bytes, size, last text, count), past 16 bytes on the stored token."""
    bits, records = 12, np.empty(FIELDS * 1024, np.int64)
    table = np.zeros(1 << bits, np.uint32)
    starts = np.zeros(1025, np.int64)  # token i is tokens[starts[i]:starts[i + 1]]
    tokens = np.empty(8192, np.uint8)
    codes = np.empty((offsets[-1] - offsets[0]) // 4 + 32 if emit else 0, np.int64)  # as hashes
    counts = np.zeros(len(offsets) - 1, np.int64)
    distinct = w = 0
    for text in range(len(offsets) - 1):
        if len(valid) and not valid[text]:
            continue
        at, end = offsets[text], offsets[text + 1]
        first = -1  # where the token being read began (-1: none)
        after_space = np.uint64(1)  # whether the byte before the block is whitespace or none
        before = w
        while True:  # a text ending where a block does gets an empty block, ending its token
            n = min(64, end - at)
            begins, ends, after_space = edges(data, at, n, after_space)
            if emit and w + 32 > len(codes):
                codes = _grown(codes, w + 32)
            while True:  # beginnings and ends alternate
                if first < 0:
                    if not begins:
                        break
                    first = at + np.int64(trailing_zeros(begins))
                    begins &= begins - np.uint64(1)
                if not ends:
                    break
                size = at + np.int64(trailing_zeros(ends)) - first
                ends &= ends - np.uint64(1)
                head, tail = word_at(data, first, size), word_at(data, first + 8, size - 8)
                h = token_hash(head, tail, data, first, size)
                mask = np.uint32((1 << bits) - 1)
                slot = np.int64(h >> np.uint64(64 - bits))
                low = np.uint32(h & LOW32)
                while True:
                    value = table[slot]
                    if value == 0:  # a new token
                        token = distinct
                        distinct += 1
                        records = _grown(records, FIELDS * distinct)
                        starts = _grown(starts, distinct + 1)
                        tokens = _grown(tokens, starts[token] + size)
                        for k in range(size):
                            tokens[starts[token] + k] = data[first + k]
                        starts[distinct] = starts[token] + size
                        r = FIELDS * token
                        records[r], records[r + 1] = np.int64(head), np.int64(tail)
                        records[r + 2], records[r + 3], records[r + 4] = size, -1, 0
                        table[slot] = (low & ~mask) | np.uint32(distinct)
                        if 2 * distinct > (1 << bits):
                            bits += 1
                            table = _table(records, starts[: distinct + 1], tokens, bits)
                        break
                    if (value ^ low) & ~mask == 0:
                        token = np.int64(value & mask) - 1
                        r = FIELDS * token
                        same = records[r] == np.int64(head) and records[r + 1] == np.int64(tail)
                        if same and records[r + 2] == size:
                            for k in range(16, size):
                                if tokens[starts[token] + k] != data[first + k]:
                                    same = False
                                    break
                            if same:
                                break
                    slot = (slot + 1) & np.int64(mask)
                if emit:
                    codes[w] = token
                else:  # the document frequency
                    records[FIELDS * token + 4] += records[FIELDS * token + 3] != text
                    records[FIELDS * token + 3] = text
                w += 1
                first = -1
            if n < 64:
                break
            at += 64
        counts[text] = w - before
    frequency = records[FIELDS - 1 : FIELDS * distinct : FIELDS].copy()
    starts, tokens = starts[: distinct + 1].copy(), tokens[: starts[distinct]].copy()
    return starts, tokens, frequency, codes[:w], counts
