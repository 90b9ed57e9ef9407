"""The dedup check's kernel: which similar pairs survive as two rows."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.dedup.audit import kept_duplicate_pairs

ROWS = [  # two shards of published rows: doc_id, cluster_id (None: in no cluster)
    [("a", "k1"), ("b", "k1"), ("c", "k2")],
    [("d", None), ("e", None), ("f", "k3")],
]
PAIRS = [  # doc_a, doc_b, similarity
    ("a", "b", 0.9),  # same cluster
    ("a", "c", 0.85),  # two clusters
    ("d", "e", 0.95),  # neither in a cluster
    ("f", "d", 0.8),  # one in a cluster, one not
    ("a", "gone", 0.99),  # one row dropped
    ("c", "f", 0.5),  # under the threshold
]


def audit(root: Path, mode: str) -> tuple[int, int, list[str]]:
    for shard, rows in enumerate(ROWS):
        doc_id, cluster_id = zip(*rows, strict=True)
        table = pa.table({"doc_id": doc_id, "cluster_id": pa.array(cluster_id, pa.string())})
        write_parquet(table, part_path(root, shard))
    doc_a, doc_b, similarity = zip(*PAIRS, strict=True)
    pairs = pa.table({"doc_a": doc_a, "doc_b": doc_b, "similarity": similarity})
    write_parquet(pairs, root / "pairs.parquet")
    return kept_duplicate_pairs(0, root / "pairs.parquet", root, 2, 0.8, mode)


def test_drop_mode_flags_every_pair_whose_two_rows_are_published(tmp_path: Path) -> None:
    assert audit(tmp_path, "drop") == (5, 4, ["a~b", "a~c", "d~e", "f~d"])


def test_annotate_mode_flags_pairs_under_different_cluster_ids(tmp_path: Path) -> None:
    # a pair in no cluster at all is two rows with the same (missing) id, as before
    assert audit(tmp_path, "annotate") == (5, 2, ["a~c", "f~d"])
