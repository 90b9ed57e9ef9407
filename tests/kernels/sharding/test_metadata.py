"""A sample's metadata JSON, converted column by column, equals the row-by-row definition."""

import json
import math
from datetime import UTC, date, datetime

import pyarrow as pa

from corpus_platform.kernels.sharding.metadata import metadata_json, metadata_jsons


def _every_kind() -> pa.Table:
    moment = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    return pa.table(
        {
            "key": ["doc-1-0", "dóc-2-0", 'd"3\\-1', "文書-4-0"],
            "draw": pa.array([0, 0, 1, 0], pa.int32()),
            "big": pa.array([2**62, -1, None, 0], pa.int64()),
            "score": [1.5, float("nan"), float("inf"), None],
            "neg": [-float("inf"), 0.1 + 0.2, -0.0, 1e300],
            "when": pa.array([moment, None, moment, moment], pa.timestamp("us", tz="UTC")),
            "day": pa.array([date(2020, 1, 1), None, date(1999, 12, 31), date(2020, 1, 2)]),
            "flag": [True, False, None, True],
            "nothing": pa.nulls(4),
            "tags": [["a", "b"], [], None, ["é"]],
            "floats": [[1.0, float("nan")], [float("-inf")], None, []],
            "blob": pa.array([b"\x00\xff", None, b"", b"abc"], pa.binary()),
            "nested": [
                {"x": 1.0, "y": "z"},
                {"x": float("nan"), "y": None},
                None,
                {"x": 2.5, "y": ""},
            ],
            "long_text": pa.array(["x" * 300, None, "line\nbreak\ttab", ""], pa.large_string()),
        }
    )


def test_column_by_column_equals_row_by_row_for_every_kind_of_column() -> None:
    table = _every_kind()
    expected = [metadata_json(row) for row in table.to_pylist()]
    assert metadata_jsons(table) == expected
    first = json.loads(expected[1])
    assert first["score"] is None and first["nested"] == {"x": None, "y": None}  # NaN -> null
    assert json.loads(expected[0])["when"] == "2024-02-29T23:59:58.123456+00:00"
    assert json.loads(expected[0])["blob"] == "00ff"
    assert json.loads(expected[0])["neg"] is None  # -inf -> null
    assert (
        json.loads(expected[2])["neg"] == 0.0
        and math.copysign(1, json.loads(expected[2])["neg"]) < 0
    )


def test_a_table_sliced_reordered_or_without_columns_gives_the_same_bytes() -> None:
    table = _every_kind()
    for part in (table.slice(1, 2), table.select(["score", "key", "tags"]), table.slice(4)):
        assert metadata_jsons(part) == [metadata_json(row) for row in part.to_pylist()]
    assert metadata_jsons(table.select([])) == [b"{}"] * 4  # rows without a column
