"""Splitting a batch into whitespace words: Arrow's ASCII kernel, on texts whose other
whitespace is overwritten with spaces, splits where str.split() does."""

import random

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base import words
from corpus_platform.base.words import Words, split_whitespace, split_words, word_counts
from tests.realtext import real_text_records


def _python_words(texts: list[str | None]) -> list[list[str]]:
    return [t.split() if t is not None else [] for t in texts]


def _words_of(texts: list[str | None]) -> list[list[str]]:
    words = Words.of(pa.array(texts, pa.large_string()))
    dictionary = words.dictionary.to_pylist()
    flat = [dictionary[c] for c in words.codes.tolist()]
    out, start = [], 0
    for count in words.counts.tolist():
        out.append(flat[start : start + count])
        start += count
    return out


def test_split_equals_the_utf8_kernel_on_ascii_batches_with_and_without_separators() -> None:
    rng = random.Random(11)
    no_separators = [chr(c) for c in range(128) if c not in range(0x1C, 0x20)]
    for alphabet in (no_separators, [chr(c) for c in range(128)], list("ab \t\n\r\x0b\x0c")):
        texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(2000)]
        assert _words_of(texts) == _python_words(texts)
        joined = [" ".join(t.split()) for t in texts]  # as normalized texts are
        array = pa.array(joined, pa.large_string())
        assert split_whitespace(array).equals(pc.utf8_split_whitespace(array))


def test_split_equals_str_split_at_every_code_point() -> None:
    """Every code point between words, doubled, leading and trailing a text, in one batch with
    plain ASCII texts (so whitespace is overwritten in a batch that also holds texts without
    any): Words.of and split_whitespace split where ``str.split()`` does, and word_counts
    counts as many words."""
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"a{chr(c)}b{chr(c)}{chr(c)}c\u00e9{chr(c)}" for c in points]
    texts += [f"{chr(c)}x" for c in points[::7]] + ["plain words", "", None]
    expected = _python_words(texts)
    assert _words_of(texts) == expected
    split = split_whitespace(pa.array(texts, pa.string())).to_pylist()
    assert [[w for w in words if w] for words in split[:-1]] == expected[:-1]
    assert word_counts(pa.array(texts, pa.string())).tolist() == [len(w) for w in expected]


def test_split_of_texts_with_separators_and_unicode_spaces() -> None:
    texts = ["a\x1cb", "c\x1fd e", "x\u00a0y", "z\u2003w", "caf\u00e9 ok", None, ""]
    texts += ["\u3000lead", "trail\u2029", "\u0085", "\u00c2\u00a0\u00e2\u0080"]
    assert _words_of(texts) == _python_words(texts)
    assert _words_of(["a\x1cb"]) == [["a", "b"]]
    array = pa.array(texts, pa.string())
    before = array.buffers()[2].to_pybytes()
    split_whitespace(array)
    assert array.buffers()[2].to_pybytes() == before  # the caller's texts are left as they were


def test_split_of_slices_chunks_and_empty_batches() -> None:
    array = pa.array(["\x1c", "one two", "three"], pa.string())
    assert split_whitespace(array.slice(1)).to_pylist() == [["one", "two"], ["three"]]
    chunked = pa.chunked_array([array.slice(1, 1), array.slice(2)])
    assert split_whitespace(chunked).to_pylist() == [["one", "two"], ["three"]]
    assert split_whitespace(pa.array([], pa.string())).to_pylist() == []
    assert Words.of(pa.array([], pa.string())).counts.tolist() == []


def test_split_words_keeps_the_texts_type_skips_nulls_and_reads_only_its_slice() -> None:
    # a null slot that keeps bytes (if_else leaves the rejected text's bytes behind)
    masked = pc.if_else(pa.array([False, True, True]), pa.array(["\u00e9 x", "y  z", " "]), None)
    for array in (masked, masked.cast(pa.large_string())):
        words, counts = split_words(array)
        assert words.type == array.type
        assert words.to_pylist() == ["y", "z"] and counts.tolist() == [0, 2, 0]
    sliced = pa.array(["skipped words", "x\u3000y", "z\x1c"], pa.string()).slice(1)
    words, counts = split_words(pa.chunked_array([sliced.slice(0, 1), sliced.slice(1)]))
    assert words.to_pylist() == ["x", "y", "z"] and counts.tolist() == [2, 1]
    texts = [r["body"] for r in real_text_records(200)]  # copyright files, changelogs, man pages
    words, counts = split_words(pa.array(texts, pa.large_string()))
    assert words.to_pylist() == [w for t in texts for w in t.split()]
    assert counts.tolist() == [len(t.split()) for t in texts]
    binary_words, binary_counts = split_words(pa.array([b"a  b", None], pa.binary()))
    assert binary_words.type == pa.large_string() and binary_words.to_pylist() == ["a", "b"]
    assert binary_counts.tolist() == [2, 0]
    empty_words, empty_counts = split_words(pa.array([], pa.large_string()))
    assert len(empty_words) == 0 and empty_counts.tolist() == []


def test_word_counts_are_len_of_str_split_on_random_and_real_text() -> None:
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)] + ["\u00a0", "\u2003", "\u00e9", "\u3000"]
    texts: list[str | None] = [
        "".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(2000)
    ]
    texts += [None, "", "  ", " lead", "trail\n", "\x1c"]
    texts += [r["body"] for r in real_text_records(300)]  # copyright files, changelogs, man pages
    expected = [len(t.split()) if t is not None else 0 for t in texts]
    for array in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string())):
        assert word_counts(array).tolist() == expected
    separators = set("\x1c\x1d\x1e\x1f")
    ascii_only = [  # a batch the ASCII kernel splits
        t for t in texts if t is None or (t.isascii() and not separators & set(t))
    ]
    assert word_counts(pa.array(ascii_only)).tolist() == [
        len(t.split()) if t is not None else 0 for t in ascii_only
    ]
    array = pa.array(texts, pa.string())
    assert word_counts(array.slice(7, 500)).tolist() == expected[7:507]  # an offset into buffers
    chunked = pa.chunked_array([array.slice(0, 900), array.slice(900)])
    assert word_counts(chunked).tolist() == expected
    # a null slot that keeps bytes (if_else leaves the rejected text's bytes behind)
    masked = pc.if_else(pa.array([False, True]), pa.array(["\u00e9 x", "y z"]), None)
    assert masked.to_pylist() == [None, "y z"] and word_counts(masked).tolist() == [0, 2]
    for edge in ([], [None, None], ["", ""], ["", "a\x85b", ""], ["\u2028x y\u3000z"]):
        assert word_counts(pa.array(edge, pa.string())).tolist() == [
            len(t.split()) if t is not None else 0 for t in edge
        ]


def test_word_counts_cut_into_byte_batches_count_the_same(monkeypatch) -> None:
    rng = random.Random(9)
    alphabet = [*"ab  \n\t\x1c", "\u00e9", "\u2028"]
    texts: list[str | None] = [
        "".join(rng.choices(alphabet, k=rng.randint(0, 300))) for _ in range(1000)
    ]
    texts[::97] = [None] * len(texts[::97])
    expected = [len(t.split()) if t is not None else 0 for t in texts]
    for batch_bytes in (1, 100, 5_000, 1 << 22):  # batches of one text to one batch of all
        monkeypatch.setattr(words, "COUNT_BATCH_BYTES", batch_bytes)
        assert word_counts(pa.array(texts, pa.large_string())).tolist() == expected
