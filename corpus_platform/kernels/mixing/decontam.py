"""Decontamination: no training row may share a word n-gram with an evaluation set.

Every evaluation text is normalized (as for exact dedup) and cut into word n-grams (13 by
default, as in GPT-3's contamination analysis); their 64-bit hashes (the polynomial word hashes
of :mod:`corpus_platform.kernels.dedup.minhash`, a batch of texts at a time) form one set per
evaluation set. A training row is contaminated by a set when any of its n-grams hashes into it.
Texts shorter than n words contribute (and are tested as) one n-gram of their whole text.

Training rows are tested without hashing every window: a window can only be in a set when each
of its words occurs in some evaluation text, so only those windows (found with one compiled
membership test of the batch's word hashes in the evaluation words' hashes) are hashed. The
result is the full test's (``tests/kernels/mixing/test_decontam.py`` compares them on random
texts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from corpus_platform.base.arrays import avalanche64
from corpus_platform.base.hashing import DEFAULT_NORMALIZATION, TextNormalization
from corpus_platform.base.word_hashes import HashSet, word_hashes
from corpus_platform.kernels.dedup.minhash import NGRAM_BASE, normalized_shingle_sets
from corpus_platform.kernels.ingest.readers import InputError, read_batches

EMPTY = np.empty(0, dtype=np.uint64)


BATCH_TEXTS = 2048  # texts whose n-grams are hashed together


@dataclass(frozen=True)
class EvalNgrams:
    """Every evaluation set's n-gram hashes (by set name) and the normalized words of all
    evaluation texts: a training window whose words are not all among them hits no set."""

    sets: dict[str, frozenset[int]]
    words: frozenset[str]
    normalization: TextNormalization = DEFAULT_NORMALIZATION  # training texts get the same

    @classmethod
    def of(
        cls,
        texts: dict[str, list[str]],
        n: int,
        normalization: TextNormalization = DEFAULT_NORMALIZATION,
    ) -> EvalNgrams:
        """The n-gram hash sets of each named list of evaluation texts, and their words, under
        ``normalization`` (the project's ``dedup.normalization``)."""
        sets: dict[str, frozenset[int]] = {}
        words: set[str] = set()
        for name, items in sorted(texts.items()):
            hashes: set[int] = set()
            for grams in ngram_sets(items, n, normalization):
                hashes.update(grams.tolist())
            sets[name] = frozenset(hashes)
            for text in items:
                words.update(normalization.words(text))
        return cls(sets, frozenset(words), normalization)


def ngram_sets(
    texts: list[str | None], n: int, normalization: TextNormalization = DEFAULT_NORMALIZATION
) -> list[np.ndarray]:
    """The hashes of each text's word ``n``-grams, normalized as exact dedup does (64-bit,
    sorted, distinct; empty for a text without words), hashed a batch at a time."""
    out: list[np.ndarray] = []
    for start in range(0, len(texts), BATCH_TEXTS):
        batch = texts[start : start + BATCH_TEXTS]
        normalized = [normalization.apply(t or "") for t in batch]
        sets = normalized_shingle_sets(normalized, n)
        out += [sets.row(i) if text else EMPTY for i, text in enumerate(normalized)]
    return out


def load_eval_ngrams(
    root: Path,
    eval_sets: dict[str, str],
    text_column: str,
    n: int,
    normalization: TextNormalization = DEFAULT_NORMALIZATION,
) -> EvalNgrams:
    """Read every evaluation file and hash its n-grams.

    Raises:
        InputError: when a file is missing or lacks the text column.
    """
    return EvalNgrams.of(read_eval_texts(root, eval_sets, text_column), n, normalization)


def read_eval_texts(
    root: Path, eval_sets: dict[str, str], text_column: str
) -> dict[str, list[str]]:
    """Every evaluation set's non-empty texts, by set name (paths relative to ``root``).

    Raises:
        InputError: when a file is missing or lacks the text column.
    """
    texts: dict[str, list[str]] = {}
    for name, relative in sorted(eval_sets.items()):
        path = root / relative
        if not path.is_file():
            raise InputError(
                f"{path}: evaluation set {name!r} not found; fix decontamination.eval_sets"
            )
        texts[name] = []
        for _, table in read_batches(path):
            if text_column not in table.column_names:
                raise InputError(
                    f"{path}: no column {text_column!r}; set decontamination.text_column to the "
                    "column holding the evaluation text"
                )
            texts[name] += [str(t) for t in table.column(text_column).to_pylist() if t]
    return texts


def contaminating_sets_of(
    texts: list[str | None], eval_ngrams: EvalNgrams, n: int
) -> list[list[str]]:
    """For each text, the names of the evaluation sets sharing at least one n-gram with it;
    the candidate windows' hashes are looked up in every set at once, a batch at a time."""
    if not eval_ngrams.sets:
        return [[] for _ in texts]
    lookups = {name: np.fromiter(h, np.uint64, len(h)) for name, h in eval_ngrams.sets.items()}
    vocabulary = HashSet.of(xxhash.xxh3_64_intdigest(w.encode()) for w in eval_ngrams.words)
    found: list[list[str]] = []
    for start in range(0, len(texts), BATCH_TEXTS):
        batch = texts[start : start + BATCH_TEXTS]
        spaced = [eval_ngrams.normalization.spaced(t or "") for t in batch]
        values, owner = candidate_ngrams(spaced, n, vocabulary)
        hit_rows = {
            name: set(owner[np.isin(values, hashes)].tolist()) for name, hashes in lookups.items()
        }
        found += [[name for name in lookups if i in hit_rows[name]] for i in range(len(batch))]
    return found


def candidate_ngrams(
    normalized: list[str], n: int, vocabulary: HashSet
) -> tuple[np.ndarray, np.ndarray]:
    """The n-gram hashes (as :func:`ngram_sets` makes them) of the windows of ``normalized``
    texts (or texts with the same whitespace words: ``TextNormalization.spaced``) whose words'
    hashes are all in ``vocabulary`` (the evaluation words' xxh3 hashes), and the text each
    belongs to. A text of fewer than ``n`` words is one window of all its words; an empty text
    has none.

    The batch's word hashes are laid end to end (:func:`word_hashes`); a window is taken where no
    unknown word and no text's first word (other than its own first) lies inside it, both read
    off running counts. A word is known by its hash, as the window is then matched by its
    hash: a window is taken whenever its hash could equal an evaluation n-gram's.
    """
    hashes, lengths = word_hashes(normalized)
    known = vocabulary.contains(hashes)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    unknown = np.zeros(len(hashes) + 1, dtype=np.int64)  # unknown words before each position
    np.cumsum(~known, out=unknown[1:])
    is_start = np.zeros(len(hashes) + 1, dtype=np.int64)
    is_start[starts[lengths > 0]] = 1
    text_starts = np.cumsum(is_start)  # texts begun up to and including each position
    last = max(len(hashes) - n + 1, 0)  # windows start at 0 .. last - 1
    whole = (unknown[n : n + last] == unknown[:last]) & (
        text_starts[n - 1 : n - 1 + last] == text_starts[:last]
    )
    windows = np.flatnonzero(whole)
    values = [_window_hashes(hashes, windows, n)]
    owners = [np.searchsorted(ends, windows, side="right")]
    short = np.flatnonzero((lengths < n) & (unknown[ends] == unknown[starts]) & (lengths > 0))
    for text in short.tolist():
        values.append(_window_hashes(hashes, starts[text : text + 1], lengths[text]))
        owners.append(np.array([text], dtype=np.int64))
    return np.concatenate(values), np.concatenate(owners)


def _window_hashes(word_hashes: np.ndarray, windows: np.ndarray, width: int) -> np.ndarray:
    """The avalanched polynomial hash of the ``width`` words (``word_hashes[i]`` for position
    ``i``) starting at each of ``windows``: the shingle hash of
    :func:`corpus_platform.kernels.dedup.minhash.normalized_shingle_sets`."""
    with np.errstate(over="ignore"):
        grams = word_hashes[windows]
        for k in range(1, int(width)):
            grams = grams * NGRAM_BASE + word_hashes[windows + k]
        return avalanche64(grams + np.uint64(width))
