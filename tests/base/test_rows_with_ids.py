"""rows_with_ids: a few rows of a shard, read batch by batch."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, rows_with_ids, write_parquet


def test_the_wanted_rows_in_file_order_across_batches(tmp_path: Path) -> None:
    ids = [f"d{i:05d}" for i in range(10_000)]  # more than two 4,096-row batches
    table = pa.table(
        {"doc_id": ids, "text": [f"text {i}" for i in range(10_000)], "n": range(10_000)}
    )
    write_parquet(table, part_path(tmp_path, 0))
    found = rows_with_ids(
        tmp_path, 0, ["d09999", "d00003", "d05000", "missing"], ["doc_id", "text"]
    )
    assert found.column_names == ["doc_id", "text"]
    assert found.to_pylist() == [
        {"doc_id": "d00003", "text": "text 3"},
        {"doc_id": "d05000", "text": "text 5000"},
        {"doc_id": "d09999", "text": "text 9999"},
    ]
    none = rows_with_ids(tmp_path, 0, ["missing"], ["doc_id", "text"])
    assert len(none) == 0 and none.column_names == ["doc_id", "text"]
