"""The held-out neighbour search: candidates from band keys shared across train and a held-out
split, confirmed by exact Jaccard, one shard pair at a time; compared with brute force."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import product
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.hashing import TextNormalization
from corpus_platform.base.shards import write_sharded
from corpus_platform.kernels.dedup import DedupParams, signature_shard
from corpus_platform.kernels.splitting.leakage import held_out_neighbours
from corpus_platform.kernels.splitting.neighbours import (
    held_out_neighbours_from_bands,
    reusable_groups,
    save_band_layout,
)
from tests.kernels.dedup.reference_jaccard import jaccard, shingle_set

PARAMS = DedupParams(num_perm=128, shingle_size=5, threshold=0.8, pair_threshold=0.6, seed=1)


def words(rng: random.Random, n: int = 120) -> list[str]:
    return [f"w{rng.randrange(3000)}" for _ in range(n)]


def write_splits(root: Path, splits: dict[str, dict[str, str]], shards: int) -> None:
    for name, docs in splits.items():
        rows = sorted(docs.items())
        table = pa.table(
            {
                "doc_id": [d for d, _ in rows],
                "entity": [f"e-{d}" for d, _ in rows],
                "text": [t for _, t in rows],
            }
        )
        write_sharded(table, root / name, shards)


def test_punctuation_variants_are_neighbours_under_the_word_tokenizer(tmp_path: Path) -> None:
    base = words(random.Random(3))
    splits = {
        "train": {"t1": " ".join(f"{w}," for w in base)},  # every word followed by a comma
        "test": {"h1": " ".join(base)},
    }
    write_splits(tmp_path, splits, 1)
    report = held_out_neighbours(tmp_path, 1, PARAMS, ("test",), tmp_path / "scratch")
    assert (report.queried, report.hits, report.examples) == (1, 1, ("h1~t1",))
    whitespace = replace(PARAMS, normalization=TextNormalization(tokens="whitespace"))
    report = held_out_neighbours(tmp_path, 1, whitespace, ("test",), tmp_path / "scratch2")
    assert (report.queried, report.hits) == (1, 0)


def _edited(base: list[str], rng: random.Random, changes: int) -> str:
    out = list(base)
    for position in rng.sample(range(len(out)), changes):
        out[position] = f"x{rng.randrange(10**6)}"
    return " ".join(out)


def test_search_finds_what_brute_force_finds(tmp_path: Path) -> None:
    rng = random.Random(11)
    train = {f"t{i:03d}": " ".join(words(rng)) for i in range(120)}
    held: dict[str, dict[str, str]] = {"validation": {}, "test": {}}
    for i in range(60):
        source = train[f"t{rng.randrange(120):03d}"].split()
        split = "validation" if i % 2 else "test"
        # 0 to 30 changed words of 120: Jaccard from 1.0 down to well below 0.6
        held[split][f"h{i:03d}"] = _edited(source, rng, rng.randrange(0, 31))
    held["test"]["h999"] = " ".join(words(rng))  # unrelated
    write_splits(tmp_path, {"train": train, **held}, shards=3)

    report = held_out_neighbours(tmp_path, 3, PARAMS, ("validation", "test"), tmp_path / "scratch")

    sets = {d: shingle_set(t, 5) for docs in (train, *held.values()) for d, t in docs.items()}
    expected = sorted(
        h
        for h, t in product([d for docs in held.values() for d in docs], train)
        if jaccard(sets[h], sets[t]) >= 0.6
    )
    expected = sorted(set(expected))
    assert 10 <= len(expected) < 60  # both outcomes occur
    assert report.queried == 61
    assert report.hits == len(expected)
    assert [e.split("~")[0] for e in report.examples] == expected[:10]
    for example in report.examples:
        held_id, train_id = example.split("~")
        assert jaccard(sets[held_id], sets[train_id]) >= 0.6


def test_reusing_the_dedup_band_keys_finds_what_sketching_afresh_finds(tmp_path: Path) -> None:
    rng = random.Random(5)
    train = {f"t{i:03d}": " ".join(words(rng)) for i in range(80)}
    held: dict[str, dict[str, str]] = {"validation": {}, "test": {}}
    for i in range(40):
        source = train[f"t{rng.randrange(80):03d}"].split()
        held["validation" if i % 2 else "test"][f"h{i:03d}"] = _edited(
            source, rng, rng.randrange(0, 31)
        )
    # what the dedup stage saw: every split row, one row the split dropped, and h000 with the
    # text it had before someone changed it in the split (so its band keys must not be reused)
    seen = {**train, **held["validation"], **held["test"], "gone": " ".join(words(rng))}
    changed = held["test"]["h000"]
    seen["h000"] = " ".join(words(rng))
    # and h998 joins a held-out split without the dedup stage ever seeing it
    held["test"]["h998"] = _edited(train["t001"].split(), rng, 2)
    write_splits(tmp_path / "split", {"train": train, **held}, shards=3)
    write_splits(tmp_path / "filtered", {"all": seen}, shards=3)
    dedup = tmp_path / "dedup"
    for shard in range(3):
        signature_shard(shard, tmp_path / "filtered" / "all", dedup, PARAMS)
    save_band_layout(dedup / "bands", PARAMS, 3)
    groups = reusable_groups(dedup / "bands", PARAMS, 3)
    assert groups is not None and reusable_groups(dedup / "bands", PARAMS, 4) is None
    assert reusable_groups(dedup / "bands", replace(PARAMS, seed=2), 3) is None

    split = tmp_path / "split"
    fresh = held_out_neighbours(split, 3, PARAMS, ("validation", "test"), tmp_path / "s1")
    reused, sketched = held_out_neighbours_from_bands(
        split, 3, PARAMS, ("validation", "test"), dedup, groups, tmp_path / "s2"
    )
    assert sketched == 2  # h000 (text changed) and h998 (never sketched by dedup)
    assert reused == fresh and reused.queried == 41 and 5 <= reused.hits < 41
    assert held["test"]["h000"] == changed
    assert "h998~t001" in reused.examples  # found although dedup never sketched it
