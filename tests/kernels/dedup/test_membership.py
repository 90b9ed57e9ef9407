"""The membership written on the engine equals the in-memory decisions written by shard."""

import random
from dataclasses import asdict, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.generations import generation_path
from corpus_platform.base.hashing import content_hash
from corpus_platform.base.shards import part_path, write_sharded
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup import (
    DedupParams,
    cluster_to_disk,
    signature_shard,
)
from tests.kernels.dedup.reference_clustering import cluster_documents, cluster_sizes

PARAMS = DedupParams(num_perm=128, shingle_size=5, threshold=0.8, pair_threshold=0.6, seed=1)


def corpus(seed: int) -> dict[str, str]:
    """Bases with exact copies (case and spacing), one- and few-word edits, and texts alone."""
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    for b in range(12):
        words = [f"w{rng.randrange(3000)}" for _ in range(120)]
        docs[f"b{b:02d}"] = " ".join(words)
        for c in range(rng.randint(0, 3)):
            copy = list(words)
            for _ in range(rng.choice([0, 1, 3])):
                copy[rng.randrange(len(copy))] = f"x{rng.randrange(99)}"
            docs[f"b{b:02d}c{c}"] = (" ".join(copy)).upper() if c == 2 else " ".join(copy)
    return docs


def build(root: Path, shards: int, seed: int) -> None:
    rng = random.Random(seed + 1)
    rows = sorted(corpus(seed).items())
    table = pa.table(
        {
            "doc_id": [d for d, _ in rows],
            "entity": [f"e{rng.randrange(8)}" for _ in rows],
            "text": [t for _, t in rows],
            "content_hash": [content_hash(t) for _, t in rows],
            "quality_score": [round(rng.random(), 1) for _ in rows],  # ties by doc id happen
        }
    )
    write_sharded(table, root / "up", shards)
    for shard in range(shards):
        signature_shard(shard, root / "up", root / "scratch", PARAMS)


@pytest.mark.parametrize(
    ("shards", "keep", "mode", "workers"),
    [(1, "quality", "drop", 1), (3, "quality", "annotate", 2), (4, "smallest_id", "drop", 2)],
)
def test_disk_membership_equals_the_in_memory_one(
    tmp_path: Path, shards: int, keep: str, mode: str, workers: int
) -> None:
    params = replace(PARAMS, keep=keep, mode=mode)
    build(tmp_path / "memory", shards, 4)
    reference = cluster_documents(tmp_path / "memory" / "scratch", shards, params)
    write_sharded(reference.membership(mode), tmp_path / "expected", shards)
    build(tmp_path / "disk", shards, 4)
    scratch, pairs = tmp_path / "disk" / "scratch", tmp_path / "similar_pairs.parquet"
    on_disk = cluster_to_disk(
        scratch, shards, params, tmp_path / "got", pairs, engine=LocalEngine(workers)
    )
    for shard in range(shards):
        expected = part_path(tmp_path / "expected", shard).read_bytes()
        assert generation_path(tmp_path / "got", shard, 0).read_bytes() == expected
    assert on_disk.summary.sizes == cluster_sizes(reference.cluster_of)
    assert on_disk.summary.rows_in_clusters == len(reference.cluster_of) > 10
    assert on_disk.similar == len(reference.scored) > 0
    assert pq.read_table(pairs).to_pylist() == [asdict(p) for p in reference.scored]
    assert on_disk.candidates == reference.candidates
    membership = reference.membership(mode)
    largest = on_disk.summary.largest[0]
    members = [r for r in membership.to_pylist() if r["cluster_id"] == largest.cluster_id]
    assert largest.size == len(members) == max(on_disk.summary.sizes)
    assert largest.representative == members[0]["representative"]
    other = min(r["doc_id"] for r in members if r["doc_id"] != largest.representative)
    assert largest.member == other
    kept = [r for r in pq.read_table(tmp_path / "got").to_pylist() if r["kept"]]
    assert (mode == "annotate") == (len(kept) == len(membership))
