"""Quality filters: one keep case and one drop case per filter."""

import pytest

from corpus_platform.config import FilterConfig
from corpus_platform.kernels.filters import (
    FILTER_NAMES,
    duplicate_line_fraction,
    judge_text,
    top_ngram_char_fraction,
)

CONFIG = FilterConfig(min_chars=50, max_chars=2000, min_words=10, max_words=300)
GOOD = " ".join(f"word{i} token{i * 7 % 13}" for i in range(40))


def first_failure(text: str | None) -> str | None:
    failed = [v for v in judge_text(text, CONFIG) if not v.passed]
    return failed[0].name if failed else None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (GOOD, None),
        ("too short to keep", "min_chars"),
        ("x" * 2500, "max_chars"),
        ("a" * 60 + " b c", "min_words"),
        (" ".join(["w"] * 400), "max_words"),
        ("\n".join(["the same line again and again"] * 5 + [GOOD]), "duplicate_line_fraction"),
        (" ".join(["spam offer"] * 30), "top_2gram_fraction"),
    ],
)
def test_first_failing_filter(text: str, reason: str | None) -> None:
    assert first_failure(text) == reason


def test_rows_without_text_skip_the_filters() -> None:
    assert judge_text(None, CONFIG) == []


def test_every_verdict_carries_score_and_threshold() -> None:
    verdicts = judge_text("too short", CONFIG)
    assert [v.name for v in verdicts] == list(FILTER_NAMES)
    short = verdicts[0]
    assert (short.score, short.threshold, short.passed) == (9.0, 50.0, False)


def test_scores() -> None:
    assert duplicate_line_fraction("a\nb\na\na") == 0.5
    assert duplicate_line_fraction("") == 0.0
    assert top_ngram_char_fraction(["ab", "cd", "ab", "cd"], 2) == pytest.approx(8 / 8)
    assert top_ngram_char_fraction(["one"], 2) == 0.0
