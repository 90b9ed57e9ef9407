"""Quality filters. Each filter scores a text and compares the score with a threshold.

A row is removed by the first filter (in the order below, cheap ones first) that fails; every
filter that would fail is recorded too, so a reviewer sees overlaps. Rows without text (tabular
data) skip the text filters.

| filter                  | score                               | fails  | default | source        |
|-------------------------|-------------------------------------|--------|---------|---------------|
| min_chars / max_chars   | characters                          | outside| 200/1e5 | practice      |
| min_words / max_words   | whitespace words                    | outside| 50/1e5  | Gopher 2021   |
| duplicate_line_fraction | repeated lines / lines              | above  | 0.30    | Gopher tab. A1|
| top_2gram_fraction      | chars of the top word 2-gram / chars| above  | 0.20    | Gopher tab. A1|
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.config import FilterConfig
from corpus_platform.store.datasets import part_path, read_shard, write_parquet


@dataclass(frozen=True)
class Verdict:
    """One filter's judgement of one text."""

    name: str
    score: float
    threshold: float
    passed: bool


def duplicate_line_fraction(text: str) -> float:
    """Fraction of non-empty lines that repeat an earlier line."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        return 0.0
    return (len(lines) - len(set(lines))) / len(lines)


def top_ngram_char_fraction(words: list[str], n: int) -> float:
    """Characters covered by the most frequent word n-gram, over all word characters."""
    if len(words) < n:
        return 0.0
    grams = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    gram, count = grams.most_common(1)[0]
    total = sum(len(w) for w in words)
    return count * sum(len(w) for w in gram) / total if total else 0.0


Scorer = Callable[[str, list[str]], float]


@dataclass(frozen=True)
class Filter:
    """A named score with lower and/or upper bounds taken from the config."""

    name: str
    score: Scorer
    threshold: Callable[[FilterConfig], float]
    fails_above: bool

    def judge(self, text: str, words: list[str], config: FilterConfig) -> Verdict:
        """Score ``text`` and say whether it passes."""
        score = float(self.score(text, words))
        limit = float(self.threshold(config))
        passed = score <= limit if self.fails_above else score >= limit
        return Verdict(self.name, score, limit, passed)


FILTERS: tuple[Filter, ...] = (
    Filter("min_chars", lambda t, w: len(t), lambda c: c.min_chars, fails_above=False),
    Filter("max_chars", lambda t, w: len(t), lambda c: c.max_chars, fails_above=True),
    Filter("min_words", lambda t, w: len(w), lambda c: c.min_words, fails_above=False),
    Filter("max_words", lambda t, w: len(w), lambda c: c.max_words, fails_above=True),
    Filter(
        "duplicate_line_fraction",
        lambda t, w: duplicate_line_fraction(t),
        lambda c: c.max_duplicate_line_fraction,
        fails_above=True,
    ),
    Filter(
        "top_2gram_fraction",
        lambda t, w: top_ngram_char_fraction(w, 2),
        lambda c: c.max_top_2gram_fraction,
        fails_above=True,
    ),
)
FILTER_NAMES = tuple(f.name for f in FILTERS)


def judge_text(text: str | None, config: FilterConfig) -> list[Verdict]:
    """Every filter's verdict on ``text``; an empty list for rows without text."""
    if text is None:
        return []
    words = text.split()
    return [f.judge(text, words, config) for f in FILTERS]


@dataclass(frozen=True)
class FilterSummary:
    """Counts for one shard."""

    shard: int
    rows_in: int
    kept: int
    removed_by: dict[str, int]
    would_fail: dict[str, int]


REMOVED_FIELDS = [
    pa.field("reason", pa.string()),
    pa.field("score", pa.float64()),
    pa.field("threshold", pa.float64()),
    pa.field("failed_filters", pa.list_(pa.string())),
]


def filter_shard(shard: int, upstream: Path, staging: Path, config: FilterConfig) -> FilterSummary:
    """Filter one shard: kept rows to ``part-N``, removed rows with reasons to ``removed/``."""
    table = read_shard(upstream, shard)
    keep: list[bool] = []
    reasons: list[str | None] = []
    scores: list[float | None] = []
    thresholds: list[float | None] = []
    failed_lists: list[list[str]] = []
    removed_by: Counter[str] = Counter()
    would_fail: Counter[str] = Counter()
    for text in table.column("text").to_pylist():
        failed = [v for v in judge_text(text, config) if not v.passed]
        would_fail.update(v.name for v in failed)
        keep.append(not failed)
        first = failed[0] if failed else None
        reasons.append(first.name if first else None)
        scores.append(first.score if first else None)
        thresholds.append(first.threshold if first else None)
        failed_lists.append([v.name for v in failed])
        if first:
            removed_by[first.name] += 1
    mask = pa.array(keep, pa.bool_())
    write_parquet(table.filter(mask), part_path(staging, shard))
    removed = table.append_column(REMOVED_FIELDS[0], pa.array(reasons, pa.string()))
    removed = removed.append_column(REMOVED_FIELDS[1], pa.array(scores, pa.float64()))
    removed = removed.append_column(REMOVED_FIELDS[2], pa.array(thresholds, pa.float64()))
    removed = removed.append_column(
        REMOVED_FIELDS[3], pa.array(failed_lists, pa.list_(pa.string()))
    )
    write_parquet(removed.filter(pc.invert(mask)), part_path(staging / "removed", shard))
    return FilterSummary(
        shard=shard,
        rows_in=len(table),
        kept=sum(keep),
        removed_by=dict(removed_by),
        would_fail=dict(would_fail),
    )
