"""Decontamination: no training row may share a word n-gram with an evaluation set.

Every evaluation text is normalized (as for exact dedup) and cut into word n-grams (13 by
default, as in GPT-3's contamination analysis); their 64-bit hashes form one set per evaluation
set. A training row is contaminated by a set when any of its n-grams hashes into it. Texts
shorter than n words contribute (and are tested as) one n-gram of their whole text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import xxhash

from corpus_platform.base.hashing import normalize_text
from corpus_platform.base.shards import iter_shards
from corpus_platform.kernels.readers import InputError, read_batches

EvalNgrams = dict[str, frozenset[int]]


def ngram_hashes(text: str, n: int) -> set[int]:
    """Hashes of the word ``n``-grams of the normalized text."""
    words = normalize_text(text).split()
    if not words:
        return set()
    if len(words) < n:
        return {xxhash.xxh3_64_intdigest(" ".join(words).encode("utf-8"))}
    return {
        xxhash.xxh3_64_intdigest(" ".join(words[i : i + n]).encode("utf-8"))
        for i in range(len(words) - n + 1)
    }


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
            for text in table.column(text_column).to_pylist():
                if text:
                    hashes |= ngram_hashes(str(text), n)
        out[name] = frozenset(hashes)
    return out


def contaminating_sets(text: str | None, eval_ngrams: EvalNgrams, n: int) -> list[str]:
    """Names of the evaluation sets sharing at least one n-gram with ``text``."""
    if not text or not eval_ngrams:
        return []
    grams = ngram_hashes(text, n)
    return [name for name, hashes in eval_ngrams.items() if not grams.isdisjoint(hashes)]


@dataclass(frozen=True)
class OverlapReport:
    """Rows of a dataset that share an n-gram with an evaluation set."""

    rows: int
    contaminated: int
    hits: dict[str, int]
    examples: tuple[str, ...]


def overlap_report(folder: Path, num_shards: int, eval_ngrams: EvalNgrams, n: int) -> OverlapReport:
    """Scan every row of the dataset at ``folder`` for the evaluation sets' n-grams, shard by
    shard; up to ten offenders are named with the sets they share n-grams with."""
    hits: Counter[str] = Counter()
    examples: list[str] = []
    rows = contaminated = 0
    for _, table in iter_shards(folder, num_shards, ["doc_id", "text"]):
        for doc_id, text in zip(
            table.column("doc_id").to_pylist(), table.column("text").to_pylist(), strict=True
        ):
            rows += 1
            found = contaminating_sets(text, eval_ngrams, n)
            hits.update(found)
            contaminated += bool(found)
            if found and len(examples) < 10:
                examples.append(f"{doc_id}: {', '.join(found)}")
    return OverlapReport(
        rows,
        contaminated,
        {name: hits.get(name, 0) for name in sorted(eval_ngrams)},
        tuple(examples),
    )
