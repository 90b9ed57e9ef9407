"""The partitioned top-k equals the top-k of one Counter over every shard."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.statistics.topk import scatter_counts, top_counts


def shard_counts(seed: int, shards: int) -> list[Counter[str]]:
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(300)] + ["ü", "z", "Ω", "a b"]
    out = []
    for _ in range(shards):
        picks = rng.zipf(1.3, 2_000) % len(vocabulary)
        out.append(Counter(vocabulary[i] for i in picks))
    return out


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_top_counts_equal_one_counter(tmp_path: Path, partitions: int) -> None:
    shards = shard_counts(7, 5)
    for shard, counts in enumerate(shards):
        scatter_counts(counts, tmp_path, shard, partitions)
    total: Counter[str] = Counter()
    for counts in shards:
        total.update(counts)
    expected = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:25]
    top, found = top_counts(tmp_path, partitions, 25, ["w3", "ü", "never"])
    assert top == expected
    assert found == {"w3": total["w3"], "ü": total["ü"]}  # absent tokens are left out


def test_ties_rank_by_token_and_workers_agree(tmp_path: Path) -> None:
    for shard, counts in enumerate([Counter({"b": 2, "a": 1}), Counter({"a": 1, "c": 2})]):
        scatter_counts(counts, tmp_path, shard, 4)
    one = top_counts(tmp_path, 4, 3, (), LocalEngine(1))
    two = top_counts(tmp_path, 4, 3, (), LocalEngine(2))
    assert one == two == ([("a", 2), ("b", 2), ("c", 2)], {})
