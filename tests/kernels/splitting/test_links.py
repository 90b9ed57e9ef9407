"""Links through dropped duplicates: memberships of dropped rows and similar pairs with a
dropped end are left out of the component graph's inputs, and counted."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, read_parquet, read_shard, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.splitting.links import links_without_dropped


def test_links_through_dropped_rows_are_left_out_and_counted(tmp_path: Path) -> None:
    clusters, out = tmp_path / "clusters", tmp_path / "out"
    memberships = [
        # cluster c1: a kept, b and c dropped copies by other entities
        [("c1", "a", "A", True), ("c1", "b", "B", False)],
        [("c1", "c", "C", False), ("c2", "d", "D", True), ("c2", "e", "E", True)],  # annotate-like
    ]
    for shard, rows in enumerate(memberships):
        cluster_id, doc_id, entity, kept = zip(*rows, strict=True)
        table = pa.table(
            {"cluster_id": cluster_id, "doc_id": doc_id, "entity": entity, "kept": kept}
        )
        write_parquet(table, part_path(clusters, shard))
    pairs = pa.table(
        {
            "doc_a": ["a", "b", "d"],
            "doc_b": ["x", "y", "e"],
            "entity_a": ["A", "B", "D"],
            "entity_b": ["X", "Y", "E"],
            "similarity": [0.7, 0.65, 0.9],
        }
    )
    write_parquet(pairs, tmp_path / "pairs.parquet")
    kept_clusters, kept_pairs, removed = links_without_dropped(
        clusters, tmp_path / "pairs.parquet", 2, out, LocalEngine()
    )
    assert removed.as_dict() == {"cluster_memberships": 2, "similar_pairs": 1}
    assert read_shard(kept_clusters, 0).column("doc_id").to_pylist() == ["a"]
    assert read_shard(kept_clusters, 1).column("doc_id").to_pylist() == ["d", "e"]
    assert read_parquet(kept_pairs).column("doc_a").to_pylist() == ["a", "d"]
