"""The split's links for held-out neighbours: rows read from their own shard of any split by
engine tasks (worker processes here), entities and exact Jaccard as computed in one process."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.defs.splitting.neighbour_search import neighbour_links
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.dedup.minhash import shingle_sets
from corpus_platform.kernels.dedup.verify import sorted_jaccard

SHARDS = 3
BASE = "the licence grants every person a copy of this software free of charge and without " * 3


def write_split(root: Path) -> dict[str, tuple[str, str]]:
    """Twelve rows over three splits and three shards; each split shard file written, empty or
    not. Returns doc_id -> (entity, text)."""
    rows = {
        f"doc-{i:02d}": (f"user-{i % 5}", f"{BASE} variant {i} " + "word " * (i % 4))
        for i in range(12)
    }
    for index, name in enumerate(SPLITS):
        mine = [d for i, d in enumerate(sorted(rows)) if i % len(SPLITS) == index]
        for shard in range(SHARDS):
            ids = [d for d in mine if shard_of(d, SHARDS) == shard]
            table = pa.table(
                {
                    "doc_id": pa.array(ids, pa.string()),
                    "entity": pa.array([rows[d][0] for d in ids], pa.string()),
                    "text": pa.array([rows[d][1] for d in ids], pa.string()),
                }
            )
            write_parquet(table, part_path(root / name, shard))
    return rows


def test_rows_come_from_their_shards_through_worker_processes(tmp_path: Path) -> None:
    rows = write_split(tmp_path)
    params = DedupParams(128, 5, 0.8, 0.6, 0)
    pairs = [("doc-01", "doc-00"), ("doc-05", "doc-03"), ("doc-11", "doc-09")]
    table = neighbour_links(tmp_path, SHARDS, pairs, params, LocalEngine(2))
    ordered = sorted((min(a, b), max(a, b)) for a, b in pairs)
    assert list(zip(table["doc_a"].to_pylist(), table["doc_b"].to_pylist(), strict=True)) == (
        ordered
    )
    assert table["entity_a"].to_pylist() == [rows[a][0] for a, _ in ordered]
    assert table["entity_b"].to_pylist() == [rows[b][0] for _, b in ordered]
    for (a, b), similarity in zip(ordered, table["similarity"].to_pylist(), strict=True):
        sets = shingle_sets([rows[a][1], rows[b][1]], params.shingle_size, params.normalization)
        assert similarity == sorted_jaccard(sets.row(0), sets.row(1))
        assert 0.0 < similarity < 1.0
