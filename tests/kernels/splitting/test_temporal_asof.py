"""Temporal cutoffs (ties by doc_id, gaps) and as-of features (strictly earlier rows only)."""

import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.hashing import shard_of
from corpus_platform.base.shards import part_path, read_shard, write_parquet
from corpus_platform.config import AsofFeature
from corpus_platform.kernels.splitting import asof
from corpus_platform.kernels.splitting.temporal import (
    EMBARGO,
    MICROS_PER_DAY,
    Cutoffs,
    TemporalError,
    check_order,
    quantile_cutoffs,
)

RATIOS = {"train": 0.6, "validation": 0.2, "test": 0.2}
DAY = MICROS_PER_DAY


def timed(rows: list[tuple[str, int]], entity: str = "e", value: float = 1.0) -> pa.Table:
    return pa.table(
        {
            "doc_id": [d for d, _ in rows],
            "entity": [entity] * len(rows),
            "timestamp": pa.array([t for _, t in rows], pa.timestamp("us", tz="UTC")),
            "x": [value] * len(rows),
        }
    )


def test_cutoffs_break_timestamp_ties_by_doc_id(tmp_path: Path) -> None:
    rows = [(f"d{i}", 100 * DAY) for i in range(10)]  # every row at the same instant
    write_parquet(timed(rows[:5]), part_path(tmp_path, 0))
    write_parquet(timed(rows[5:]), part_path(tmp_path, 1))
    cutoffs = quantile_cutoffs(tmp_path, 2, RATIOS, gap_days=0)
    assert cutoffs.validation == (100 * DAY, "d6") and cutoffs.test == (100 * DAY, "d8")
    windows = [cutoffs.window_of(100 * DAY, f"d{i}") for i in range(10)]
    assert windows == ["train"] * 6 + ["validation"] * 2 + ["test"] * 2


def test_quantiles_with_many_distinct_times(tmp_path: Path) -> None:
    rng = random.Random(0)
    rows = [(f"d{i:04d}", rng.randrange(0, 1000 * DAY)) for i in range(1000)]
    write_parquet(timed(rows), part_path(tmp_path, 0))
    cutoffs = quantile_cutoffs(tmp_path, 1, RATIOS, 0)
    keys = sorted((t, d) for d, t in rows)
    assert cutoffs.validation == keys[600] and cutoffs.test == keys[800]


def test_gap_drops_rows_just_before_each_window() -> None:
    cutoffs = Cutoffs(validation=(10 * DAY, ""), test=(20 * DAY, ""), gap=2 * DAY)
    assert cutoffs.window_of(7 * DAY, "a") == "train"
    assert cutoffs.window_of(9 * DAY, "a") == EMBARGO
    assert cutoffs.window_of(10 * DAY, "a") == "validation"
    assert cutoffs.window_of(19 * DAY, "a") == EMBARGO
    assert cutoffs.window_of(20 * DAY, "a") == "test"


def test_missing_timestamp_is_named(tmp_path: Path) -> None:
    table = timed([("a", DAY)]).set_column(
        2, "timestamp", pa.nulls(1, pa.timestamp("us", tz="UTC"))
    )
    write_parquet(table, part_path(tmp_path, 0))
    with pytest.raises(TemporalError, match="first: doc_id 'a'"):
        quantile_cutoffs(tmp_path, 1, RATIOS, 0)


def test_order_check_catches_time_running_backwards(tmp_path: Path) -> None:
    write_parquet(timed([("a", 1 * DAY), ("b", 5 * DAY)]), part_path(tmp_path / "train", 0))
    write_parquet(timed([("c", 6 * DAY)]), part_path(tmp_path / "validation", 0))
    write_parquet(timed([("d", 9 * DAY)]), part_path(tmp_path / "test", 0))
    assert check_order(tmp_path, 1, gap=0).passed
    assert not check_order(tmp_path, 1, gap=2 * DAY).passed  # 5 + 2 days is not before day 6
    write_parquet(timed([("d", 4 * DAY)]), part_path(tmp_path / "test", 0))
    report = check_order(tmp_path, 1, gap=0)
    assert not report.passed and "train ends at" in report.violations[0]


def test_window_aggregate_sees_only_strictly_earlier_rows() -> None:
    times = np.array([0, 5, 5, 12, 40]) * DAY
    values = np.array([1.0, 3.0, 5.0, np.nan, 7.0])
    mean = asof.window_aggregate(times, values, 10 * DAY, "mean")
    assert np.isnan(mean[0])  # nothing before the first row
    assert mean[1] == 1.0 and mean[2] == 1.0  # the tie at day 5 is not "earlier"
    assert mean[3] == 4.0  # days 5 and 5 (day 0 is out of the 10-day window)
    assert np.isnan(mean[4])
    assert asof.window_aggregate(times, values, 10 * DAY, "count").tolist() == [0, 1, 1, 2, 0]


def test_streaming_passes_equal_brute_force(tmp_path: Path) -> None:
    rng = random.Random(1)
    rows = []
    for i in range(600):
        when = datetime.fromtimestamp(rng.randrange(0, 90 * 86400), UTC)
        rows.append(
            {
                "doc_id": f"d{i:04d}",
                "entity": f"u{rng.randrange(25)}",
                "timestamp": when,
                "x": rng.random(),
            }
        )
    table = pa.Table.from_pylist(rows).sort_by("doc_id")
    table = table.set_column(
        2, "timestamp", table.column("timestamp").cast(pa.timestamp("us", tz="UTC"))
    )
    for shard in range(3):
        mask = pa.array([shard_of(d, 3) == shard for d in table.column("doc_id").to_pylist()])
        write_parquet(table.filter(mask), part_path(tmp_path / "up", shard))
    features = (AsofFeature(name="x_mean_7d", column="x", agg="mean", window_days=7),)
    scratch = tmp_path / "scratch"
    for shard in range(3):
        asof.spill_by_entity(shard, tmp_path / "up", scratch, features, 3)
    for shard in range(3):
        asof.compute_entity_shard(shard, scratch, features, 3)
    for shard in range(3):
        write_parquet(
            asof.asof_columns(shard, scratch, read_shard(tmp_path / "up", shard), features),
            part_path(tmp_path / "out", shard),
        )
    checked, mismatches = asof.sample_check(
        [tmp_path / "out"], tmp_path / "up", 3, features, lambda d: 0.0, 10_000
    )
    assert checked == 600 and mismatches == []
    # a planted future leak is caught
    out = read_shard(tmp_path / "out", 0)
    values = out.column("x_mean_7d").to_pylist()
    values[3] = 123.0
    write_parquet(
        out.set_column(
            out.schema.get_field_index("x_mean_7d"), "x_mean_7d", pa.array(values, pa.float64())
        ),
        part_path(tmp_path / "out", 0),
    )
    _, mismatches = asof.sample_check(
        [tmp_path / "out"], tmp_path / "up", 3, features, lambda d: 0.0, 10_000
    )
    assert len(mismatches) == 1 and "stored 123.0" in mismatches[0]
    # a sample of 50 rows meets the planted row only when it ranks among the 50 lowest
    planted = out.column("doc_id")[3].as_py()

    def ranked_first(doc_id: str) -> float:
        return 0.0 if doc_id == planted else 0.5

    def ranked_last(doc_id: str) -> float:
        return 1.0 if doc_id == planted else 0.5

    for rank, found in ((ranked_first, 1), (ranked_last, 0)):
        checked, mismatches = asof.sample_check(
            [tmp_path / "out"], tmp_path / "up", 3, features, rank, 50
        )
        assert checked == 50 and len(mismatches) == found
