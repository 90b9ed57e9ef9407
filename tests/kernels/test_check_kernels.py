"""The kernels behind the split, statistics and mix checks, without Dagster: each passes on
consistent data and names what is wrong on tampered data."""

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.mixing.decontam import EvalNgrams, overlap_report
from corpus_platform.kernels.splitting.ratios import split_ratio_report
from corpus_platform.kernels.statistics.fit import frozen_scaling_errors
from corpus_platform.kernels.statistics.recompute import TrainAudit, fit_mismatches

SHARDS = 2


def write_split(root: Path, rows: dict[str, list[tuple[str, str]]]) -> None:
    """``rows``: split -> (doc_id, component) pairs, spread over two shards."""
    for name in SPLITS:
        pairs = rows.get(name, [])
        for shard in range(SHARDS):
            mine = pairs[shard::SHARDS]
            table = pa.table(
                {
                    "doc_id": [d for d, _ in mine],
                    "component": [c for _, c in mine],
                    "bucket": pa.array([0] * len(mine), pa.int64()),
                }
            )
            write_parquet(table, part_path(root / name, shard))


def test_split_ratios_pass_within_tolerance_and_name_a_giant_component(tmp_path: Path) -> None:
    config = SplitConfig(tolerance=0.05)
    balanced = {
        "train": [(f"t{i}", f"c{i}") for i in range(80)],
        "validation": [(f"v{i}", f"d{i}") for i in range(10)],
        "test": [(f"x{i}", f"e{i}") for i in range(10)],
    }
    write_split(tmp_path / "ok", balanced)
    report = split_ratio_report(tmp_path / "ok", SHARDS, config)
    assert report.passed and report.sizes == {"train": 80, "validation": 10, "test": 10}
    skewed = {**balanced, "test": [(f"x{i}", "giant") for i in range(30)]}
    write_split(tmp_path / "bad", skewed)
    report = split_ratio_report(tmp_path / "bad", SHARDS, config)
    assert not report.passed
    assert "the largest component 'giant' holds 30 of 120 rows (25.0%)" in report.describe()
    assert "placed whole in test, the split furthest over its target" in report.describe()


def fitted_and_audit(values: list[float]) -> tuple[dict, TrainAudit]:
    x = np.array(values)
    stats = {
        "count": len(x),
        "mean": float(x.mean()),
        "std": float(x.std()),
        "minimum": float(x.min()),
        "maximum": float(x.max()),
    }
    histogram = [1, 2, 1]
    fitted = {"features": {"x": {**stats, "histogram": {"counts": histogram, "edges": [0, 1]}}}}
    audit = TrainAudit(len(x), {"x": {**stats, "histogram": histogram}}, 0, Counter())
    return fitted, audit


def test_fit_mismatches_name_the_statistic_that_differs() -> None:
    fitted, audit = fitted_and_audit([1.0, 2.0, 3.0, 4.0])
    assert fit_mismatches(fitted, audit, ["x"]) == []
    fitted["features"]["x"]["mean"] = 2.6  # fitted on other rows
    assert fit_mismatches(fitted, audit, ["x"]) == ["x.mean: fitted 2.6 != recomputed 2.5"]


def test_frozen_scaling_errors_catch_a_refitted_split(tmp_path: Path) -> None:
    features = {"x": {"mean": 2.0, "std": 4.0}}
    for name in SPLITS:
        for shard in range(SHARDS):
            x = np.arange(5, dtype=float) + shard
            ids = [f"{name}-{shard}-{i}" for i in range(5)]
            write_parquet(
                pa.table({"doc_id": ids, "x": x}), part_path(tmp_path / "raw" / name, shard)
            )
            scaled = (x - 2.0) / 4.0 if name != "test" else (x - x.mean()) / x.std()
            write_parquet(
                pa.table({"doc_id": ids, "x": scaled}), part_path(tmp_path / "norm" / name, shard)
            )
    checked, bad = frozen_scaling_errors(tmp_path / "raw", tmp_path / "norm", features, SHARDS)
    assert checked == {"train": 10, "validation": 10, "test": 10}
    assert bad == [
        f"test shard {s}: x not scaled by the frozen train statistics" for s in range(SHARDS)
    ]


def test_overlap_report_finds_a_row_holding_benchmark_text(tmp_path: Path) -> None:
    benchmark = "the quick brown fox jumps over the lazy dog near the quiet river bank today"
    texts = ["an unrelated sentence about something else entirely " * 3, f"intro {benchmark} end"]
    for shard in range(SHARDS):
        table = pa.table({"doc_id": [f"d{shard}"], "text": [texts[shard]]})
        write_parquet(table, part_path(tmp_path, shard))
    ngrams = EvalNgrams.of({"bench": [benchmark], "other": []}, 13)
    report = overlap_report(tmp_path, SHARDS, ngrams, 13)
    assert (report.rows, report.contaminated) == (2, 1)
    assert report.hits == {"bench": 1, "other": 0} and report.examples == ("d1: bench",)
