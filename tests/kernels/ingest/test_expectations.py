"""The Great Expectations suite, validated shard after shard in one context and process."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.ingest.expectations import (
    build_suite,
    text_as_lengths,
    validate,
    validate_shard,
)

FEATURES = ("clicks",)


def _shard(rows: int, start: int = 0) -> pa.Table:
    ids = [f"doc-{start + i}" for i in range(rows)]
    return pa.table(
        {
            "doc_id": ids,
            "text": [f"text of {d}" for d in ids],
            "source": ["web"] * rows,
            "entity": [f"user-{i % 7}" for i in range(rows)],
            "timestamp": pa.array(range(rows), pa.int64()),
            "clicks": pa.array([float(i % 5) for i in range(rows)], pa.float64()),
            "label": pa.array([float(i % 2) for i in range(rows)], pa.float64()),
            "content_hash": [f"{i:032x}" for i in range(rows)],
            "raw_file": ["web/a.jsonl"] * rows,
            "raw_row": pa.array(range(1, rows + 1), pa.int64()),
        }
    )


def test_each_shard_is_judged_on_its_own_rows() -> None:
    suite = build_suite(FEATURES, {"clicks": (0.0, 4.0)})
    good = _shard(500)
    repeated = good.set_column(
        0, "doc_id", pa.array(["doc-1"] * 3 + good["doc_id"].to_pylist()[3:])
    )
    entities = good["entity"].to_pylist()
    missing = good.set_column(3, "entity", pa.array([None, *entities[1:]], pa.string()))
    assert validate(good, suite) == []
    found = validate(repeated, suite)
    assert [(f.expectation, f.column, f.unexpected) for f in found] == [
        ("expect_column_values_to_be_unique", "doc_id", 3)
    ]
    assert found[0].examples == ("web/a.jsonl row 1", "web/a.jsonl row 2", "web/a.jsonl row 3")
    assert validate(_shard(500, start=1000), suite) == []
    found = validate(missing, suite)
    assert [(f.expectation, f.column, f.unexpected) for f in found] == [
        ("expect_column_values_to_not_be_null", "entity", 1)
    ]
    assert validate(good, suite) == []


def test_a_shard_is_validated_with_its_texts_lengths_and_a_missing_text_column_fails(
    tmp_path: Path,
) -> None:
    """validate_shard hands the suite the texts' lengths (no expectation reads a text): a
    shard whose text column is gone still fails the suite, one with text passes."""
    good = _shard(50)
    lengths = text_as_lengths(good)
    assert lengths.column_names == good.column_names
    assert lengths["text"].to_pylist() == [len(t.encode()) for t in good["text"].to_pylist()]
    assert lengths.drop_columns(["text"]).equals(good.drop_columns(["text"]))
    write_parquet(good, part_path(tmp_path / "good", 0))
    write_parquet(good.drop_columns(["text"]), part_path(tmp_path / "textless", 0))
    ranges = {"clicks": (0.0, 4.0)}
    assert validate_shard(0, tmp_path / "good", FEATURES, ranges)[1] == []
    _, failures = validate_shard(0, tmp_path / "textless", FEATURES, ranges)
    assert failures == ["shard 0: expect_column_to_exist(text)"]
