"""Compiled walks over a batch of texts' words (numba, nopython mode), straight from the texts'
UTF-8 bytes and Arrow offsets, whitespace being ``str.split()``'s once the texts have been through
:func:`corpus_platform.base.words.ascii_spaced`:

* :func:`hash_words`, behind :func:`corpus_platform.base.word_hashes.word_hashes`: XXH3-64 of
  every word where it lies. The arithmetic is xxhash's (xxhash.h: XXH3_64bits, seed 0, the
  default secret) for inputs of 1 to 128 bytes, the only paths a word of that size takes;
  ``tests/base/test_word_hashes.py`` compares it with the xxhash library at every length.
* :func:`token_document_frequencies`, behind the statistics audit's own count
  (:func:`corpus_platform.kernels.statistics.recompute.token_document_counts`): in how many texts
  each token occurs, tokens told apart by their bytes in a table of their own.

Imported on first use only (numba takes a third of a second to import). The functions are
module-level so that numba's on-disk cache (``cache=True``: ``__pycache__`` beside this file)
lets every later process load the machine code instead of compiling it again (seconds). numba
checks a cached function against its own file only, so a kernel module uses nothing compiled
in another file: a change there would leave this file's machine code stale. The helpers are
inlined into the kernels by numba (``inline="always"``); module globals are compile-time
constants.
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
PRIME64_1, PRIME64_2, PRIME64_3 = (
    np.uint64(0x9E3779B185EBCA87),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
)
PRIME_MX1, PRIME_MX2 = np.uint64(0x165667919E3779F9), np.uint64(0x9FB21C651E98DF25)
LOW32 = np.uint64(0xFFFFFFFF)
# The secret's words the short paths read, folded as those paths fold them (seed 0).
_KEY = [int.from_bytes(SECRET[k : k + 8], "little") for k in range(0, len(SECRET), 8)]
FLIP_1TO3 = np.uint64((_KEY[0] & 0xFFFFFFFF) ^ (_KEY[0] >> 32))
FLIP_4TO8 = np.uint64(_KEY[1] ^ _KEY[2])
FLIP_9TO16_LOW = np.uint64(_KEY[3] ^ _KEY[4])
FLIP_9TO16_HIGH = np.uint64(_KEY[5] ^ _KEY[6])
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
    to 8 bytes, both the 1-3 and the 4-8 byte path are computed from one load and the right
    result is kept without a branch: words of either size are common, and a mispredicted
    branch costs more than the other path's arithmetic (a sixth of the kernel's time)."""
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
    """Where words begin and where they end in the ``n`` bytes at ``at`` (at most 64) as two
    bitmasks, bit k for byte ``at + k``: a word ends at the whitespace byte after its last (the
    bits from ``n`` up stand for the text's end, which is whitespace). Then 1 when the block's
    last byte is whitespace, else 0: the next block's ``after_space``, this block's being that
    of the byte before it (1 when there is none). Beginnings and ends alternate."""
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
    """Each word's hash (left unset for a word longer than LONGEST bytes), each text's number of
    words, and ``(word index, start, end)`` of every such longer word. A text is read 64 bytes
    at a time, its words' beginnings and ends found in bitmasks (:func:`edges`)."""
    texts = len(offsets) - 1
    counts = np.zeros(texts, np.int64)
    # Room for a word per 4 bytes (text has one per 6 or 7), grown when a block's words might
    # not fit (at most 32 end in one). Room for a word per 2 bytes, the most there can be, is
    # 50 MB for a batch of 12 MB: past glibc's 32 MB ceiling for reusing freed memory, so every
    # call faulted in fresh pages (a quarter of its time).
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
    mask = np.uint64((1 << bits) - 1)
    table = np.zeros(1 << bits, np.uint64)
    for token in range(len(starts) - 1):
        r = FIELDS * token
        head, tail, size = np.uint64(records[r]), np.uint64(records[r + 1]), records[r + 2]
        h = token_hash(head, tail, tokens, starts[token], size)
        slot = np.int64(h >> np.uint64(64 - bits))
        while table[slot] != 0:
            slot = (slot + 1) & np.int64(mask)
        table[slot] = (h & ~mask) | np.uint64(token + 1)
    return table


@numba.njit(cache=True, nogil=True)
def token_document_frequencies(
    data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In how many texts each whitespace token occurs, straight from the texts' UTF-8 bytes
    (``data`` and Arrow ``offsets``; whitespace is ASCII's, other whitespace having been
    overwritten with spaces): the audit's own count, sharing no code with the fit's Arrow split
    and dictionary. Returns the distinct tokens as Arrow offsets and bytes, in order of first
    appearance, and their counts.

    A text is read 64 bytes at a time, its tokens' beginnings and ends found in a bitmask of
    the block's whitespace (:func:`edges`). Tokens are told apart by their bytes in a table
    of their own: open addressing (linear probing, at most half full, rebuilt twice as large
    from the stored tokens) over ``table``, whose slot keeps a token's id + 1 in its low
    ``bits`` bits and its hash's other bits above them (0: empty), so a probe passing another
    token reads nothing else. A token's record (``FIELDS`` int64 of ``records``, by id) holds
    its first 16 bytes, its size, the last text it occurred in and its count: a slot whose hash
    bits are equal is confirmed on the record, and past 16 bytes on the stored token, so the
    counts do not depend on the hash."""
    bits = 12
    table = np.zeros(1 << bits, np.uint64)
    records = np.empty(FIELDS * 1024, np.int64)
    starts = np.zeros(1025, np.int64)  # token i is tokens[starts[i]:starts[i + 1]]
    tokens = np.empty(8192, np.uint8)
    distinct = 0
    for text in range(len(offsets) - 1):
        at, end = offsets[text], offsets[text + 1]
        first = -1  # where the token being read began (-1: none)
        after_space = np.uint64(1)  # whether the byte before the block is whitespace or none
        while True:  # a text ending where a block does gets an empty block, ending its token
            n = min(64, end - at)
            begins, ends, after_space = edges(data, at, n, after_space)
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
                mask = np.uint64((1 << bits) - 1)
                slot = np.int64(h >> np.uint64(64 - bits))
                while True:
                    value = table[slot]
                    if value == 0:  # a new token
                        token = distinct
                        distinct += 1
                        records = _grown(records, FIELDS * distinct)
                        starts = _grown(starts, distinct + 1)
                        tokens = _grown(tokens, starts[token] + size)
                        tokens[starts[token] : starts[token] + size] = data[first : first + size]
                        starts[distinct] = starts[token] + size
                        r = FIELDS * token
                        records[r], records[r + 1] = np.int64(head), np.int64(tail)
                        records[r + 2], records[r + 3], records[r + 4] = size, -1, 0
                        table[slot] = (h & ~mask) | np.uint64(distinct)
                        if 2 * distinct > (1 << bits):
                            bits += 1
                            table = _table(records, starts[: distinct + 1], tokens, bits)
                        break
                    if (value ^ h) & ~mask == 0:
                        token = np.int64(value & mask) - 1
                        r = FIELDS * token
                        if (
                            records[r] == np.int64(head)
                            and records[r + 1] == np.int64(tail)
                            and records[r + 2] == size
                        ):
                            same = True
                            for k in range(16, size):
                                if tokens[starts[token] + k] != data[first + k]:
                                    same = False
                                    break
                            if same:
                                break
                    slot = (slot + 1) & np.int64(mask)
                r = FIELDS * token
                records[r + 4] += records[r + 3] != text
                records[r + 3] = text
                first = -1
            if n < 64:
                break
            at += 64
    return (
        starts[: distinct + 1].copy(),
        tokens[: starts[distinct]].copy(),
        records[FIELDS - 1 : FIELDS * distinct : FIELDS].copy(),
    )
