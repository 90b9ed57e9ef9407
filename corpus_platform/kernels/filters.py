"""Quality filters: each scores a text and compares the score with a threshold from corpus.yaml.

A row is removed by the first filter that fails (cheap ones first, language identification last
and batched); every other filter that would fail is recorded too, so a reviewer sees overlaps.
Rows without text (tabular data) skip the text filters; ``filters.exempt`` lists sources a
filter does not apply to (code is not prose).

| filter | fails when | default | source |
|---|---|---|---|
| min_chars / max_chars | characters outside the range | 200/1e5 | practice |
| min_words / max_words | words outside the range | 50/1e5 | Gopher (Rae et al. 2021, A.1) |
| mean_word_length | mean word length outside [3, 10] | 3/10 | Gopher |
| symbol_word_ratio | ('#' + '...') per word above | 0.1 | Gopher |
| bullet_lines_ratio | lines starting with a bullet above | 0.9 | Gopher |
| ellipsis_lines_ratio | lines ending with an ellipsis above | 0.3 | Gopher |
| alpha_words_ratio | words with a letter below | 0.8 | Gopher |
| stop_words | fewer of the 8 Gopher stop words than | 2 | Gopher |
| duplicate_line_fraction | repeated lines / lines above | 0.30 | Gopher table A1 |
| duplicate_paragraph_fraction | repeated paragraphs / paragraphs above | 0.30 | Gopher table A1 |
| duplicate_line_char_fraction | chars in repeated lines above | 0.20 | Gopher table A1 |
| duplicate_paragraph_char_fraction | chars in repeated paragraphs above | 0.20 | Gopher table A1 |
| top_{2,3,4}gram_char_fraction | chars in the top n-gram above | .20/.18/.16 | Gopher A1 |
| duplicate_{5..10}gram_char_fraction | chars in repeated n-grams above | .15 ... .10 | Gopher A1 |
| c4_lorem_ipsum / c4_curly_braces | text has "lorem ipsum" / "{" | on | C4 (Raffel 2020) |
| url_ratio | URL-like words / words above | 0.1 | project default |
| code_line_ratio | code-looking lines / lines above | 0.5 | project default |
| blocklist_words | blocklisted words above | 0 | C4 "bad words" rule |
| domain | url host on the deny list / not on the allow list | - | RefinedWeb-style URL filtering |
| language | best configured language's confidence below | 0.65 | FineWeb (Penedo et al. 2024) |

C4's line rule (drop lines mentioning javascript, cookies, terms of use or privacy policy) edits
the text instead of removing the row; such edits are counted with the PII replacements.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from corpus_platform.config import ConfigError, FilterConfig

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = (
    "\u2022",
    "\u25cf",
    "\u25cb",
    "\u25a0",
    "\u25a1",
    "\u25aa",
    "\u25ab",
    "\u2013",
    "-",
    "*",
    "\u2023",
    "\u2043",
)
ELLIPSES = ("...", "…")
C4_BOILERPLATE = ("javascript", "cookie", "terms of use", "privacy policy", "terms of service")
URL_WORD = re.compile(r"^(?:https?://|www\.)\S+|^\S+\.(?:com|org|net|io|html?)(?:/\S*)?$", re.I)
CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|#include|return\b|for \(|if \(|\}|\{)|[;{}]\s*$"
)


@dataclass(frozen=True)
class Verdict:
    """One filter's judgement of one text."""

    name: str
    score: float
    threshold: float
    passed: bool
    fails_above: bool = True

    @property
    def headroom(self) -> float:
        """How far inside its threshold the score sits, in [0, 1]: 0 at (or past) the threshold,
        1 as far from it as the score can be (0 for a maximum, twice the threshold or more for a
        minimum). A filter with a zero threshold scores 1 when it passes."""
        if not self.passed:
            return 0.0
        if self.threshold <= 0.0:
            return 1.0
        if self.fails_above:
            return min(1.0, max(0.0, 1.0 - self.score / self.threshold))
        return min(1.0, max(0.0, self.score / self.threshold - 1.0))


def quality_score(verdicts: list[Verdict]) -> float:
    """A row's quality score: the mean :attr:`Verdict.headroom` of the filters that judged it
    (1.0 when none did), rounded to 6 decimals. Deduplication keeps, per cluster, the member
    with the highest score."""
    if not verdicts:
        return 1.0
    return round(sum(v.headroom for v in verdicts) / len(verdicts), 6)


@dataclass
class TextView:
    """A text split once into what every filter needs."""

    text: str
    words: list[str]
    lines: list[str]
    paragraphs: list[str]

    @classmethod
    def of(cls, text: str) -> TextView:
        lines = [line for line in (raw.strip() for raw in text.split("\n")) if line]
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        return cls(text=text, words=text.split(), lines=lines, paragraphs=paragraphs)


def _duplicates(items: list[str]) -> tuple[float, float]:
    """(fraction of items that repeat an earlier one, fraction of their characters)."""
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
    """Characters covered by the most frequent word n-gram, over all word characters."""
    if len(words) < n:
        return 0.0
    grams = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    gram, count = grams.most_common(1)[0]
    if count < 2:
        return 0.0
    total = sum(len(w) for w in words)
    return count * sum(len(w) for w in gram) / total if total else 0.0


def duplicate_ngram_char_fraction(words: list[str], n: int) -> float:
    """Characters of words inside an n-gram that occurred before, over all word characters."""
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


def duplicate_line_fraction(text: str) -> float:
    """Fraction of non-empty lines that repeat an earlier line."""
    return _duplicates(TextView.of(text).lines)[0]


def _ratio(count: float, total: float) -> float:
    return count / total if total else 0.0


Scorer = Callable[[TextView], float]


@dataclass(frozen=True)
class Filter:
    """A named score and the config threshold it must not cross."""

    name: str
    score: Scorer
    threshold: Callable[[FilterConfig], float]
    fails_above: bool

    def judge(self, view: TextView, config: FilterConfig) -> Verdict:
        """Score ``view`` and say whether it passes."""
        score = float(self.score(view))
        limit = float(self.threshold(config))
        passed = score <= limit if self.fails_above else score >= limit
        return Verdict(self.name, score, limit, passed, self.fails_above)


def _lower(view: TextView) -> str:
    return view.text.lower()


def _heuristic_filters() -> tuple[Filter, ...]:
    def below(name: str, score: Scorer, limit: Callable[[FilterConfig], float]) -> Filter:
        return Filter(name, score, limit, fails_above=False)

    def above(name: str, score: Scorer, limit: Callable[[FilterConfig], float]) -> Filter:
        return Filter(name, score, limit, fails_above=True)

    def mean_len(v: TextView) -> float:
        return _ratio(sum(len(w) for w in v.words), len(v.words))

    out = [
        below("min_chars", lambda v: len(v.text), lambda c: c.min_chars),
        above("max_chars", lambda v: len(v.text), lambda c: c.max_chars),
        below("min_words", lambda v: len(v.words), lambda c: c.min_words),
        above("max_words", lambda v: len(v.words), lambda c: c.max_words),
        below("min_mean_word_length", mean_len, lambda c: c.min_mean_word_length),
        above("max_mean_word_length", mean_len, lambda c: c.max_mean_word_length),
        above(
            "symbol_word_ratio",
            lambda v: _ratio(
                v.text.count("#") + v.text.count("...") + v.text.count("…"), len(v.words)
            ),
            lambda c: c.max_symbol_word_ratio,
        ),
        above(
            "bullet_lines_ratio",
            lambda v: _ratio(sum(line.startswith(BULLETS) for line in v.lines), len(v.lines)),
            lambda c: c.max_bullet_lines_ratio,
        ),
        above(
            "ellipsis_lines_ratio",
            lambda v: _ratio(sum(line.endswith(ELLIPSES) for line in v.lines), len(v.lines)),
            lambda c: c.max_ellipsis_lines_ratio,
        ),
        below(
            "alpha_words_ratio",
            lambda v: _ratio(sum(any(ch.isalpha() for ch in w) for w in v.words), len(v.words)),
            lambda c: c.min_alpha_words_ratio,
        ),
        below(
            "stop_words",
            lambda v: len(STOP_WORDS.intersection(w.lower() for w in v.words)),
            lambda c: c.min_stop_words,
        ),
        above(
            "duplicate_line_fraction",
            lambda v: _duplicates(v.lines)[0],
            lambda c: c.max_duplicate_line_fraction,
        ),
        above(
            "duplicate_paragraph_fraction",
            lambda v: _duplicates(v.paragraphs)[0],
            lambda c: c.max_duplicate_paragraph_fraction,
        ),
        above(
            "duplicate_line_char_fraction",
            lambda v: _duplicates(v.lines)[1],
            lambda c: c.max_duplicate_line_char_fraction,
        ),
        above(
            "duplicate_paragraph_char_fraction",
            lambda v: _duplicates(v.paragraphs)[1],
            lambda c: c.max_duplicate_paragraph_char_fraction,
        ),
    ]
    for n in (2, 3, 4):
        out.append(
            above(
                f"top_{n}gram_char_fraction",
                lambda v, n=n: top_ngram_char_fraction(v.words, n),
                lambda c, n=n: c.max_top_ngram_char_fraction[n],
            )
        )
    for n in range(5, 11):
        out.append(
            above(
                f"duplicate_{n}gram_char_fraction",
                lambda v, n=n: duplicate_ngram_char_fraction(v.words, n),
                lambda c, n=n: c.max_duplicate_ngram_char_fraction[n],
            )
        )
    out += [
        above(
            "c4_lorem_ipsum",
            lambda v: float("lorem ipsum" in _lower(v)),
            lambda c: 0.5 if c.c4_lorem_ipsum else 1.0,
        ),
        above(
            "c4_curly_braces",
            lambda v: float("{" in v.text),
            lambda c: 0.5 if c.c4_curly_braces else 1.0,
        ),
        above(
            "url_ratio",
            lambda v: _ratio(sum(bool(URL_WORD.match(w)) for w in v.words), len(v.words)),
            lambda c: c.max_url_ratio,
        ),
        above(
            "code_line_ratio",
            lambda v: _ratio(sum(bool(CODE_LINE.search(line)) for line in v.lines), len(v.lines)),
            lambda c: c.max_code_line_ratio,
        ),
    ]
    return tuple(out)


FILTERS: tuple[Filter, ...] = _heuristic_filters()
BLOCKLIST = "blocklist_words"
DOMAIN = "domain"
LANGUAGE = "language"
FILTER_NAMES = (*(f.name for f in FILTERS), BLOCKLIST, DOMAIN, LANGUAGE)


@cache
def load_blocklist(path: str | None) -> frozenset[str]:
    """The blocklisted words: the configured file, or the small list shipped with the package."""
    if path:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = (
            resources.files("corpus_platform")
            .joinpath("data/blocklist.txt")
            .read_text(encoding="utf-8")
        )
    return frozenset(
        w.strip().lower() for w in text.splitlines() if w.strip() and not w.startswith("#")
    )


def blocklist_verdict(view: TextView, config: FilterConfig) -> Verdict:
    """How many blocklisted words the text contains."""
    words = load_blocklist(config.blocklist)
    hits = sum(w.strip(".,;:!?\"'()").lower() in words for w in view.words)
    return Verdict(
        BLOCKLIST,
        float(hits),
        float(config.max_blocklist_words),
        hits <= config.max_blocklist_words,
    )


def domain_verdict(url: str | None, config: FilterConfig) -> Verdict | None:
    """Whether a row's url host is allowed (None when the row has no url)."""
    if not url or not (config.domains.allow or config.domains.deny):
        return None
    host = (urlsplit(url if "://" in url else f"//{url}").hostname or "").lower()

    def matches(domains: tuple[str, ...]) -> bool:
        return any(host == d or host.endswith(f".{d}") for d in domains)

    denied = matches(config.domains.deny) or (
        bool(config.domains.allow) and not matches(config.domains.allow)
    )
    return Verdict(DOMAIN, 1.0 if denied else 0.0, 0.5, not denied)


def judge_text(
    text: str | None, config: FilterConfig, source: str = "", url: str | None = None
) -> list[Verdict]:
    """Every heuristic filter's verdict on ``text`` (language identification is separate);
    an empty list for rows without text. Filters exempt for ``source`` are skipped."""
    verdicts = []
    domain = domain_verdict(url, config)
    if domain is not None:
        verdicts.append(domain)
    if text is None:
        return verdicts
    view = TextView.of(text)
    exempt = {name for name, sources in config.exempt.items() if source in sources}
    verdicts += [f.judge(view, config) for f in FILTERS if f.name not in exempt]
    if BLOCKLIST not in exempt:
        verdicts.append(blocklist_verdict(view, config))
    return verdicts


def strip_boilerplate_lines(text: str) -> tuple[str, int]:
    """C4's line rule: drop lines mentioning javascript, cookies, terms or privacy policy."""
    kept, removed = [], 0
    for line in text.split("\n"):
        lowered = line.lower()
        if any(marker in lowered for marker in C4_BOILERPLATE):
            removed += 1
        else:
            kept.append(line)
    return ("\n".join(kept), removed) if removed else (text, 0)


def check_exempt(config: FilterConfig) -> None:
    """Raise a ConfigError when ``filters.exempt`` names a filter that does not exist."""
    known = {*FILTER_NAMES, "c4_boilerplate_lines"}
    unknown = sorted(set(config.exempt) - known)
    if unknown:
        raise ConfigError(
            f"corpus.yaml: filters.exempt names unknown filter(s) {unknown}; known: {sorted(known)}"
        )
