"""The shared array helpers."""

import numpy as np

from corpus_platform.base.arrays import distinct


def test_distinct_equals_numpy_unique() -> None:
    rng = np.random.default_rng(5)
    for values in (
        rng.integers(0, 50, 10_000),
        rng.integers(0, 2**62, 1_000).astype(np.uint64),
        np.array([], dtype=np.int64),
        np.array([7]),
    ):
        assert np.array_equal(distinct(values), np.unique(values))
