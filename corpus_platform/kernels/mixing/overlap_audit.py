"""The benchmark-overlap check's own count: evaluation windows compared as tuples of words.

The mix drops contaminated rows with :mod:`.decontam`'s kernel (64-bit window hashes, windows
prefiltered by the evaluation vocabulary over a batch's dictionary-encoded words). The check
that judges the published mix must not share that code, or a fault in a hash, a window bound
or the prefilter would hide itself. It counts by the plain definition instead: each text's
words under the project's normalization (``dedup.normalization``), every run of ``n`` of them
compared as a tuple of strings with the evaluation texts' runs (no window hashes, so no
collision either way; no Arrow in the count). A text shorter than ``n`` words is one window of
all its words, as in the kernel. The only shortcut: a window is built only where each of its
words is a word of some evaluation window and each of its ``n - 1`` pairs of adjacent words a
pair of adjacent words of one (conditions every evaluation window meets), found as runs of at
least ``n`` such words, then of ``n - 1`` such pairs inside them. What
the two share defines what is compared: the evaluation files as
:func:`~.decontam.read_eval_texts` reads them and the normalization.

It found a fault in the kernel when it was written: with ``tokens: whitespace`` and
``whitespace: false`` a normalized text can begin or end with whitespace, the kernel counted an
empty word there, and a text shorter than ``n`` words never matched.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from pathlib import Path

from corpus_platform.base.generations import read_generations
from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.engine import Engine, LocalEngine

Window = tuple[str, ...]


@dataclass(frozen=True)
class EvalWindows:
    """Every word window of the evaluation texts, with the names of the sets holding it."""

    holders: dict[Window, tuple[str, ...]]
    words: frozenset[str]  # every word of some window
    pairs: frozenset[tuple[str, ...]]  # every pair of adjacent words inside some window
    names: tuple[str, ...]
    n: int
    normalization: TextNormalization = DEFAULT_NORMALIZATION

    @classmethod
    def of(
        cls,
        texts: dict[str, list[str]],
        n: int,
        normalization: TextNormalization = DEFAULT_NORMALIZATION,
    ) -> EvalWindows:
        """The windows of each named list of evaluation texts under ``normalization``."""
        holding: dict[Window, set[str]] = {}
        for name, items in texts.items():
            for text in items:
                for window in windows_of(normalization.words(text), n):
                    holding.setdefault(window, set()).add(name)
        holders = {window: tuple(sorted(names)) for window, names in holding.items()}
        words = frozenset(word for window in holders for word in window)
        pairs = frozenset(pair for window in holders for pair in pairwise(window))
        return cls(holders, words, pairs, tuple(sorted(texts)), n, normalization)

    def sets_sharing(self, text: str | None) -> tuple[str, ...]:
        """The names of the evaluation sets sharing a window with ``text``, sorted."""
        words = self.normalization.words(text or "")
        if len(words) < self.n:
            return self.holders.get(tuple(words), ()) if words else ()
        n = self.n
        starts: Iterable[int] = range(len(words) - n + 1) if n == 1 else self._starts(words)
        held = filter(None, map(self.holders.get, (tuple(words[i : i + n]) for i in starts)))
        return tuple(sorted({name for names in held for name in names}))

    def _starts(self, words: list[str]) -> Iterator[int]:
        """The starts of the windows of ``words`` (at least ``n >= 2`` of them) whose every
        word and pair of adjacent words is an evaluation word and pair: inside runs of ``n`` or
        more such words, runs of ``n - 1`` or more such pairs."""
        n = self.n
        known = bytes(map(self.words.__contains__, words))  # one byte 0/1 a word
        for region in re.finditer(b"\x01{%d,}" % n, known):
            first, end = region.span()
            inside = bytes(map(self.pairs.__contains__, pairwise(words[first:end])))
            for run in re.finditer(b"\x01{%d,}" % (n - 1), inside):
                yield from range(first + run.start(), first + run.end() - n + 2)


def windows_of(words: list[str], n: int) -> list[Window]:
    """Every run of ``n`` consecutive words; all the words as one window when there are fewer
    (none for no words)."""
    if len(words) < n:
        return [tuple(words)] if words else []
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


@dataclass(frozen=True)
class OverlapReport:
    """Rows of a dataset that share a window with an evaluation set."""

    rows: int
    contaminated: int
    hits: dict[str, int]
    examples: tuple[str, ...]


def shard_overlap(
    shard: int,
    folder: Path,
    windows: EvalWindows,
    generations: tuple[int, ...] | None = None,
) -> tuple[int, Counter[str], list[str]]:
    """One shard of :func:`overlap_report`: rows, contaminated rows per set, and every
    contaminated row named with its sets (an engine task)."""
    table = read_generations(folder, shard, generations, ["doc_id", "text"])
    ids = table.column("doc_id").to_pylist()
    found = [windows.sets_sharing(text) for text in table.column("text").to_pylist()]
    hits: Counter[str] = Counter(name for names in found for name in names)
    named = [f"{d}: {', '.join(names)}" for d, names in zip(ids, found, strict=True) if names]
    return len(ids), hits, named


def overlap_report(
    folder: Path,
    num_shards: int,
    windows: EvalWindows,
    engine: Engine | None = None,
    generations: tuple[int, ...] | None = None,
) -> OverlapReport:
    """Scan every row of the dataset at ``folder`` (of the generations ``generations`` only,
    when given) for the evaluation windows, one shard per engine task; up to ten offenders are
    named with the sets they share a window with."""
    task = partial(shard_overlap, folder=folder, windows=windows, generations=generations)
    hits: Counter[str] = Counter()
    examples: list[str] = []
    rows = contaminated = 0
    for shard_rows, shard_hits, named in (engine or LocalEngine()).map_shards(
        task, range(num_shards)
    ):
        rows += shard_rows
        contaminated += len(named)
        hits.update(shard_hits)
        examples += named[: 10 - len(examples)]
    return OverlapReport(
        rows, contaminated, {name: hits.get(name, 0) for name in windows.names}, tuple(examples)
    )
