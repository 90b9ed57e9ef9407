"""The benchmark-overlap check's own count: evaluation windows compared as tuples of words.

The mix drops contaminated rows with :mod:`.decontam`'s kernel (64-bit hashes of each word and
window from a compiled walk over a batch's bytes, windows prefiltered by a hash set of the
evaluation vocabulary). The check that judges the published mix must not share that code, or a
fault in a hash, a window bound or the prefilter would hide itself. It counts by the plain
definition instead: each text's words under the project's normalization
(``dedup.normalization``), every run of ``n`` of them compared as a tuple of strings with the
evaluation texts' runs (no hashes anywhere, so no collision either way). A text shorter than
``n`` words is one window of all its words, as in the kernel.

The only shortcut decides which windows are built: a window can be an evaluation window only if
each of its words is a word of some evaluation window and each of its ``n - 1`` pairs of
adjacent words a pair of adjacent words of one. A batch of texts is split into words by Arrow
(:func:`corpus_platform.base.words.split_words`, where ``str.split()`` splits), each word looked
up by its string in the evaluation vocabulary (``pyarrow.compute.index_in``), each pair of
adjacent known words in the evaluation pairs by their two vocabulary indices, and a window is
built only where its ``n - 1`` pairs are all known. What the two counts share defines what is
compared: the evaluation files as :func:`~.decontam.read_eval_texts` reads them and the
normalization.

It found a fault in the kernel when it was written: with ``tokens: whitespace`` and
``whitespace: false`` a normalized text can begin or end with whitespace, the kernel counted an
empty word there, and a text shorter than ``n`` words never matched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import TextSource, read_with_texts
from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.base.words import split_words
from corpus_platform.engine import Engine, LocalEngine

Window = tuple[str, ...]
BATCH_TEXTS = 2048  # texts split and looked up together: bounds memory, not results


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
        return self.shared_sets([text])[0]

    def shared_sets(self, texts: Sequence[str | None]) -> list[tuple[str, ...]]:
        """:meth:`sets_sharing` of every text, counted :data:`BATCH_TEXTS` texts at a time."""
        found: list[tuple[str, ...]] = []
        for start in range(0, len(texts), BATCH_TEXTS):
            found += self._batch_sets(texts[start : start + BATCH_TEXTS])
        return found

    @cached_property
    def vocabulary(self) -> pa.Array:
        """Every word of some evaluation window, sorted: a word's index is its position."""
        return pa.array(sorted(self.words), pa.large_string())

    @cached_property
    def pair_keys(self) -> pa.Array:
        """Every pair of adjacent words inside some evaluation window as ``first index *
        len(vocabulary) + second index``, sorted."""
        index = {word: i for i, word in enumerate(self.vocabulary.to_pylist())}
        size = len(index)
        keys = [index[first] * size + index[second] for first, second in self.pairs]
        return pa.array(sorted(set(keys)), pa.int64())

    def _batch_sets(self, texts: Sequence[str | None]) -> list[tuple[str, ...]]:
        spaced = [self.normalization.spaced(text or "") for text in texts]
        words, counts = split_words(pa.array(spaced, pa.large_string()))
        ends = np.cumsum(counts)
        found: list[set[str]] = [set() for _ in texts]
        windows = [(int(t), int(ends[t] - counts[t]), int(counts[t])) for t in self._short(counts)]
        index = pc.index_in(words, value_set=self.vocabulary).fill_null(-1)
        for start in self._window_starts(index.to_numpy(zero_copy_only=False), ends):
            text = int(np.searchsorted(ends, start, side="right"))
            windows.append((text, int(start), self.n))
        for text, start, size in windows:
            names = self.holders.get(tuple(words.slice(start, size).to_pylist()), ())
            found[text].update(names)
        return [tuple(sorted(names)) for names in found]

    def _short(self, counts: np.ndarray) -> np.ndarray:
        """The texts of fewer than ``n`` words (but some): each is one window of all of them."""
        return np.flatnonzero((counts > 0) & (counts < self.n))

    def _window_starts(self, index: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The starts of the ``n``-word windows (inside one text) whose every word is in the
        vocabulary and every pair of adjacent words an evaluation pair; ``index``: each word's
        vocabulary index (-1: none), texts end to end; ``ends``: where each text's words end."""
        n = self.n
        if n == 1:
            return np.flatnonzero(index >= 0)
        if len(index) < n:
            return np.empty(0, dtype=np.int64)
        known = (index[:-1] >= 0) & (index[1:] >= 0)
        last = ends[(ends > 0) & (ends < len(index))] - 1  # a text's last word pairs with none
        known[last] = False
        at = np.flatnonzero(known)
        keys = index[at] * len(self.vocabulary) + index[at + 1]
        known[at] = pc.is_in(keys, value_set=self.pair_keys).to_numpy(zero_copy_only=False)
        pairs_before = np.zeros(len(known) + 1, dtype=np.int64)
        np.cumsum(known, out=pairs_before[1:])
        return np.flatnonzero(pairs_before[n - 1 :] - pairs_before[: len(known) - n + 2] == n - 1)


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
    texts: TextSource | None = None,
) -> tuple[int, Counter[str], list[str]]:
    """One shard of :func:`overlap_report`: rows, contaminated rows per set, and every
    contaminated row named with its sets (an engine task)."""
    table = read_with_texts(folder, shard, texts, generations, ["doc_id"])
    ids = table.column("doc_id").to_pylist()
    found = windows.shared_sets(table.column("text").to_pylist())
    hits: Counter[str] = Counter(name for names in found for name in names)
    named = [f"{d}: {', '.join(names)}" for d, names in zip(ids, found, strict=True) if names]
    return len(ids), hits, named


def overlap_report(
    folder: Path,
    num_shards: int,
    windows: EvalWindows,
    engine: Engine | None = None,
    generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> OverlapReport:
    """Scan every row of the dataset at ``folder`` (of the generations ``generations`` only,
    when given; their texts from ``texts`` when the folder stores none) for the evaluation
    windows, one shard per engine task; up to ten offenders are named with the sets they share
    a window with."""
    task = partial(
        shard_overlap, folder=folder, windows=windows, generations=generations, texts=texts
    )
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
