"""The Great Expectations suite, validated shard after shard in one context and process."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import batch_part_path, part_path, write_parquet
from corpus_platform.kernels.ingest.expectations import (
    build_suite,
    read_for_suite,
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


def test_the_suite_asks_of_the_text_only_that_it_exists() -> None:
    """validate_shard reads no text (read_for_suite): that holds only while no expectation but
    the column's existence names the text; one that reads texts must make it read them."""
    suite = build_suite(FEATURES, {"clicks": (0.0, 4.0)})
    on_text = [e for e in suite.expectations if getattr(e, "column", None) == "text"]
    assert [e.expectation_type for e in on_text] == ["expect_column_to_exist"]


def test_a_shard_is_validated_without_its_texts_and_a_missing_text_column_fails(
    tmp_path: Path,
) -> None:
    """read_for_suite hands the suite every column but the text, and a marker where the files
    hold a text column, in the files' column order (batch files concatenated, a column only a
    later file has null before it): a shard whose text column is gone still fails the suite,
    one with text passes, and only the named batches' rows are validated."""
    good = _shard(50)
    write_parquet(good.slice(0, 20), batch_part_path(tmp_path / "good", 0, "a"))
    later = good.slice(20).append_column("extra", pa.array([1.0] * 30))
    write_parquet(later, batch_part_path(tmp_path / "good", 0, "b"))
    read = read_for_suite([part_path(tmp_path / "good", 0)])
    assert read.column_names == [*good.column_names, "extra"]
    assert read["text"].to_pylist() == [1] * 50
    assert read.drop_columns(["text", "extra"]).equals(good.drop_columns(["text"]))
    assert read["extra"].to_pylist() == [None] * 20 + [1.0] * 30
    only_b = read_for_suite([batch_part_path(tmp_path / "good", 0, "b")])
    assert only_b["doc_id"].to_pylist() == good["doc_id"].to_pylist()[20:]
    assert len(read_for_suite([part_path(tmp_path / "good", 0)], rows=False)) == 0
    write_parquet(good.drop_columns(["text"]), part_path(tmp_path / "textless", 0))
    assert "text" not in read_for_suite([part_path(tmp_path / "textless", 0)]).column_names
    ranges = {"clicks": (0.0, 4.0)}
    assert validate_shard(0, tmp_path / "good", FEATURES, ranges)[1] == []
    assert validate_shard(0, tmp_path / "good", FEATURES, ranges, batches=("b",))[1] == []
    _, failures = validate_shard(0, tmp_path / "textless", FEATURES, ranges)
    assert failures == ["shard 0: expect_column_to_exist(text)"]
