"""Dedup of an append: new rows against each other and the published index, with known answers.

A base of published clusters and singletons is built from scratch (generation 0); a batch of
new rows, each planted for one case, is appended as generation 1. Every decision is checked, the
published files are byte for byte what they were, and the new similar pairs are those an exact
Jaccard over every new-vs-any pair finds.
"""

import random
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.generations import generation_path, link_published
from corpus_platform.base.hashing import content_hash, shard_of
from corpus_platform.base.names import SIMILAR_PAIRS
from corpus_platform.base.shards import batch_part_path, read_parquet, read_shard, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup import (
    DedupParams,
    cluster_to_disk,
    signature_shard,
    write_dedup_shard,
)
from corpus_platform.kernels.dedup.append import append_to_disk
from corpus_platform.kernels.dedup.index import INDEX, index_bytes, write_index_shard
from tests.conftest import tree_digest
from tests.kernels.dedup.reference_jaccard import jaccard, shingle_set

PARAMS = DedupParams(num_perm=128, shingle_size=5, threshold=0.8, pair_threshold=0.6, seed=1)
SHARDS = 2


def words(rng: random.Random, n: int = 150) -> list[str]:
    return [f"w{rng.randrange(50_000)}" for _ in range(n)]


def edited(base: list[str], positions: list[int]) -> str:
    """``base`` with the words at ``positions`` replaced (each one changes 5 word 5-grams)."""
    out = list(base)
    for p in positions:
        out[p] = f"edit{p}"
    return " ".join(out)


def planted() -> tuple[dict[str, str], dict[str, str]]:
    """(published rows, new rows): ids b* and n*, each new row one case of the module."""
    rng = random.Random(7)
    a, b, c, e, f = (words(rng) for _ in range(5))
    base = {
        "b1": " ".join(a),
        "b2": edited(a, [75]),  # a near-duplicate of b1 (J ~ 0.94): one published cluster
        "b3": " ".join(b),
        "b4": " ".join(c),
        "b5": edited(c, [20, 45, 70, 95, 120, 140]),  # similar to b4 (J ~ 0.66), no duplicate
        "b6": " ".join(e),
    }
    new = {
        "n1": "  " + " ".join(a).upper(),  # an exact copy of b1, a dropped member
        "n2": edited(b, [30]),  # a near-duplicate of b3, a published row in no cluster
        "n3": " ".join(f),
        "n4": edited(f, [60]),  # n3 and n4: a new cluster of new rows
        "n5": edited(c, [20, 45, 70]),  # J ~ 0.81 with both b4 and b5: touches two clusters
        "n6": " ".join(words(rng)),  # nothing like it
        "n7": edited(e, [20, 50, 80, 110, 140]),  # similar to b6 (J ~ 0.7): a pair, no duplicate
    }
    return base, new


QUALITY = {"b2": 0.9, "n4": 0.9}


def write_batch(folder: Path, docs: dict[str, str], batch: str) -> None:
    """Rows as one raw batch's files of a filtered_documents-like folder (a file per shard)."""
    rows = sorted(docs.items())
    table = pa.table(
        {
            "doc_id": [d for d, _ in rows],
            "entity": [f"e-{d}" for d, _ in rows],
            "text": [t for _, t in rows],
            "content_hash": [content_hash(t) for _, t in rows],
            "quality_score": [QUALITY.get(d, 0.5) for d, _ in rows],
        }
    )
    owners = [shard_of(d, SHARDS) for d, _ in rows]
    for shard in range(SHARDS):
        mine = pa.array([o == shard for o in owners])
        write_parquet(table.filter(mine), batch_part_path(folder, shard, batch))


def build_base(root: Path) -> Path:
    """Generation 0 of the stage from the base rows, as a build from scratch writes it."""
    upstream, published, scratch = root / "filtered", root / "published", root / "scratch0"
    for shard in range(SHARDS):
        signature_shard(shard, upstream, scratch, PARAMS)
        write_index_shard(shard, scratch, published / INDEX, PARAMS, 0)
    pairs = published / SIMILAR_PAIRS / "g00000.parquet"
    cluster_to_disk(scratch, SHARDS, PARAMS, published / "clusters", pairs)
    for shard in range(SHARDS):
        write_dedup_shard(shard, upstream, published, PARAMS.mode)
    return published


@pytest.fixture(scope="module")
def appended(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("append")
    base, new = planted()
    write_batch(root / "filtered", base, "base")
    published = build_base(root)
    before = tree_digest(published)
    write_batch(root / "filtered", new, "later")
    staging = root / "staging"
    link_published(published, staging)
    found = append_to_disk(
        root / "filtered",
        ("later",),
        published,
        staging,
        root / "scratch1",
        PARAMS,
        SHARDS,
        1,
        LocalEngine(),
    )
    assert found.rows_in == len(new)
    return root, before


def membership(folder: Path) -> dict[str, dict]:
    rows = [r for s in range(SHARDS) for r in read_shard(folder / "clusters", s).to_pylist()]
    return {r["doc_id"]: r for r in rows}


def kept_rows(folder: Path) -> dict[str, str]:
    tables = [read_shard(folder, s, ["doc_id", "cluster_id"]) for s in range(SHARDS)]
    rows = [r for t in tables for r in t.to_pylist()]
    return {r["doc_id"]: r["cluster_id"] for r in rows}


def test_the_published_files_are_untouched(appended) -> None:
    root, before = appended
    assert tree_digest(root / "published") == before
    for path in (root / "published").rglob("*.parquet"):  # every one is in the new snapshot too
        if path.is_file():
            relative = path.relative_to(root / "published")
            assert (root / "staging" / relative).read_bytes() == path.read_bytes()


def test_every_case_is_decided_as_planted(appended) -> None:
    root, _ = appended
    members, kept = membership(root / "staging"), kept_rows(root / "staging")
    # n1 copies a dropped member of the published cluster b1: it joins it, b2 stays kept
    assert (members["n1"]["cluster_id"], members["n1"]["representative"]) == ("b1", "b2")
    assert not members["n1"]["kept"] and kept["b2"] == "b1" and "b1" not in kept
    # n2 near-duplicates b3, in no cluster before: b3 is listed now, as the cluster's kept row
    assert (members["n2"]["cluster_id"], members["n2"]["kept"]) == ("b3", False)
    assert (members["b3"]["cluster_id"], members["b3"]["kept"]) == ("b3", True)
    assert kept["b3"] == "b3"
    # n3 and n4 form a new cluster named by its smallest id, kept by quality
    assert {members[d]["cluster_id"] for d in ("n3", "n4")} == {"n3"}
    assert kept.get("n4") == "n3" and "n3" not in kept
    # n5 touches the clusters of b4 and b5: it joins the smaller, which are never merged
    assert (members["n5"]["cluster_id"], members["n5"]["kept"]) == ("b4", False)
    assert kept["b4"] == "b4" and kept["b5"] == "b5"
    # n6 and n7 are nobody's duplicates
    assert kept["n6"] == "n6" and kept["n7"] == "n7" and "n6" not in members
    rows = read_parquet(generation_path(root / "staging", 0, 1)).column("doc_id").to_pylist()
    assert set(rows) <= {"n4", "n6", "n7"}  # generation 1 holds new rows only


def test_new_pairs_are_every_pair_with_a_new_row_at_the_split_threshold(appended) -> None:
    root, _ = appended
    base, new = planted()
    every = {**base, **new}
    sets = {d: shingle_set(t, PARAMS.shingle_size) for d, t in every.items()}
    expected = {
        (min(a, b), max(a, b)): jaccard(sets[a], sets[b])
        for a in new
        for b in every
        if a != b and jaccard(sets[a], sets[b]) >= PARAMS.pair_threshold
    }
    table = read_parquet(root / "staging" / SIMILAR_PAIRS / "g00001.parquet")
    columns = (table[c].to_pylist() for c in ("doc_a", "doc_b", "similarity"))
    found = {(a, b): s for a, b, s in zip(*columns, strict=True)}
    assert found == pytest.approx(expected)
    assert ("b6", "n7") in found and found[("b6", "n7")] < PARAMS.threshold
    assert not any(a.startswith("b") and b.startswith("b") for a, b in found)


def test_the_index_holds_every_row_with_its_band_keys(appended) -> None:
    root, _ = appended
    base, new = planted()
    tables = [read_shard(root / "staging" / INDEX, s) for s in range(SHARDS)]
    assert sorted(d for t in tables for d in t["doc_id"].to_pylist()) == sorted({**base, **new})
    bands = PARAMS.bands[0]
    assert all(len(keys) == bands for t in tables for keys in t["bands"].to_pylist())
    assert index_bytes(root / "staging" / INDEX, SHARDS) > 0
