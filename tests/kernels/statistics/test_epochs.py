"""Statistics epochs: the fit's rows, the view of them in today's train split, and the
population stability index of rows added since, counted by hand."""

import math
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, read_shard, write_parquet
from corpus_platform.kernels.statistics.epochs import (
    changed_fitted_rows,
    fit_view_shard,
    new_row_histograms,
    psi,
    with_outer_bins,
    write_fitted_ids,
)


def write_train(folder: Path, ids: list[str], clicks: list[float]) -> None:
    write_parquet(pa.table({"doc_id": ids, "clicks": clicks}), part_path(folder, 0))


def test_psi_is_zero_for_equal_shares_and_matches_a_hand_count() -> None:
    assert psi([10, 20, 30], [1, 2, 3]) == 0.0
    e, a = [0.5, 0.5], [0.9, 0.1]
    expected = sum((y - x) * math.log(y / x) for x, y in zip(e, a, strict=True))
    assert math.isclose(psi([50, 50], [90, 10]), expected)
    assert psi([0, 10, 0], [5, 5, 0]) > 1.0  # half the new rows below the fitted range
    assert psi([1, 2], [0, 0]) == 0.0  # nothing to compare


def test_the_fit_view_keeps_fitted_rows_and_counts_the_ones_gone(tmp_path: Path) -> None:
    train, fitted, view = tmp_path / "train", tmp_path / "fitted", tmp_path / "view"
    write_train(train, ["a", "b", "c"], [1.0, 2.0, 3.0])
    assert write_fitted_ids(0, train, fitted) == 3
    write_train(train, ["a", "c", "d", "e"], [1.0, 3.0, 4.0, 50.0])  # b left, d and e came
    assert fit_view_shard(0, train, fitted, view) == (2, 1)
    assert read_shard(view, 0).column("doc_id").to_pylist() == ["a", "c"]
    rows, counts = new_row_histograms(0, train, fitted, {"clicks": [1.0, 2.0, 3.0]})
    assert rows == 2 and counts == {"clicks": [0, 0, 0, 2]}  # 4.0 and 50.0 above the range
    assert with_outer_bins([3, 4]) == [0, 3, 4, 0]


def test_a_fitted_row_whose_value_changed_or_left_is_counted(tmp_path: Path) -> None:
    train, fitted = tmp_path / "train", tmp_path / "fitted"
    write_train(train, ["a", "b", "c"], [1.0, float("nan"), 3.0])
    assert write_fitted_ids(0, train, fitted, ("clicks",)) == 3
    assert changed_fitted_rows(0, train, fitted, ("clicks",)) == 0  # NaN equals NaN
    write_train(train, ["a", "b", "c", "d"], [1.0, float("nan"), 3.5, 9.0])  # c changed
    assert changed_fitted_rows(0, train, fitted, ("clicks",)) == 1
    write_train(train, ["b", "c"], [float("nan"), 3.0])  # a left train
    assert changed_fitted_rows(0, train, fitted, ("clicks",)) == 1
    assert changed_fitted_rows(0, train, fitted, ("clicks", "dwell")) == 3  # never recorded
