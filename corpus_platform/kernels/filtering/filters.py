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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.config import ConfigError, FilterConfig
from corpus_platform.kernels.filtering.textstats import text_scores

C4_BOILERPLATE = ("javascript", "cookie", "terms of use", "privacy policy", "terms of service")


class Verdict(NamedTuple):
    """One filter's judgement of one text (a named tuple: the filter stage makes dozens per
    row, and a tuple is the cheapest immutable record Python has)."""

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


@dataclass(frozen=True)
class Filter:
    """A named rule: which score of :func:`text_scores` it reads and the config threshold that
    score must not cross (from above when ``fails_above``, from below otherwise)."""

    name: str
    score: str
    threshold: Callable[[FilterConfig], float]
    fails_above: bool

    def verdict(self, score: float, limit: float) -> Verdict:
        """Compare ``score`` with ``limit`` (this filter's configured threshold)."""
        passed = score <= limit if self.fails_above else score >= limit
        return Verdict(self.name, score, limit, passed, self.fails_above)


def _heuristic_filters() -> tuple[Filter, ...]:
    def below(name: str, limit: Callable[[FilterConfig], float], score: str = "") -> Filter:
        return Filter(name, score or name, limit, fails_above=False)

    def above(name: str, limit: Callable[[FilterConfig], float], score: str = "") -> Filter:
        return Filter(name, score or name, limit, fails_above=True)

    out = [
        below("min_chars", lambda c: c.min_chars, "chars"),
        above("max_chars", lambda c: c.max_chars, "chars"),
        below("min_words", lambda c: c.min_words, "words"),
        above("max_words", lambda c: c.max_words, "words"),
        below("min_mean_word_length", lambda c: c.min_mean_word_length, "mean_word_length"),
        above("max_mean_word_length", lambda c: c.max_mean_word_length, "mean_word_length"),
        above("symbol_word_ratio", lambda c: c.max_symbol_word_ratio),
        above("bullet_lines_ratio", lambda c: c.max_bullet_lines_ratio),
        above("ellipsis_lines_ratio", lambda c: c.max_ellipsis_lines_ratio),
        below("alpha_words_ratio", lambda c: c.min_alpha_words_ratio),
        below("stop_words", lambda c: c.min_stop_words),
        above("duplicate_line_fraction", lambda c: c.max_duplicate_line_fraction),
        above("duplicate_paragraph_fraction", lambda c: c.max_duplicate_paragraph_fraction),
        above("duplicate_line_char_fraction", lambda c: c.max_duplicate_line_char_fraction),
        above(
            "duplicate_paragraph_char_fraction",
            lambda c: c.max_duplicate_paragraph_char_fraction,
        ),
    ]
    for n in (2, 3, 4):
        name = f"top_{n}gram_char_fraction"
        out.append(above(name, lambda c, n=n: c.max_top_ngram_char_fraction[n]))
    for n in range(5, 11):
        name = f"duplicate_{n}gram_char_fraction"
        out.append(above(name, lambda c, n=n: c.max_duplicate_ngram_char_fraction[n]))
    out += [
        above("c4_lorem_ipsum", lambda c: 0.5 if c.c4_lorem_ipsum else 1.0),
        above("c4_curly_braces", lambda c: 0.5 if c.c4_curly_braces else 1.0),
        above("url_ratio", lambda c: c.max_url_ratio),
        above("code_line_ratio", lambda c: c.max_code_line_ratio),
        above("blocklist_words", lambda c: c.max_blocklist_words),
    ]
    return tuple(out)


FILTERS: tuple[Filter, ...] = _heuristic_filters()
BLOCKLIST = "blocklist_words"
DOMAIN = "domain"
LANGUAGE = "language"
FILTER_NAMES = (*(f.name for f in FILTERS), DOMAIN, LANGUAGE)


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


FAILS_ABOVE = np.array([f.fails_above for f in FILTERS])


@dataclass(frozen=True)
class FilterMatrix:
    """Every heuristic filter's verdict on every row of a batch, as arrays whose columns follow
    :data:`FILTERS`, and each row's domain verdict (if any).

    ``applies`` is False where a row has no text (its ``scores`` are NaN) or its source is
    exempt from the filter; ``passed`` is False wherever a filter does not apply. The filter
    stage works on these arrays; the lists of :class:`Verdict` (:meth:`verdicts`) are for
    single rows.
    """

    scores: np.ndarray
    applies: np.ndarray
    passed: np.ndarray
    limits: np.ndarray
    domains: list[Verdict | None]

    @property
    def failed(self) -> np.ndarray:
        """Where an applicable filter failed."""
        return self.applies & ~self.passed

    def headrooms(self) -> np.ndarray:
        """Each verdict's :attr:`Verdict.headroom` (0 where no filter applies), with the same
        float operations as the property."""
        positive = self.limits > 0.0
        ratio = np.divide(
            self.scores,
            self.limits,
            out=np.zeros(self.scores.shape),
            where=positive & self.passed,
        )
        inside = np.where(FAILS_ABOVE, 1.0 - ratio, ratio - 1.0)
        inside = np.minimum(1.0, np.maximum(0.0, inside))
        return np.where(self.passed, np.where(positive, inside, 1.0), 0.0)

    def verdict(self, row: int, column: int) -> Verdict:
        """The verdict of filter ``FILTERS[column]`` on row ``row``."""
        f = FILTERS[column]
        return Verdict(
            f.name,
            float(self.scores[row, column]),
            float(self.limits[column]),
            bool(self.passed[row, column]),
            f.fails_above,
        )

    def verdicts(self, row: int) -> list[Verdict]:
        """Row ``row``'s verdicts in order: the domain verdict, then the filters that apply."""
        domain = self.domains[row]
        out = [domain] if domain is not None else []
        return out + [self.verdict(row, j) for j in np.flatnonzero(self.applies[row]).tolist()]


def judge_matrix(
    texts: Sequence[str | None],
    sources: Sequence[str],
    urls: Sequence[str | None],
    config: FilterConfig,
) -> FilterMatrix:
    """Every heuristic filter's verdict on every row (language identification is separate).

    Rows without text (tabular data) get only the domain verdict, if any. Filters exempt for a
    row's source do not apply. All texts are scored together by :func:`text_scores`.
    """
    with_text = np.array([i for i, text in enumerate(texts) if text is not None], np.int64)
    scored = text_scores([texts[i] for i in with_text], load_blocklist(config.blocklist))
    scores = np.full((len(texts), len(FILTERS)), np.nan)
    for column, f in enumerate(FILTERS):
        if len(with_text):
            scores[with_text, column] = scored[f.score]
    exempt = {
        source: np.array([source in config.exempt.get(f.name, ()) for f in FILTERS])
        for source in set(sources)
    }
    applies = np.zeros((len(texts), len(FILTERS)), dtype=bool)
    for i in with_text.tolist():
        applies[i] = ~exempt[sources[i]]
    limits = np.array([float(f.threshold(config)) for f in FILTERS])
    with np.errstate(invalid="ignore"):
        passed = applies & np.where(FAILS_ABOVE, scores <= limits, scores >= limits)
    return FilterMatrix(scores, applies, passed, limits, [domain_verdict(u, config) for u in urls])


def judge_texts(
    texts: Sequence[str | None],
    sources: Sequence[str],
    urls: Sequence[str | None],
    config: FilterConfig,
) -> list[list[Verdict]]:
    """:func:`judge_matrix` as one list of :class:`Verdict` per row (domain first)."""
    matrix = judge_matrix(texts, sources, urls, config)
    return [matrix.verdicts(i) for i in range(len(texts))]


def judge_text(
    text: str | None, config: FilterConfig, source: str = "", url: str | None = None
) -> list[Verdict]:
    """:func:`judge_texts` for one row."""
    return judge_texts([text], [source], [url], config)[0]


# Case-insensitive RE2 (Unicode simple case folding) matches wherever ``text.lower()`` holds a
# marker: the only characters Python lower-cases to an ASCII letter of a marker are that
# letter's capital and the Kelvin sign (to "k"), which RE2 folds alike ("İ" lower-cases to "i"
# and a combining dot, which no marker letter is followed by). It also matches a few texts the
# rule leaves alone (U+017F, the long s, for "s"): a superset, so texts it does not match are
# skipped. The markers are letters and spaces, so they are their own RE2 patterns.
C4_BOILERPLATE_RE2 = "|".join(C4_BOILERPLATE)


def might_hold_boilerplate(texts: pa.Array) -> np.ndarray:
    """For each text of an Arrow string array, whether :func:`strip_boilerplate_lines` could
    remove a line of it (False for a null): one compiled pass over the batch instead of a
    lower-casing and a search per marker per text."""
    found = pc.match_substring_regex(texts, C4_BOILERPLATE_RE2, ignore_case=True)
    return found.fill_null(False).to_numpy(zero_copy_only=False)


def strip_boilerplate_lines(text: str) -> tuple[str, int]:
    """C4's line rule: drop lines mentioning javascript, cookies, terms or privacy policy.

    A text whose lower-cased whole mentions none of them has no such line (the markers hold no
    line break, and lower-casing maps no character to ASCII by its context), so most texts are
    never split into lines."""
    lowered_text = text.lower()
    if not any(marker in lowered_text for marker in C4_BOILERPLATE):
        return text, 0
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
