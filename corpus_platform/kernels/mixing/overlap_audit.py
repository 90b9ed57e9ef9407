"""The benchmark-overlap check's own count: evaluation windows compared as tuples of words.

The mix drops contaminated rows with :mod:`.decontam`'s kernel (64-bit window hashes, windows
prefiltered by the evaluation vocabulary over a batch's dictionary-encoded words). The check
that judges the published mix must not share that code, or a fault in a hash, a window bound
or the prefilter would hide itself. It counts by the plain definition instead: each text's
words under the project's normalization (``dedup.normalization``), every run of ``n`` of them
compared as a tuple of strings with the evaluation texts' runs (no window hashes, so no
collision either way; no Arrow in the count). A text shorter than ``n`` words is one window of
all its words, as in the kernel. The only shortcut: a window is built only where its first two
words begin some evaluation window. What the two share defines what is compared: the
evaluation files as :func:`~.decontam.read_eval_texts` reads them and the normalization.

It found a fault in the kernel when it was written: with ``tokens: whitespace`` and
``whitespace: false`` a normalized text can begin or end with whitespace, the kernel counted an
empty word there, and a text shorter than ``n`` words never matched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from itertools import compress, pairwise
from pathlib import Path

from corpus_platform.base.generations import read_generations
from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.engine import Engine, LocalEngine

Window = tuple[str, ...]


@dataclass(frozen=True)
class EvalWindows:
    """Every word window of the evaluation texts, with the names of the sets holding it."""

    holders: dict[Window, tuple[str, ...]]
    openings: frozenset[tuple[str, ...]]  # every window's first two (or only) words
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
        openings = frozenset(window[:2] for window in holders)
        return cls(holders, openings, tuple(sorted(texts)), n, normalization)

    def sets_sharing(self, text: str | None) -> tuple[str, ...]:
        """The names of the evaluation sets sharing a window with ``text``, sorted."""
        words = self.normalization.words(text or "")
        if len(words) < self.n:
            return self.holders.get(tuple(words), ()) if words else ()
        n, last = self.n, len(words) - self.n + 1
        if n == 1:
            starts: Iterable[int] = range(last)
        else:
            opens = map(self.openings.__contains__, pairwise(words))
            starts = compress(range(last), opens)
        held = filter(None, map(self.holders.get, (tuple(words[i : i + n]) for i in starts)))
        return tuple(sorted({name for names in held for name in names}))


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
