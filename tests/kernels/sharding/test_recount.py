"""The shard audit's own word count (numba, on UTF-8 bytes) gives ``len(text.split())``: for
every code point between two letters, for texts of mixed whitespace, and for real Debian text."""

import random

import numpy as np

from corpus_platform.kernels.sharding.compiled import WHITESPACE, recount_words
from tests.realtext import real_texts


def test_every_code_point_splits_as_str_split_does() -> None:
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"a{chr(c)}b" for c in points]
    counts = recount_words(texts).tolist()
    assert counts == [len(t.split()) for t in texts]
    splitting = [c for c, n in zip(points, counts, strict=True) if n == 2]
    assert splitting == WHITESPACE.tolist() == [c for c in points if chr(c).isspace()]


def test_mixed_whitespace_and_empty_texts() -> None:
    rng = random.Random(4)
    pieces = ["word", "naïve", "日本", "😀", " ", "\t", "\n\n", "\x1c", "\u3000", "\xa0", "\u2029"]
    texts = ["", " ", "\u3000"] + [
        "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(2000)
    ]
    assert recount_words(texts).tolist() == [len(t.split()) for t in texts]
    assert np.array_equal(recount_words([]), np.zeros(0, np.int64))


def test_real_debian_text() -> None:
    texts = real_texts(400)  # /usr/share/doc and /usr/share/man, some not UTF-8 at first
    assert texts
    assert recount_words(texts).tolist() == [len(t.split()) for t in texts]
