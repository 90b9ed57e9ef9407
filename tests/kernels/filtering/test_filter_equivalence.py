"""The vectorized filter scores equal the original per-document definitions, bit for bit, on
generated prose, real text from /usr/share and hand-made edge cases."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from corpus_platform.kernels.filtering.filters import load_blocklist
from corpus_platform.kernels.filtering.pii import scrub, scrub_all
from corpus_platform.kernels.filtering.textstats import text_scores
from tests.kernels.filtering.reference_filters import reference_scores
from tests.realtext import real_texts

EDGE_CASES = [
    "",
    "   ",
    "\n\n\n",
    "one",
    "  leading and trailing spaces  ",
    "a a a a a a a a a a a a a a a a a a a a",
    "ab cd ab cd ab cd",
    "x y z x y z q x y z x y z",
    "The THE the tHe wITh With HAVE",
    "Ünïcödé wörds and the naïve café, with \u017ftrange \u017f and the KELVIN \u212a sign",
    "http://example.com www.example.org page.html x.io/path not.a.url",
    "- bullet one\n- bullet two\n• three\n\n\n* four...\nfive…",
    "def f():\n    return 1;\n}\n{\nimport os\nfrom x import y\nreturn\n#include <a>",
    "lorem ipsum dolor {{template}} #tag ... … and the fuck",
    "line\nline\nline\n\npara\n\npara",
    "tab\tseparated\x0bvertical\x0cform\x1cfile\x1dgroup\x1erecord\x1funit\x85nel\u2028ls",
]


def _generated(count: int) -> list[str]:
    rng = random.Random(7)
    vocab = ["the", "of", "and", "to", "with", "have", "be", "that", "a", "in"]
    vocab += [f"w{i}" for i in range(300)] + ["repeat me now", "x.com", "#", "..."]
    texts = []
    for _ in range(count):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 600))]
        lines = [" ".join(words[i : i + rng.randint(3, 30)]) for i in range(0, len(words), 20)]
        texts.append(("\n\n" if rng.random() < 0.5 else "\n").join(lines))
    return texts


@pytest.mark.parametrize(
    "texts",
    [
        pytest.param(EDGE_CASES, id="edge-cases"),
        pytest.param(_generated(150), id="generated"),
        pytest.param(real_texts(300), id="real-usr-share"),
    ],
)
def test_vectorized_scores_equal_the_reference(texts: list[str]) -> None:
    blocklist = load_blocklist(None)
    scores = text_scores(texts, blocklist)
    for index, text in enumerate(texts):
        expected = reference_scores(text, blocklist)
        assert set(scores) == set(expected)
        actual = {name: float(values[index]) for name, values in scores.items()}
        assert actual == expected, f"document {index}: {text[:80]!r}"


def test_batches_do_not_change_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _generated(40)
    whole = text_scores(texts, frozenset())
    monkeypatch.setattr("corpus_platform.kernels.filtering.textstats.BATCH_DOCS", 7)
    batched = text_scores(texts, frozenset())
    assert {k: v.tolist() for k, v in whole.items()} == {k: v.tolist() for k, v in batched.items()}


def test_ngram_scores_by_hand() -> None:
    scores = text_scores(["ab cd ab cd", "ab cd ef gh", "a b c a b c", "one"], frozenset())
    assert scores["top_2gram_char_fraction"].tolist() == [1.0, 0.0, 4 / 6, 0.0]
    assert scores["duplicate_5gram_char_fraction"].tolist() == [0.0, 0.0, 0.0, 0.0]
    six = text_scores(["a b c d e a b c d e"], frozenset())
    assert six["duplicate_5gram_char_fraction"].tolist() == [0.5]


def test_arrow_splits_words_where_python_does() -> None:
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    strings = [f"a{chr(c)}b" for c in points]
    arrow = pc.utf8_split_whitespace(pa.array(strings)).to_pylist()
    assert [c for c, s, a in zip(points, strings, arrow, strict=True) if s.split() != a] == []


def test_pii_prefilter_skips_only_texts_without_personal_data() -> None:
    actions = {"email": "replace", "phone": "replace", "ip": "replace", "credit_card": "drop"}
    actions["ssn"] = "drop"
    texts = (
        real_texts(150)
        + _generated(30)
        + [
            None,
            "mail me at someone@example.org today",
            "card 4111 1111 1111 1111 and 4111-1111-1111-1112",
            "ssn 123-45-6789, phone (555) 123-4567, +1 555.123.4567",
            "hosts 192.168.0.1 and fe80::1 and 2001:db8::ff00:42:8329",
            "Arabic-Indic digits ١٢٣-٤٥-٦٧٨٩ and version 1.2.3.4",
        ]
    )
    fast = scrub_all(texts, actions)
    slow = [None if t is None else scrub(t, actions) for t in texts]
    assert fast == slow
    assert sum(bool(r and r.found) for r in fast) >= 5
