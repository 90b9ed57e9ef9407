"""Decontamination: no training row may share a word n-gram with an evaluation set.

Every evaluation text is normalized (as for exact dedup) and cut into word n-grams (13 by
default, as in GPT-3's contamination analysis); their 64-bit hashes (the polynomial word hashes
of :mod:`corpus_platform.kernels.minhash`, a batch of texts at a time) form one set per
evaluation set. A training row is contaminated by a set when any of its n-grams hashes into it.
Texts shorter than n words contribute (and are tested as) one n-gram of their whole text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from corpus_platform.base.hashing import normalize_text
from corpus_platform.base.shards import read_shard
from corpus_platform.kernels.engine import Engine, LocalEngine
from corpus_platform.kernels.minhash import normalized_shingle_sets
from corpus_platform.kernels.readers import InputError, read_batches

EvalNgrams = dict[str, frozenset[int]]
EMPTY = np.empty(0, dtype=np.uint64)


BATCH_TEXTS = 2048  # texts whose n-grams are hashed together


def ngram_sets(texts: list[str | None], n: int) -> list[np.ndarray]:
    """The hashes of each text's word ``n``-grams, normalized as exact dedup does (64-bit,
    sorted, distinct; empty for a text without words), hashed a batch at a time."""
    out: list[np.ndarray] = []
    for start in range(0, len(texts), BATCH_TEXTS):
        normalized = [normalize_text(t or "") for t in texts[start : start + BATCH_TEXTS]]
        sets = normalized_shingle_sets(normalized, n)
        out += [sets.row(i) if text else EMPTY for i, text in enumerate(normalized)]
    return out


def ngram_hashes(text: str, n: int) -> set[int]:
    """Hashes of the word ``n``-grams of the normalized text."""
    return set(ngram_sets([text], n)[0].tolist())


def load_eval_ngrams(root: Path, eval_sets: dict[str, str], text_column: str, n: int) -> EvalNgrams:
    """Read every evaluation file and hash its n-grams.

    Raises:
        InputError: when a file is missing or lacks the text column.
    """
    out: EvalNgrams = {}
    for name, relative in sorted(eval_sets.items()):
        path = root / relative
        if not path.is_file():
            raise InputError(
                f"{path}: evaluation set {name!r} not found; fix decontamination.eval_sets"
            )
        hashes: set[int] = set()
        for _, table in read_batches(path):
            if text_column not in table.column_names:
                raise InputError(
                    f"{path}: no column {text_column!r}; set decontamination.text_column to the "
                    "column holding the evaluation text"
                )
            texts = [str(t) for t in table.column(text_column).to_pylist() if t]
            for grams in ngram_sets(texts, n):
                hashes.update(grams.tolist())
        out[name] = frozenset(hashes)
    return out


def contaminating_sets(text: str | None, eval_ngrams: EvalNgrams, n: int) -> list[str]:
    """Names of the evaluation sets sharing at least one n-gram with ``text``."""
    return contaminating_sets_of([text], eval_ngrams, n)[0]


def contaminating_sets_of(
    texts: list[str | None], eval_ngrams: EvalNgrams, n: int
) -> list[list[str]]:
    """For each text, the names of the evaluation sets sharing at least one n-gram with it;
    the texts' n-grams are looked up in every set at once (numpy), a batch at a time."""
    if not eval_ngrams:
        return [[] for _ in texts]
    lookups = {name: np.fromiter(h, np.uint64, len(h)) for name, h in eval_ngrams.items()}
    found: list[list[str]] = []
    for start in range(0, len(texts), BATCH_TEXTS):
        sets = ngram_sets(texts[start : start + BATCH_TEXTS], n)
        values = np.concatenate(sets) if sets else EMPTY
        owner = np.repeat(np.arange(len(sets)), [len(r) for r in sets])
        hit_rows = {
            name: set(np.unique(owner[np.isin(values, hashes)]).tolist())
            for name, hashes in lookups.items()
        }
        found += [[name for name in lookups if i in hit_rows[name]] for i in range(len(sets))]
    return found


def shard_overlap(
    shard: int, folder: Path, eval_ngrams: EvalNgrams, n: int
) -> tuple[int, Counter[str], list[str]]:
    """One shard of :func:`overlap_report`: rows, contaminated rows per set, and every
    contaminated row named with its sets (an engine task)."""
    table = read_shard(folder, shard, ["doc_id", "text"])
    ids = table.column("doc_id").to_pylist()
    found = contaminating_sets_of(table.column("text").to_pylist(), eval_ngrams, n)
    hits: Counter[str] = Counter(name for names in found for name in names)
    named = [f"{d}: {', '.join(names)}" for d, names in zip(ids, found, strict=True) if names]
    return len(ids), hits, named


@dataclass(frozen=True)
class OverlapReport:
    """Rows of a dataset that share an n-gram with an evaluation set."""

    rows: int
    contaminated: int
    hits: dict[str, int]
    examples: tuple[str, ...]


def overlap_report(
    folder: Path,
    num_shards: int,
    eval_ngrams: EvalNgrams,
    n: int,
    engine: Engine | None = None,
) -> OverlapReport:
    """Scan every row of the dataset at ``folder`` for the evaluation sets' n-grams, one shard
    per engine task; up to ten offenders are named with the sets they share n-grams with."""
    task = partial(shard_overlap, folder=folder, eval_ngrams=eval_ngrams, n=n)
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
        rows,
        contaminated,
        {name: hits.get(name, 0) for name in sorted(eval_ngrams)},
        tuple(examples),
    )
