"""Words.of_compiled, one compiled walk that splits and dictionary-encodes (the filter's), against
Words.of, Arrow's split and dictionary_encode: equal codes, dictionary (values, order of first
appearance and type) and counts."""

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.word_kernels import MIX_1, MIX_2, token_hash
from corpus_platform.base.words import Words
from tests.kernels.statistics.test_recompute import _colliding
from tests.realtext import real_texts


def _assert_same(texts: pa.Array | pa.ChunkedArray) -> None:
    expected, compiled = Words.of(texts), Words.of_compiled(texts)
    assert compiled.codes.dtype == np.int64 and compiled.counts.dtype == np.int64
    assert compiled.codes.tolist() == expected.codes.tolist()
    assert compiled.dictionary.type == expected.dictionary.type
    assert compiled.dictionary.equals(expected.dictionary)
    assert compiled.counts.tolist() == expected.counts.tolist()


def _both_types(texts: list) -> None:
    for string in (pa.string(), pa.large_string()):
        _assert_same(pa.array(texts, string))


def test_equals_words_of_on_real_text_and_generated_words() -> None:
    texts = real_texts(300)
    _both_types(texts)
    _both_types([t.lower() for t in texts[::-1]])
    rng = random.Random(3)
    alphabet = [*"ab  \t\n\r\x0b\x0c\x1c\x1f\x00é", "\u00a0", "\u2028", "\u3000", "xyz"]
    generated = ["".join(rng.choices(alphabet, k=rng.randint(0, 300))) for _ in range(3000)]
    many = [f"{i:x}" * (1 + i % 5) for i in range(30000)]  # the token table grows many times
    generated += [" ".join(rng.choices(many, k=200)) for _ in range(300)]
    _both_types(generated)


def test_equals_words_of_at_every_code_point_and_on_colliding_tokens() -> None:
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    _both_types([f"a{chr(c)}b{chr(c)}{chr(c)}c\u00e9{chr(c)}" for c in points])
    rng = random.Random(4)
    tokens = [b"0123456789abcdef", b"Q" * 32, b"\x00collide\xc3\xa9\xff\x7f\x01\x1b!?"]
    tokens += [c for token in list(tokens) for c in _colliding(rng, token, 3)]  # equal hashes
    tokens += [b"0123456789abcdef" + b"x" * n for n in range(20)] + [b"a", b"a\x00", b"a\x00\x00"]
    texts = [b" ".join(rng.choices(tokens, k=30)) for _ in range(200)]
    for binary, string in ((pa.binary(), pa.string()), (pa.large_binary(), pa.large_string())):
        _assert_same(pa.array(texts, binary).view(string))  # bytes, not all of them UTF-8


def test_equals_words_of_on_edge_cases() -> None:
    blocks = ["x" * k + " " + "y" * j for k in range(58, 70) for j in (0, 1, 7, 8, 16, 17, 64, 65)]
    blocks += [" " * k + "w" * j for k in range(0, 130, 9) for j in (1, 9, 17, 63, 64, 65, 129)]
    edge = [None, "", " ", "\t\n \x1c", "\u00a0", "\u3000\u2028 ", "a", " a  b ", None, "a"]
    edge += ["x\u00a0y\u2028z\u3000w", "é ü 中文\u2003x", "Q" * 100_000, "Q" * 100_000 + " Q"]
    edge += [*blocks, ("long" * 500 + " ") * 3, "end"]
    _both_types(edge)
    for string in (pa.string(), pa.large_string()):
        array = pa.array(edge, string)
        _assert_same(array.slice(7, 150))
        _assert_same(pa.chunked_array([array.slice(0, 5), array.slice(5, 40), array.slice(45)]))
        _assert_same(pa.chunked_array([], string))
        _assert_same(pa.array([], string))
        _assert_same(pa.array([None, None, ""], string))
        # null slots that keep bytes (if_else leaves the rejected texts' bytes behind)
        keep = pa.array([False, True, False, True])
        texts = pa.array(["\u00e9 x", "y  z", "w w", " "], string)
        _assert_same(pc.if_else(keep, texts, None))
    compiled = Words.of_compiled(pa.array([None, "b a b", "", "a c"], pa.large_string()))
    assert compiled.dictionary.to_pylist() == ["b", "a", "c"]
    assert compiled.codes.tolist() == [0, 1, 0, 1, 2]
    assert compiled.counts.tolist() == [0, 3, 0, 2]


def test_tokens_whose_table_hash_bits_collide_are_told_apart() -> None:
    """16-byte tokens equal in their first 8 bytes and their size whose hashes agree in the bits
    a table of 4096 slots keeps (the top 12, the slot; bits 12-31, in the slot): a table
    that stopped comparing a token's bytes 8-15 would merge them."""
    rng = np.random.default_rng(7)
    head = int.from_bytes(b"collide!", "little")
    letters = rng.integers(ord("a"), ord("z") + 1, size=(300_000, 8), dtype=np.uint64)
    tails = (letters << (np.arange(8, dtype=np.uint64) * np.uint64(8))).sum(axis=1)
    h = np.uint64(head * int(MIX_1) % 2**64) ^ (tails + np.uint64(16))
    h = (h ^ (h >> np.uint64(32))) * MIX_2
    h ^= h >> np.uint64(29)
    kept = (h >> np.uint64(52)) << np.uint64(20) | ((h >> np.uint64(12)) & np.uint64(0xFFFFF))
    order = np.argsort(kept, kind="stable")
    equal = np.flatnonzero(kept[order][1:] == kept[order][:-1])
    pairs = [(int(tails[order[i]]), int(tails[order[i + 1]])) for i in equal]
    pairs = [(a, b) for a, b in pairs if a != b]
    assert len(pairs) >= 3
    tokens = [b"collide!" + t.to_bytes(8, "little") for pair in pairs for t in pair]
    data = np.frombuffer(tokens[0], np.uint8)
    assert int(token_hash(np.uint64(head), np.uint64(pairs[0][0]), data, 0, 16)) == int(
        h[order[equal[0]]]
    )
    rng_texts = random.Random(8)
    texts = [b" ".join(rng_texts.choices(tokens, k=20)).decode() for _ in range(50)]
    _both_types(texts)
    assert len(Words.of_compiled(pa.array(texts)).dictionary) == len(set(tokens))
