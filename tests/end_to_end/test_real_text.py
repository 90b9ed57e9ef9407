"""Real text end to end: copyright files, changelogs and manual pages from /usr/share (license
boilerplate repeated across packages, some files not UTF-8) go through the whole graph, then a
count written here, without the platform's kernels, checks the two promises users rely on:

* no pair of rows at or above the split's similarity threshold sits across train and a held-out
  split;
* no two kept rows are near-duplicates at or above the dedup threshold.

Similarity is the definition peers use: exact Jaccard of lowercase ``\\w+`` word 5-gram sets.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest

from corpus_platform.base.names import STAGES
from tests.conftest import build, project_config, set_config, tree_digest
from tests.realtext import real_text_records

# Real files are not web prose: keep most of them so that dedup and the split see their
# repeated boilerplate (the filters have their own tests).
PERMISSIVE_FILTERS = {
    "languages": [],
    "min_words": 20,
    "min_stop_words": 0,
    "min_alpha_words_ratio": 0.3,
    "max_symbol_word_ratio": 1.0,
    "c4_curly_braces": False,
    "max_duplicate_line_fraction": 1.0,
    "max_duplicate_paragraph_fraction": 1.0,
    "max_duplicate_line_char_fraction": 1.0,
    "max_duplicate_paragraph_char_fraction": 1.0,
    "max_top_ngram_char_fraction": {2: 1.0, 3: 1.0, 4: 1.0},
    "max_duplicate_ngram_char_fraction": {n: 1.0 for n in range(5, 11)},
    "max_code_line_ratio": 1.0,
    "max_url_ratio": 1.0,
}
SHINGLE = 5
EVAL_SET = "data/eval/bench.jsonl"
EVAL_EVERY = 50  # one evaluation passage from every 50th real document
EVAL_NGRAM = 13
SPLIT_THRESHOLD = 0.6
DEDUP_THRESHOLD = 0.8


def shingles(text: str) -> frozenset[tuple[str, ...]]:
    """Lowercase ``\\w+`` word 5-grams (a shorter text is one shingle of all its words)."""
    words = re.findall(r"\w+", text.lower())
    if len(words) < SHINGLE:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1))


def close_pairs(texts: dict[str, str], threshold: float) -> set[tuple[str, str]]:
    """Every pair of ids whose texts' Jaccard is at least ``threshold``: candidates from an
    inverted index of shingles (a pair above zero shares one), then the exact Jaccard."""
    sets = {doc_id: shingles(text) for doc_id, text in texts.items()}
    holders: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for doc_id, grams in sets.items():
        for gram in grams:
            holders[gram].append(doc_id)
    candidates = {tuple(sorted(p)) for ids in holders.values() for p in combinations(ids, 2)}
    return {
        (a, b)
        for a, b in candidates
        if len(sets[a] & sets[b]) / len(sets[a] | sets[b]) >= threshold
    }


def stage_texts(folder: Path, texts: Path | None = None) -> dict[str, str]:
    """doc_id -> text of a stage folder's shards (side tables in subfolders left out); the
    texts from the stage folder ``texts`` for a stage that stores none (by doc id)."""
    columns = ["doc_id", "text"] if texts is None else ["doc_id"]
    parts = [pd.read_parquet(p, columns=columns) for p in sorted(folder.glob("part-*"))]
    frame = pd.concat(parts)
    if texts is None:
        return dict(zip(frame["doc_id"], frame["text"], strict=True))
    text_of = stage_texts(texts)
    return {doc_id: text_of[doc_id] for doc_id in frame["doc_id"]}


def filtered_texts(data: Path) -> dict[str, str]:
    """doc_id -> text of ``filtered_documents`` as another tool reads it: the stage's own text
    where the filters edited it, else (null) the text ``raw_documents`` has for the doc id."""
    own = stage_texts(data / "filtered_documents")
    raw = stage_texts(data / "raw_documents")
    return {doc_id: text if isinstance(text, str) else raw[doc_id] for doc_id, text in own.items()}


def _split_texts(root: Path) -> dict[str, dict[str, str]]:
    splits = root / "data" / "split_documents"
    return {split: stage_texts(splits / split) for split in ("train", "validation", "test")}


@pytest.fixture(scope="module")
def real_project(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("real") / "project"
    raw = root / "data" / "raw"
    raw.mkdir(parents=True)
    records = real_text_records(900)
    with (raw / "usr-share.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    (root / EVAL_SET).parent.mkdir(parents=True)
    with (root / EVAL_SET).open("w", encoding="utf-8") as handle:
        for record in records[::EVAL_EVERY]:  # passages of real files: some land in train
            passage = " ".join(record["body"].split()[20:60])
            handle.write(json.dumps({"text": passage}) + "\n")
    config = project_config(
        input={
            "path": "data/raw",
            "columns": {"doc_id": "id", "text": "body", "source": "src", "entity": "package"},
            "features": [],
            "ranges": {},
        },
        filters=PERMISSIVE_FILTERS,
        split={"tolerance": 0.1},
        mix={"proportions": {"copyright": 0.4, "changelog": 0.3, "man": 0.3}, "tolerance": 0.1},
        asof_features=[],
        decontamination={"eval_sets": {"bench": EVAL_SET}, "action": "drop"},
    )
    (root / "corpus.yaml").write_text(json.dumps(config), encoding="utf-8")
    return root, build(root), len(records)


def test_real_text_builds_and_every_check_passes(real_project) -> None:
    _, report, count = real_project
    assert count >= 500
    assert report.ok, report.render()
    assert report.materialized["deduplicated_documents"]["duplicate_clusters"] > 0


def test_two_workers_build_the_same_bytes_with_checks_side_by_side(
    real_project, tmp_path: Path
) -> None:
    """Two worker processes (their own allocators, each stage's checks two at a time, the raw
    files pinned while the checks run) pass every check and write byte for byte what one
    process wrote, on real text."""
    one, _, _ = real_project
    two = tmp_path / "project"
    two.mkdir()
    shutil.copytree(one / "data" / "raw", two / "data" / "raw")
    shutil.copytree(one / "data" / "eval", two / "data" / "eval")
    shutil.copy(one / "corpus.yaml", two / "corpus.yaml")
    set_config(two, engine={"kind": "local", "workers": 2})
    report = build(two)
    assert report.ok, report.render()
    for stage in STAGES:
        assert tree_digest(two / "data" / stage) == tree_digest(one / "data" / stage), stage
        assert (two / "data" / f"{stage}.dvc").read_bytes() == (
            one / "data" / f"{stage}.dvc"
        ).read_bytes()
    assert (two / "data" / "raw.dvc").read_bytes() == (one / "data" / "raw.dvc").read_bytes()


def test_no_similar_pair_crosses_train_and_held_out(real_project) -> None:
    root, _, _ = real_project
    texts = _split_texts(root)
    where = {doc_id: split for split, rows in texts.items() for doc_id in rows}
    merged = {doc_id: text for rows in texts.values() for doc_id, text in rows.items()}
    pairs = close_pairs(merged, SPLIT_THRESHOLD)
    crossing = sorted(
        (a, b) for a, b in pairs if where[a] != where[b] and "train" in (where[a], where[b])
    )
    assert crossing == []
    assert len(pairs) >= 20  # the count is live: real similar pairs exist, all on one side


def test_no_near_duplicate_is_kept_twice(real_project) -> None:
    root, _, _ = real_project
    data = root / "data"  # the dedup stage stores no text: the filter's, by doc id
    text_of = filtered_texts(data)
    parts = sorted((data / "deduplicated_documents").glob("part-*"))
    ids = pd.concat(pd.read_parquet(p, columns=["doc_id"]) for p in parts)["doc_id"]
    kept = {doc_id: text_of[doc_id] for doc_id in ids}
    assert sorted(close_pairs(kept, DEDUP_THRESHOLD)) == []


def ngrams_13(text: str) -> set[tuple[str, ...]]:
    """The documented definition, written without the kernels: NFKC, casefold, ``\\w+`` words,
    every run of 13."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    return {tuple(words[i : i + EVAL_NGRAM]) for i in range(len(words) - EVAL_NGRAM + 1)}


def test_decontamination_drops_exactly_the_train_rows_holding_eval_text(real_project) -> None:
    root, _, _ = real_project
    lines = (root / EVAL_SET).read_text(encoding="utf-8").splitlines()
    evaluation = set().union(*(ngrams_13(json.loads(line)["text"]) for line in lines))
    train = stage_texts(root / "data" / "split_documents" / "train")  # normalized: no text
    holding = {doc_id for doc_id, text in train.items() if ngrams_13(text or "") & evaluation}
    dropped = stage_texts(root / "data" / "training_mix" / "contaminated")
    assert set(dropped) == holding and holding  # live: real passages reached the train split
    mixed = stage_texts(root / "data" / "training_mix", root / "data" / "split_documents" / "train")
    assert not any(ngrams_13(text or "") & evaluation for text in mixed.values())
