"""The compiled character, line and paragraph scores (``line_kernel``) against ``line_scores``,
their definition, bit for bit: on generated ASCII texts holding every pattern the rules look at
(whitespace Python strips, paragraph breaks, repeats, code lines, dots, bullets), on texts above
ASCII (left to ``line_scores``) and on real text from /usr/share."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.words import text_buffers, word_counts
from corpus_platform.kernels.filtering.line_kernel import COLUMNS, _distinct, _space, line_stats
from corpus_platform.kernels.filtering.textstats import (
    _may_hold_lorem,
    batch_line_scores,
    line_scores,
)

WHITESPACE = " \t\x0b\x0c\r\x1c\x1d\x1e\x1f"  # str.strip()'s and \s's, but \n, in ASCII
LINES = [
    *("", "word", "two words here", "  indented", "tab\tinside", "nul\x00byte", "\x00", "\x7f"),
    *("def f(x):", "def", "define", "class A:", "classy", "import os", "importer"),
    *("from x import y", "from  x import y", "from x\timport y", "from x importer"),
    *("from x.y import (z,", "from ximport", "from x import", "from x  import y"),
    *("from  import x", "from import x", "from x\timport import", "from a\x1cb import"),
    *("#include <stdio.h>", "#includes", "#inc", "# heading", "#", "##", "a # b"),
    *("return", "return x", "returned", "return(x)", "return_x", "return1", "return.", "ret"),
    *("for (i = 0;", "for(i)", "for x", "if (x)", "if(x)", "if x", "iffy", "fort"),
    *("}", "{", "} else", "{ x }", "x = 1;", "a {", "a }", "a ;", ";", "x; y", "a{b"),
    *("...", "....", ".....", "......", "..", ".", "end...", "end..", "a...b... c", "x.y"),
    *("- item", "* star", "-", "*", "-- dash", "a - b", "+ plus", "lorem ipsum", "LOREM Ipsum"),
]
SEPARATORS = [
    *("\n", "\r\n", "\n\n", "\n \n", "\n\t\x0b\n", "\n\x1c\n\x1d\n", "\n\n\n", " \n"),
    *("\n \x0c \n  ", "\n\x1e\x1f\n", "\n\r\n", "\r\n\r\n", "\n\x0c\n", "\n\x00\n", "\r"),
]
EDGE_CASES = [
    *("", "\n", "\n\n\n", WHITESPACE, WHITESPACE + "\n" + WHITESPACE, "\n\x1c\n", "x"),
    *("a\n\x1c\nb", "a\n \nb\n\nb", "a\nb\n\na\nb", "a \nb\n\na\nb", "a\n b\n\na\nb", "a\n\nb\n"),
    *("x\r\n\r\ny\r\n\r\nx", "p\n\nq\n \n\t\np\n\n\n\nq", "\n\np\n\n", "  a  \n\n  a"),
    *("...", "....", "......", ".......", "a...\n...b", "#...#", ". . .", "..\n."),
    *("{", "}", "x {", "ok\nreturn\nreturn", "line\nline\nline\n\npara\n\npara"),
]
ABOVE_ASCII = [
    *("\u2022 bullet\n\u2022 bullet", "\u2013 dash\n- dash", "wait\u2026\nmore\u2026"),
    *("a\u00a0\n\u00a0\nb", "a\u2028b\n\u2029\nc", "caf\u00e9\n\ncaf\u00e9", "\x85\n\x85\nx"),
    *("lorem IPSUM \u00fcber", "\u25cf one\n\u25a0 two\n\u2043 three", "\ufffd"),
]


def _padded(rng: random.Random, line: str) -> str:
    def pad() -> str:
        return "".join(rng.choice(WHITESPACE) for _ in range(rng.choice((0, 0, 1, 3))))

    return pad() + line + pad()


def generated(count: int, seed: int) -> list[str]:
    """ASCII texts from a few lines each (so lines repeat), with a repeated run of lines now
    and then (so paragraphs repeat), every separator between them and whitespace around."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        pool = [
            _padded(
                rng, rng.choice(LINES) + (" " + rng.choice(LINES) if rng.random() < 0.3 else "")
            )
            for _ in range(rng.randint(1, 8))
        ]
        pieces: list[str] = []
        for _ in range(rng.randint(0, 40)):
            if len(pieces) > 4 and rng.random() < 0.15:
                start = rng.randrange(len(pieces) - 2)
                pieces += pieces[start : start + rng.randint(1, 6)]
            pieces += [rng.choice(pool), rng.choice(SEPARATORS)]
        if pieces and rng.random() < 0.5:
            pieces.pop()
        texts.append(_padded(rng, "".join(pieces)))
    return texts


def _bits(scores: dict[str, float]) -> dict[str, str]:
    """Each score's exact float64 (``float.hex`` tells 0.0 from -0.0 and every last bit)."""
    return {name: float(value).hex() for name, value in scores.items()}


def assert_equal_to_line_scores(texts: list[str], words: np.ndarray | None = None) -> None:
    """Every ASCII text is scored by the kernel, every other one left to Python; every kernel
    score is ``line_scores``' (but the lorem flag, left to Python: 0), and so is every score
    ``text_scores`` puts in its columns (kernel, lorem flag and fallback)."""
    array = pa.array(texts, pa.large_string())
    if words is None:
        words = word_counts(array)  # len(text.split()), as tests/base/test_words.py checks
    data, offsets = text_buffers(array)
    values = np.zeros((len(COLUMNS), len(texts)))
    ascii_only = line_stats(data, offsets, words, values)
    assert ascii_only.tolist() == [text.isascii() for text in texts]
    lorem = _may_hold_lorem(array)
    columns = batch_line_scores(texts, array, words, lorem)
    assert list(columns) == list(line_scores("", 0))
    for index, text in enumerate(texts):
        expected = line_scores(text, int(words[index]), lorem[index])
        batch = {name: column[index] for name, column in columns.items()}
        assert _bits(batch) == _bits(expected), f"text {index}: {text[:200]!r}"
        if ascii_only[index]:
            kernel = {name: values[k, index] for k, name in enumerate(COLUMNS)}
            expected["c4_lorem_ipsum"] = 0.0
            assert _bits(kernel) == _bits(expected), f"text {index}: {text[:200]!r}"


def test_whitespace_is_what_python_strips() -> None:
    """The kernel's whitespace is ``str.strip()``'s and the regex ``\\s``'s on every ASCII byte
    (and the generated texts hold all of it)."""
    python = [c.isspace() for c in map(chr, range(128))]
    assert [_space(np.uint8(byte)) for byte in range(128)] == python
    assert [bool(re.match(r"\s", c)) for c in map(chr, range(128))] == python
    assert sorted("\n" + WHITESPACE) == [c for c in map(chr, range(128)) if c.isspace()]


@pytest.mark.parametrize("seed", range(4))
def test_generated_ascii_texts(seed: int) -> None:
    texts = generated(400, seed)
    assert_equal_to_line_scores(texts)


def test_edge_cases_lines_alone_and_no_words() -> None:
    texts = EDGE_CASES + [_padded(random.Random(i), line) for i, line in enumerate(LINES)]
    texts += [f"{line}\n{line}\n\n{line}" for line in LINES]
    assert_equal_to_line_scores(texts)
    assert_equal_to_line_scores(texts, np.zeros(len(texts), np.int64))


def test_texts_above_ascii_are_left_to_python() -> None:
    texts = ABOVE_ASCII + EDGE_CASES + ["Lorem Ipsum dolor", "no lorem here"]
    assert_equal_to_line_scores(texts)
    array, words = pa.array(texts, pa.large_string()), np.ones(len(texts), np.int64)
    scores = batch_line_scores(texts, array, words, [False] * len(texts))
    assert scores["c4_lorem_ipsum"].sum() == 0.0  # no RE2 pre-check hit: no lorem flag


def test_equal_hashes_are_confirmed_byte_for_byte() -> None:
    """Items whose hashes collide (all 0 here) are told apart by their bytes."""
    text = np.frombuffer(b"abcabdabcxy", np.uint8)
    items = np.array([[0, 3, 6, 9], [3, 6, 9, 11]], np.int64)
    table = np.full(16, -1, np.int64)
    assert _distinct(text, items, np.zeros(4, np.uint64), 4, table) == (3, 8)
    assert (table == -1).all()


def _usr_share_texts() -> list[str]:
    """Every copyright file and changelog under /usr/share/doc and a twentieth of the section-1
    manual pages, decoded as UTF-8 with errors replaced, each distinct text once (packages of
    one source share them)."""
    paths = sorted(Path("/usr/share/doc").glob("*/copyright"))
    paths += sorted(Path("/usr/share/doc").glob("*/changelog*"))
    paths += sorted(Path("/usr/share/man/man1").glob("*.gz"))[::20]
    texts = []
    for path in paths:
        if path.is_file():
            data = path.read_bytes()
            data = gzip.decompress(data) if path.suffix == ".gz" else data
            texts.append(data.decode("utf-8", errors="replace"))
    return list(dict.fromkeys(texts))


def test_real_text_from_usr_share() -> None:
    texts = _usr_share_texts()
    assert len(texts) >= 100, "no real text under /usr/share/doc"
    # Texts above ASCII once more with those characters as "?", so the kernel sees them too.
    folded = [text.encode("ascii", "replace").decode() for text in texts if not text.isascii()]
    for start in range(0, len(texts) + len(folded), 500):
        batch = (texts + folded)[start : start + 500]
        assert_equal_to_line_scores(batch)
