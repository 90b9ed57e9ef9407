"""The streaming recomputation of the train statistics equals numpy over all rows at once."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.shards import write_sharded
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.statistics.recompute import recompute_train_statistics


def test_streaming_recomputation_equals_numpy_on_everything(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    clicks = rng.normal(1e6, 3.0, n)  # a large mean: a one-pass sum of squares would cancel
    clicks[rng.choice(n, 50, replace=False)] = np.nan
    texts = [None if i % 7 == 0 else f"Word{i % 13} the THE shared" for i in range(n)]
    table = pa.table(
        {
            "doc_id": [f"d{i:05d}" for i in range(n)],
            "clicks": clicks,
            "empty": pa.nulls(n, pa.float64()),
            "text": texts,
        }
    )
    write_sharded(table, tmp_path, 4)
    edges = {"clicks": np.linspace(1e6 - 10, 1e6 + 10, 6).tolist(), "empty": [0.0, 1.0]}

    audit = recompute_train_statistics(tmp_path, 4, edges, with_text=True)

    values = clicks[~np.isnan(clicks)]
    got = audit.features["clicks"]
    assert got["count"] == values.size and audit.rows == n
    assert math.isclose(got["mean"], float(values.mean()), rel_tol=1e-12)
    assert math.isclose(got["std"], float(values.std()), rel_tol=1e-9)
    assert (got["minimum"], got["maximum"]) == (values.min(), values.max())
    assert got["histogram"] == np.histogram(values, bins=edges["clicks"])[0].tolist()
    assert audit.features["empty"] == {"count": 0}
    present = [t for t in texts if t is not None]
    assert audit.documents == len(present)
    assert audit.document_frequencies["the"] == len(present)  # counted once per document
    assert audit.document_frequencies["word3"] == sum("Word3 " in t for t in present)


def test_worker_count_does_not_change_the_recomputation(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    table = pa.table(
        {
            "doc_id": [f"d{i}" for i in range(500)],
            "x": rng.normal(0, 1, 500),
            "text": [f"t{i % 9} common" for i in range(500)],
        }
    )
    write_sharded(table, tmp_path, 5)
    edges = {"x": [-5.0, 0.0, 5.0]}
    serial = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(1))
    parallel = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(2))
    assert serial == parallel
