"""The filter's compiled n-gram numbering against pandas' factorize, its definition."""

import numpy as np
import pandas as pd
import pytest

from corpus_platform.kernels.filtering.compiled import factorize_codes, segmented_factorize


def owned_keys(rng: np.random.Generator, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys scoped to their document, as the n-gram ids are: document * span + a small value
    (repeats within a document, none across), documents of 0 to 3,000 keys in order."""
    sizes = rng.integers(0, 3_000, docs)
    owner = np.repeat(np.arange(docs, dtype=np.int64), sizes)
    span = 1 << 40
    values = rng.zipf(1.3, len(owner)) % 5_000
    return owner * span + values, owner


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ids_are_pandas_factorize_of_the_batch(seed: int) -> None:
    keys, owner = owned_keys(np.random.default_rng(seed), 40)
    ids = segmented_factorize(keys, owner)
    assert ids.dtype == np.int64
    assert np.array_equal(ids, pd.factorize(keys)[0])


def test_full_tables_extreme_keys_and_edge_sizes() -> None:
    """One document of distinct keys (every slot probed past others at a load of a half),
    keys at the ends of int64 and repeated, empty and one-key batches."""
    extremes = np.array([0, 2**63 - 1, -(2**63), 0, -1, 2**63 - 1, 7, -1], dtype=np.int64)
    for keys in (extremes, np.arange(10_000, dtype=np.int64)[::-1] * 977):
        owner = np.zeros(len(keys), dtype=np.int64)
        assert np.array_equal(segmented_factorize(keys, owner), pd.factorize(keys)[0])
    empty = np.empty(0, dtype=np.int64)
    assert segmented_factorize(empty, empty).tolist() == []
    assert segmented_factorize(np.array([5]), np.array([3])).tolist() == [0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unigram_ids_by_direct_index_are_pandas_factorize(seed: int) -> None:
    """Word codes of a batch (Zipf-distributed, documents of 0 to 3,000 words, some empty),
    numbered as the keys ``document * vocabulary + code`` are."""
    rng = np.random.default_rng(seed)
    vocabulary = 7_000
    owner = np.repeat(np.arange(60, dtype=np.int64), rng.integers(0, 3_000, 60))
    codes = (rng.zipf(1.2, len(owner)) - 1) % vocabulary
    ids = factorize_codes(codes, owner, vocabulary)
    assert ids.dtype == np.int64
    assert np.array_equal(ids, pd.factorize(owner * vocabulary + codes)[0])
    assert np.array_equal(ids, segmented_factorize(owner * vocabulary + codes, owner))
    empty = np.empty(0, dtype=np.int64)
    assert factorize_codes(empty, empty, 1).tolist() == []
    assert factorize_codes(np.array([0, 0, 2, 0]), np.array([4, 4, 4, 9]), 3).tolist() == [
        0,
        0,
        1,
        2,
    ]
