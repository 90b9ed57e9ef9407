"""The kernels behind the statistics checks: each passes on consistent data and names what is
wrong on tampered data."""

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.statistics.fit import frozen_scaling_errors
from corpus_platform.kernels.statistics.recompute import TrainAudit, fit_mismatches

SHARDS = 2


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
