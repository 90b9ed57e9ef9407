"""Every quality filter and PII rule: a keep case and a drop case, table-driven."""

import random

import pyarrow as pa
import pytest

from corpus_platform.config import FilterConfig
from corpus_platform.kernels.filtering import langid
from corpus_platform.kernels.filtering.filters import (
    C4_BOILERPLATE,
    FILTER_NAMES,
    Verdict,
    judge_text,
    might_hold_boilerplate,
    strip_boilerplate_lines,
)
from corpus_platform.kernels.filtering.pii import luhn_valid, scrub
from tests.kernels.filtering.reference_filters import quality_score
from tests.realtext import real_texts

WORDS = " ".join(
    [
        "the river and the mountain stood near a village with garden that had light in ",
        "morning of every summer day while people walked to market to buy bread fish old ",
        "school children teacher library window letter story music forest island ocean ",
        "bridge harbor valley",
    ]
).split()


def good(n: int = 120, offset: int = 0) -> str:
    """English-like prose without repetition (seeded, so every call is reproducible)."""
    rng = random.Random(offset)
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(" ".join(words[i : i + 12]).capitalize() + "." for i in range(0, n, 12))


CONFIG = FilterConfig(domains={"deny": ["spam.example"], "allow": []})


def failures(
    text: str, url: str | None = None, source: str = "web", config: FilterConfig = CONFIG
) -> list[str]:
    return [v.name for v in judge_text(text, config, source, url) if not v.passed]


def test_good_prose_passes_every_filter() -> None:
    assert failures(good()) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Too short.", "min_chars"),
        (" ".join(["word"] * 20) + " " + "x" * 200, "min_words"),
        (good() + " " + " ".join(["a"] * 150), "min_mean_word_length"),
        (good() + " " + " ".join(["incomprehensibilities"] * 200), "max_mean_word_length"),
        (good() + " #tag" * 30, "symbol_word_ratio"),
        (
            "\n".join(f"- item {i} of the list and the rest" for i in range(60)),
            "bullet_lines_ratio",
        ),
        (
            "\n".join(f"line {i} goes on and on with the story of..." for i in range(40)),
            "ellipsis_lines_ratio",
        ),
        (good(60) + " " + " ".join(["1234"] * 80), "alpha_words_ratio"),
        (" ".join(f"cat{i} dog{i}" for i in range(60)), "stop_words"),
        ("\n".join([good(30)] * 3 + [good(30, 1)]), "duplicate_line_fraction"),
        ("\n\n".join([good(40)] * 3 + [good(40, 1)]), "duplicate_paragraph_fraction"),
        (good(120) + " " + " ".join(["the end"] * 60), "top_2gram_char_fraction"),
        (good(60) + " " + good(60), "duplicate_5gram_char_fraction"),
        ("Lorem ipsum dolor sit amet. " + good(), "c4_lorem_ipsum"),
        (good() + " {placeholder}", "c4_curly_braces"),
        (good(80) + " " + " ".join(f"https://x{i}.example.com/p" for i in range(20)), "url_ratio"),
        (
            "\n".join([f"x{i} = compute(the, data);" for i in range(30)] + [good(60)]),
            "code_line_ratio",
        ),
        (good() + " buy viagra here", "blocklist_words"),
    ],
)
def test_each_filter_drops_its_case(text: str, expected: str) -> None:
    assert expected in failures(text)


def test_domain_lists() -> None:
    assert "domain" in failures(good(), url="https://blog.spam.example/post")
    assert "domain" not in failures(good(), url="https://good.example/post")
    allow_only = FilterConfig(domains={"allow": ["good.example"], "deny": []})
    assert "domain" in failures(good(), url="https://other.example/x", config=allow_only)
    assert "domain" not in failures(good(), url="https://www.good.example/x", config=allow_only)


def test_exemptions_and_rows_without_text() -> None:
    code = "\n".join(f"def f{i}(x):\n    return {{x: {i}}}" for i in range(40))
    exempt = FilterConfig(
        exempt={
            name: ("code",)
            for name in (
                "code_line_ratio",
                "c4_curly_braces",
                "stop_words",
                "alpha_words_ratio",
                "symbol_word_ratio",
            )
        }
    )
    assert "c4_curly_braces" in failures(code, source="code")
    assert "c4_curly_braces" not in failures(code, source="code", config=exempt)
    assert judge_text(None, CONFIG) == []


def test_scores_and_thresholds_are_reported() -> None:
    verdicts = {v.name: v for v in judge_text("Too short.", CONFIG)}
    assert set(verdicts) >= set(FILTER_NAMES) - {"domain", "language"}
    assert (verdicts["min_chars"].score, verdicts["min_chars"].threshold) == (10.0, 200.0)


def test_c4_boilerplate_lines_are_removed_not_the_row() -> None:
    text, removed = strip_boilerplate_lines("Real text.\nWe use cookies to track you.\nMore text.")
    assert (text, removed) == ("Real text.\nMore text.", 1)


@pytest.mark.parametrize(
    ("text", "kind", "replaced"),
    [
        ("mail jane.doe@example.com now", "email", "mail <EMAIL> now"),
        ("call 415-555-0100.", "phone", "call <PHONE>."),
        ("call +44 20 7946 0958 today", "phone", None),
        ("host 192.168.1.20 is up", "ip", "host <IP> is up"),
        ("host 2001:db8::8a2e:370:7334 is up", "ip", "host <IP> is up"),
        ("card 4111 1111 1111 1111 ok", "credit_card", "card <CREDIT_CARD> ok"),
        ("ssn 123-45-6789 ok", "ssn", "ssn <SSN> ok"),
    ],
)
def test_pii_is_found_and_replaced(text: str, kind: str, replaced: str | None) -> None:
    result = scrub(text, {kind: "replace"})
    if replaced is None:
        return
    assert result.found[kind] == 1 and result.replaced[kind] == 1
    assert result.text == replaced
    assert scrub(text, {kind: "drop"}).dropping({kind: "drop"}) == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 ok",
        "ssn 000-12-3456 ok",
        "version 1.2.3.4.5",
        "at 999.1.1.1",
        "at 12:30:45",
    ],
)
def test_pii_lookalikes_are_left_alone(text: str) -> None:
    result = scrub(text, {k: "replace" for k in ("email", "phone", "ip", "credit_card", "ssn")})
    assert result.text == text and not result.found


def test_luhn() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")


def test_language_identification_scores_english_high() -> None:
    english = "The weather was fine and the children walked to the old school near the river."
    german = "Der Hund und die Katze sind heute nicht mit uns in den Garten gegangen, aber morgen."
    scores = langid.keep_confidence([english, german], ("en",), ("en", "de", "fr"))
    assert scores[0] > 0.65 > scores[1]
    with pytest.raises(ValueError, match="zz"):  # the default backend names the unknown code
        langid.keep_confidence(["x"], ("zz",), ("en",))


@pytest.mark.parametrize(
    ("verdict", "headroom"),
    [
        (Verdict("max_ratio", 0.05, 0.2, True), 0.75),  # a maximum: 1 - score / threshold
        (Verdict("min_words", 150.0, 50.0, True, fails_above=False), 1.0),  # >= 2x a minimum
        (Verdict("min_words", 75.0, 50.0, True, fails_above=False), 0.5),
        (Verdict("blocklist", 0.0, 0.0, True), 1.0),  # a zero threshold that passes
        (Verdict("max_ratio", 0.3, 0.2, False), 0.0),  # a failure has no headroom
    ],
)
def test_headroom(verdict: Verdict, headroom: float) -> None:
    assert verdict.headroom == pytest.approx(headroom)


def test_quality_score_ranks_cleaner_text_higher() -> None:
    clean = quality_score(judge_text(good(240), CONFIG, "web"))
    noisy = quality_score(judge_text(good(240) + " #tag" * 8 + " ..." * 5, CONFIG, "web"))
    assert 0.0 < noisy < clean <= 1.0
    assert quality_score([]) == 1.0


def test_boilerplate_rule_equals_its_line_by_line_definition() -> None:
    def by_lines(text: str) -> tuple[str, int]:
        lines = text.split("\n")
        kept = [ln for ln in lines if not any(m in ln.lower() for m in C4_BOILERPLATE)]
        return ("\n".join(kept), len(lines) - len(kept)) if len(kept) < len(lines) else (text, 0)

    texts = [
        "Plain prose.\nNothing here.",
        "We use COOKIES.\nKept line.",
        "Read our Privacy\nPolicy later.",  # the marker split by a line break: no line has it
        "JavaScript required\n\nTerms of Service apply\nok",
        "\u0130stanbul cookie shop\nother",
        "",
    ]
    for text in texts:
        assert strip_boilerplate_lines(text) == by_lines(text)


def test_the_batch_search_for_boilerplate_misses_no_text_the_rule_edits() -> None:
    crafted = [
        "Plain prose.\nNothing here.",
        "We use COOKIES.\nKept line.",
        "Read our Privacy\nPolicy later.",
        "coo\u212aie jar",  # the Kelvin sign lower-cases to "k"
        "\u0130stanbul cookie shop\nother",
        "terms of u\u017fe",  # a long s: matched by the search, left alone by the rule
        "JAVASCRIPT\r\nTerms Of Service",
        "",
    ]
    texts = crafted + real_texts(400)
    edited = [strip_boilerplate_lines(t)[1] > 0 for t in texts]
    flagged = might_hold_boilerplate(pa.array([*texts, None])).tolist()
    assert flagged[-1] is False
    missed = [t[:60] for t, e, f in zip(texts, edited, flagged, strict=False) if e and not f]
    assert missed == []
    assert sum(edited[len(crafted) :]) > 0, "the real texts hold boilerplate lines"
    assert flagged[3] and flagged[5] and not edited[5]
    assert not flagged[0] and not flagged[2]


def test_the_lorem_ipsum_search_finds_every_text_pythons_lower_would() -> None:
    """The batch's case-insensitive search for "lorem ipsum" flags every text where
    ``"lorem ipsum" in text.lower()``: each character that lowers to something holding one of
    the phrase's characters, put in each of its places, and real text."""
    from corpus_platform.kernels.filtering.textstats import _may_hold_lorem

    phrase = "lorem ipsum"
    lowering = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and set(chr(c).lower()) & set(phrase)
    ]
    texts = [f"x{phrase[:k]}{c}{phrase[k + 1 :]}y" for c in lowering for k in range(len(phrase))]
    real = real_texts(200)
    texts += [phrase.upper(), "Lorem Ipsum", "lorem  ipsum", *real]
    flagged = _may_hold_lorem(pa.array(texts, pa.large_string()))
    exact = [phrase in t.lower() for t in texts]
    assert [t for t, e, f in zip(texts, exact, flagged, strict=True) if e and not f] == []
    assert sum(exact) > 2 * len(phrase)  # capitals in every place, at least
    assert flagged[-len(real) - 1] is False  # two spaces: not the phrase
    assert flagged[-len(real) :] == exact[-len(real) :]  # real text: flagged where it holds it
