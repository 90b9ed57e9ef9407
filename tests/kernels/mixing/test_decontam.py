"""Decontamination n-grams and split stability."""

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.hashing import TextNormalization
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.ingest.readers import InputError
from corpus_platform.kernels.mixing.decontam import (
    EvalNgrams,
    contaminating_sets_of,
    load_eval_ngrams,
    ngram_sets,
)
from corpus_platform.kernels.splitting.leakage import split_moves

BENCH = "the quick brown fox jumps over the lazy dog while the cat sleeps soundly on the mat today"


def test_shared_13_gram_is_contamination(tmp_path: Path) -> None:
    (tmp_path / "bench.jsonl").write_text(json.dumps({"text": BENCH}) + "\n", encoding="utf-8")
    sets = load_eval_ngrams(tmp_path, {"bench": "bench.jsonl"}, "text", 13)
    words = BENCH.split()
    leaked = "intro words here " + " ".join(words[2:15]).upper() + " and more"
    assert contaminating_sets_of([leaked], sets, 13) == [["bench"]]
    twelve = "intro " + " ".join(words[2:14]) + " outro"
    assert contaminating_sets_of([twelve], sets, 13) == [[]]
    assert contaminating_sets_of([None], sets, 13) == [[]]
    assert len(set(ngram_sets([BENCH], 13)[0].tolist())) == len(words) - 12


def test_decontamination_tokenizes_as_dedup_normalization_says(tmp_path: Path) -> None:
    """The one normalization: with the default (``\\w+`` words) punctuation inside a copied
    passage does not hide it; with whitespace tokens, ``fox-jumps`` is one token and the copy
    shares no 13-gram."""
    (tmp_path / "bench.jsonl").write_text(json.dumps({"text": BENCH}) + "\n", encoding="utf-8")
    copied = BENCH.replace("fox jumps", "fox-jumps").replace("lazy dog", "lazy, dog") + "!"
    words = load_eval_ngrams(tmp_path, {"bench": "bench.jsonl"}, "text", 13)
    assert contaminating_sets_of([copied], words, 13) == [["bench"]]
    plain = TextNormalization(tokens="whitespace")
    spaces = load_eval_ngrams(tmp_path, {"bench": "bench.jsonl"}, "text", 13, plain)
    assert spaces.normalization == plain
    assert contaminating_sets_of([copied], spaces, 13) == [[]]
    assert contaminating_sets_of([BENCH], spaces, 13) == [["bench"]]


def test_candidate_windows_find_what_hashing_every_window_finds() -> None:
    rng = random.Random(7)
    vocabulary = ["the", "of", "Fox", "jumps", "caf\u00e9", "na\u00efve", "x1", "dog", "over"]
    evals = {
        "a": [" ".join(rng.choices(vocabulary[:6], k=rng.randint(1, 30))) for _ in range(20)],
        "b": ["fox jumps", "the of the", "Z"],  # shorter than n: one window of the whole text
    }
    n = 4
    texts: list[str | None] = [None, "", "!!!", "Fox, jumps.", "THE OF THE", "z", " z\n"]
    texts += [
        " ".join(rng.choices([*vocabulary, "zebra", "-", "\n"], k=rng.randint(0, 40)))
        for _ in range(3_000)
    ]
    spaced = TextNormalization(tokens="whitespace", whitespace=False, punctuation=True)
    for normalization in (TextNormalization(), spaced):  # spaced: texts keep edge whitespace
        ngrams = EvalNgrams.of(evals, n, normalization)
        expected = [
            [name for name in sorted(ngrams.sets) if set(grams.tolist()) & ngrams.sets[name]]
            for grams in ngram_sets(texts, n, normalization)
        ]
        found = contaminating_sets_of(texts, ngrams, n)
        assert found == expected
        assert sum(map(bool, found)) > 500 and sum(not f for f in found) > 500
        assert all("b" in names for names in found[3:7]) and found[:3] == [[], [], []]


def test_eval_set_problems_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="evaluation set 'x' not found"):
        load_eval_ngrams(tmp_path, {"x": "missing.jsonl"}, "text", 13)
    (tmp_path / "b.jsonl").write_text(json.dumps({"prompt": "hi"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no column 'text'"):
        load_eval_ngrams(tmp_path, {"b": "b.jsonl"}, "text", 13)


def write_split(root: Path, assignment: dict[str, str]) -> None:
    for name in ("train", "validation", "test"):
        ids = sorted(d for d, s in assignment.items() if s == name)
        write_parquet(pa.table({"doc_id": pa.array(ids, pa.string())}), part_path(root / name, 0))


def test_moves_into_train_fail_and_other_moves_are_reported(tmp_path: Path) -> None:
    write_split(tmp_path / "old", {"a": "train", "b": "test", "c": "validation", "d": "train"})
    write_split(tmp_path / "new", {"a": "test", "b": "train", "c": "validation", "e": "train"})
    report = split_moves(tmp_path / "old", tmp_path / "new", 1, 1)
    assert (report.compared, report.moved, report.into_train) == (3, 2, 1)
    assert report.examples == ("b: test -> train",) and not report.passed
    fine = split_moves(tmp_path / "old", tmp_path / "old", 1, 1)
    assert fine.passed and fine.moved == 0
