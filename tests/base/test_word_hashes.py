"""The compiled word hasher gives the xxhash library's xxh3-64 of every ``str.split()`` word."""

import random

import numpy as np
import pyarrow as pa
import xxhash

from corpus_platform.base.hashing import DEFAULT_NORMALIZATION
from corpus_platform.base.word_hashes import HashSet, word_hashes
from corpus_platform.base.word_kernels import LONGEST
from tests.realtext import real_texts


def _expected(texts: list[str | None]) -> tuple[list[int], list[int]]:
    words = [t.split() if t is not None else [] for t in texts]
    hashes = [xxhash.xxh3_64_intdigest(w.encode()) for ws in words for w in ws]
    return hashes, [len(ws) for ws in words]


def _check(texts: list[str | None] | pa.Array, plain: list[str | None] | None = None) -> None:
    hashes, counts = word_hashes(texts)
    expected_hashes, expected_counts = _expected(plain if plain is not None else texts)
    assert hashes.dtype == np.uint64 and counts.dtype == np.int64
    assert counts.tolist() == expected_counts
    assert hashes.tolist() == expected_hashes


def test_every_word_length_through_and_past_the_compiled_paths() -> None:
    """Words of 1 to 300 bytes cross every XXH3 length class (1-3, 4-8, 9-16, 17-128 in its
    four steps) and the library fallback above LONGEST, in ASCII and in 2-, 3- and 4-byte
    UTF-8."""
    rng = random.Random(5)
    alphabets = ["abcxyz019_-.", "ab\u00e9\u00df", "a\u6f22\u5b57", "a\U0001f600"]
    texts = []
    for alphabet in alphabets:
        for length in range(1, 301):
            word = (
                "".join(rng.choices(alphabet, k=length)).encode()[:length].decode(errors="ignore")
            )
            texts.append(f"{word} x {word}{word}")
    assert max(len(w.encode()) for t in texts for w in t.split()) > 2 * LONGEST
    _check(texts)


def _check_alone(texts: list[str]) -> None:
    """:func:`_check` of ``texts`` in an array whose data buffer ends where their bytes do."""
    data = [t.encode() for t in texts]
    offsets = np.cumsum([0] + [len(b) for b in data], dtype=np.int64)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    _check(pa.Array.from_buffers(pa.large_string(), len(texts), buffers), texts)


def test_words_across_64_byte_blocks_and_at_the_buffer_s_end() -> None:
    """The kernel reads a text 64 bytes at a time, and a word of up to 8 bytes as the 8 bytes
    from its start, fewer where the buffer ends: words begin at every offset of a block (and
    cross into the next), end texts that end where a block does, and end the buffer with fewer
    than 8 bytes after their start; words of a byte each outgrow the room first set aside."""
    texts = []
    for length in [*range(1, 18), 31, 32, 33, 64, 65, LONGEST, LONGEST + 1]:
        word = "".join(chr(ord("a") + (length + k) % 26) for k in range(length))
        texts += [" " * shift + word + " z" for shift in range(64)]
        texts += [" " * (64 * blocks - length) + word for blocks in (1, 2, 3)]
        _check_alone([word])
        _check_alone(["first", f"y {word}"])
    _check_alone(texts)
    _check_alone(["a " * 500, "b" + " c" * 700, "d " * 64])


def test_random_bytes_hash_as_the_library_does() -> None:
    rng = random.Random(7)
    texts = [
        " ".join(
            "".join(chr(rng.randrange(33, 0x2FF)) for _ in range(rng.randint(1, 40)))
            for _ in range(rng.randint(0, 30))
        )
        for _ in range(3000)
    ]
    _check(texts)


def test_whitespace_is_str_split_s_and_nulls_have_no_words() -> None:
    texts = ["a\x1cb", "c\x1fd e", "x\u00a0y", "z\u2003w", "caf\u00e9 ok", None, ""]
    texts += ["\u3000lead", "trail\u2029", "\u0085", "  two  spaces  ", "\t\n\x0b\x0c\r"]
    _check(texts)
    assert word_hashes([None, "", "   "])[1].tolist() == [0, 0, 0]
    assert len(word_hashes([])[0]) == 0


def test_arrow_input_sliced_and_of_either_string_type() -> None:
    texts = [f"row {i} has words {'w' * (i % 40)}" for i in range(500)] + [None]
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(texts, kind)
        _check(array, texts)
        _check(array.slice(123, 200), texts[123:323])


def test_real_debian_text_raw_and_normalized() -> None:
    """Copyright files (license boilerplate), changelogs (some not UTF-8 on disk) and manual
    pages, as they are and as the dedup normalization leaves them."""
    texts = real_texts(600)
    _check(texts)
    _check([DEFAULT_NORMALIZATION.apply(t) for t in texts])


def test_hash_set_membership_is_python_set_membership() -> None:
    """Random 64-bit values, 0, the largest value and values that share their first slot."""
    rng = np.random.default_rng(3)
    members = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64, endpoint=True)
    members = np.concatenate([members, np.array([0, 2**64 - 1], np.uint64)])
    probes = np.concatenate([members[::3], rng.integers(0, 2**63, 20000, dtype=np.uint64)])
    probes = np.concatenate([probes, np.array([1, 2**63], np.uint64)])
    held = HashSet.of(members)
    expected = set(members.tolist())
    assert held.contains(probes).tolist() == [int(p) in expected for p in probes.tolist()]
    without_zero = HashSet.of([*members[:10].tolist(), 7])
    assert not without_zero.contains(np.zeros(1, np.uint64))[0]
    assert without_zero.contains(np.array([7], np.uint64))[0]
    assert not HashSet.of([]).contains(np.array([0, 5], np.uint64)).any()
