"""The per-document filter scores as first written: one Python pass per score over words, word
tuples, lines and paragraphs, and a row's quality score from its list of verdicts. Kept as an
independent reference implementation, used as an oracle: the vectorized scores of
``corpus_platform.kernels.filtering.textstats`` and the quality scores of
``corpus_platform.kernels.filtering.verdicts.ShardVerdicts`` must equal these bit for bit."""

from __future__ import annotations

import re
from collections import Counter

from corpus_platform.kernels.filtering.filters import Verdict

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = ("\u2022", "\u25cf", "\u25cb", "\u25a0", "\u25a1", "\u25aa", "\u25ab", "\u2013", "-", "*")
BULLETS += ("\u2023", "\u2043")
ELLIPSES = ("...", "…")
URL_WORD = re.compile(r"^(?:https?://|www\.)\S+|^\S+\.(?:com|org|net|io|html?)(?:/\S*)?$", re.I)
CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|#include|return\b|for \(|if \(|\}|\{)|[;{}]\s*$"
)


def _duplicates(items: list[str]) -> tuple[float, float]:
    if not items:
        return 0.0, 0.0
    seen: set[str] = set()
    repeated = repeated_chars = 0
    for item in items:
        if item in seen:
            repeated += 1
            repeated_chars += len(item)
        else:
            seen.add(item)
    total_chars = sum(len(i) for i in items)
    return repeated / len(items), repeated_chars / total_chars if total_chars else 0.0


def top_ngram_char_fraction(words: list[str], n: int) -> float:
    if len(words) < n:
        return 0.0
    grams = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    gram, count = grams.most_common(1)[0]
    if count < 2:
        return 0.0
    total = sum(len(w) for w in words)
    return count * sum(len(w) for w in gram) / total if total else 0.0


def duplicate_ngram_char_fraction(words: list[str], n: int) -> float:
    if len(words) < n:
        return 0.0
    seen: set[tuple[str, ...]] = set()
    covered = bytearray(len(words))
    for start, gram in enumerate(zip(*(words[i:] for i in range(n)), strict=False)):
        if gram in seen:
            covered[start : start + n] = b"\x01" * n
        else:
            seen.add(gram)
    total = sum(len(w) for w in words)
    return (
        sum(len(w) for w, hit in zip(words, covered, strict=True) if hit) / total if total else 0.0
    )


def _ratio(count: float, total: float) -> float:
    return count / total if total else 0.0


def reference_scores(text: str, blocklist: frozenset[str]) -> dict[str, float]:
    """Every heuristic score of ``text`` by the original per-document definitions."""
    words = text.split()
    lines = [line for line in (raw.strip() for raw in text.split("\n")) if line]
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    scores = {
        "chars": float(len(text)),
        "words": float(len(words)),
        "mean_word_length": _ratio(sum(len(w) for w in words), len(words)),
        "symbol_word_ratio": _ratio(
            text.count("#") + text.count("...") + text.count("…"), len(words)
        ),
        "bullet_lines_ratio": _ratio(sum(line.startswith(BULLETS) for line in lines), len(lines)),
        "ellipsis_lines_ratio": _ratio(sum(line.endswith(ELLIPSES) for line in lines), len(lines)),
        "alpha_words_ratio": _ratio(sum(any(ch.isalpha() for ch in w) for w in words), len(words)),
        "stop_words": float(len(STOP_WORDS.intersection(w.lower() for w in words))),
        "duplicate_line_fraction": _duplicates(lines)[0],
        "duplicate_paragraph_fraction": _duplicates(paragraphs)[0],
        "duplicate_line_char_fraction": _duplicates(lines)[1],
        "duplicate_paragraph_char_fraction": _duplicates(paragraphs)[1],
        "c4_lorem_ipsum": float("lorem ipsum" in text.lower()),
        "c4_curly_braces": float("{" in text),
        "url_ratio": _ratio(sum(bool(URL_WORD.match(w)) for w in words), len(words)),
        "code_line_ratio": _ratio(sum(bool(CODE_LINE.search(line)) for line in lines), len(lines)),
        "blocklist_words": float(sum(w.strip(".,;:!?\"'()").lower() in blocklist for w in words)),
    }
    for n in (2, 3, 4):
        scores[f"top_{n}gram_char_fraction"] = top_ngram_char_fraction(words, n)
    for n in range(5, 11):
        scores[f"duplicate_{n}gram_char_fraction"] = duplicate_ngram_char_fraction(words, n)
    return scores


def quality_score(verdicts: list[Verdict]) -> float:
    """A row's quality score: the mean :attr:`Verdict.headroom` of the filters that judged it
    (1.0 when none did), rounded to 6 decimals."""
    if not verdicts:
        return 1.0
    total = 0.0
    for v in verdicts:  # one addition after another (Python 3.12's sum() compensates)
        total += v.headroom
    return round(total / len(verdicts), 6)
