"""The split-ratio check's kernel: passes within tolerance, names a giant component."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.splitting.ratios import split_ratio_report

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
