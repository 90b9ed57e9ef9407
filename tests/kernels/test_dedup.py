"""Dedup kernels: hand-built clusters with known answers."""

import random
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.kernels.dedup import (
    DedupParams,
    ScoredPair,
    build_clusters,
    candidate_pairs,
    exact_duplicate_groups,
    membership_table,
    score_pairs,
    shingles,
    signature_shard,
    write_dedup_shard,
)
from corpus_platform.kernels.hashing import content_hash
from corpus_platform.store.datasets import read_shard, write_parquet

PARAMS = DedupParams(num_perm=128, shingle_size=5, threshold=0.8, pair_threshold=0.6, seed=1)


def text(rng: random.Random, n: int = 150) -> str:
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n))


def edit(base: str, positions: list[int]) -> str:
    words = base.split()
    for p in positions:
        words[p] = "changed" + str(p)
    return " ".join(words)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    rng = random.Random(0)
    base, other = text(rng), text(rng)
    docs = {
        "d1": base,
        "d0": "  " + base.upper(),  # exact duplicate after normalization
        "d2": edit(base, [20]),  # near duplicate, J ~ 0.93
        "d3": edit(base, [10, 40, 70, 100, 130]),  # similar, J ~ 0.7: a split link, not a dup
        "d4": other,
        "d5": text(rng),
    }
    rows = sorted(docs.items())
    table = pa.table(
        {
            "doc_id": [d for d, _ in rows],
            "entity": [f"e-{d}" for d, _ in rows],
            "text": [t for _, t in rows],
            "content_hash": [content_hash(t) for _, t in rows],
        }
    )
    write_parquet(table, tmp_path / "up" / "part-00000.parquet")
    return tmp_path


def test_shingles() -> None:
    assert shingles("A b c", 5) == [b"a b c"]
    assert len(shingles("one two three four five six", 5)) == 2


def test_planted_clusters_are_found_and_named_by_smallest_id(corpus: Path) -> None:
    signature_shard(0, corpus / "up", corpus / "scratch", PARAMS)
    scored = score_pairs(candidate_pairs(corpus / "scratch", 1), corpus / "up", 1, 5)
    exact = exact_duplicate_groups(corpus / "scratch", 1)
    assert exact == [["d0", "d1"]]
    clusters = build_clusters(exact, scored, PARAMS.threshold)
    assert clusters.cluster_of == {"d0": "d0", "d1": "d0", "d2": "d0"}
    assert clusters.dropped() == {"d1", "d2"}
    similar = {(p.doc_a, p.doc_b) for p in scored if p.similarity >= PARAMS.pair_threshold}
    assert ("d1", "d3") in similar  # the split must see the moderately similar row
    assert not any("d4" in pair or "d5" in pair for pair in similar)
    entity_of = {d: f"e-{d}" for d in clusters.cluster_of}
    membership = membership_table(clusters, "drop", entity_of).to_pylist()
    assert [(m["doc_id"], m["kept"]) for m in membership] == [
        ("d0", True),
        ("d1", False),
        ("d2", False),
    ]


def test_drop_and_annotate_modes(corpus: Path) -> None:
    cluster_of = {"d0": "d0", "d1": "d0", "d2": "d0"}
    write_dedup_shard(0, corpus / "up", corpus / "drop", cluster_of, "drop")
    write_dedup_shard(0, corpus / "up", corpus / "annotate", cluster_of, "annotate")
    dropped = read_shard(corpus / "drop", 0)
    annotated = read_shard(corpus / "annotate", 0)
    assert dropped.column("doc_id").to_pylist() == ["d0", "d3", "d4", "d5"]
    assert len(annotated) == 6
    assert annotated.column("cluster_id").to_pylist()[:3] == ["d0", "d0", "d0"]


def test_cluster_names_do_not_depend_on_pair_order() -> None:
    pairs = [ScoredPair("b", "c", "x", "y", 0.9), ScoredPair("a", "c", "x", "y", 0.85)]
    forward = build_clusters([], pairs, 0.8).cluster_of
    backward = build_clusters([], list(reversed(pairs)), 0.8).cluster_of
    assert forward == backward == {"a": "a", "b": "a", "c": "a"}


def test_params_validate() -> None:
    with pytest.raises(ValueError, match="pair_threshold"):
        DedupParams(num_perm=64, shingle_size=5, threshold=0.5, pair_threshold=0.7, seed=1)


def test_pairs_are_scored_by_exact_jaccard(corpus: Path) -> None:
    from corpus_platform.kernels.dedup import jaccard, shingle_set

    signature_shard(0, corpus / "up", corpus / "scratch", PARAMS)
    scored = score_pairs(candidate_pairs(corpus / "scratch", 1), corpus / "up", 1, 5)
    texts = dict(
        zip(
            *(read_shard(corpus / "up", 0).column(c).to_pylist() for c in ("doc_id", "text")),
            strict=True,
        )
    )
    for pair in scored:
        exact = jaccard(shingle_set(texts[pair.doc_a], 5), shingle_set(texts[pair.doc_b], 5))
        assert pair.similarity == exact
    assert PARAMS.lsh_threshold == pytest.approx(0.5)


def test_tabular_rows_deduplicate_on_configured_columns(tmp_path: Path) -> None:
    from dataclasses import replace

    table = pa.table(
        {
            "doc_id": ["e1", "e2", "e3", "e4"],
            "entity": ["u1", "u1", "u1", "u2"],
            "text": pa.nulls(4, pa.string()),
            "content_hash": [content_hash(None)] * 4,
            "price": [9.5, 9.5, 3.0, 9.5],
        }
    )
    write_parquet(table, tmp_path / "up" / "part-00000.parquet")
    tabular = replace(PARAMS, columns=("entity", "price"))
    signature_shard(0, tmp_path / "up", tmp_path / "with", tabular)
    assert exact_duplicate_groups(tmp_path / "with", 1) == [["e1", "e2"]]
    signature_shard(0, tmp_path / "up", tmp_path / "without", PARAMS)
    assert exact_duplicate_groups(tmp_path / "without", 1) == []
