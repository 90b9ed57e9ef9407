"""The top-k reduced in hash ranges equals the top-k of one Counter over every shard, whatever
the number of ranges."""

from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.statistics import topk
from corpus_platform.kernels.statistics.topk import top_counts, write_counts


def shard_counts(seed: int, shards: int) -> list[Counter[str]]:
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(300)] + ["ü", "z", "Ω", "a b"]
    out = []
    for _ in range(shards):
        picks = rng.zipf(1.3, 2_000) % len(vocabulary)
        out.append(Counter(vocabulary[i] for i in picks))
    return out


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_top_counts_equal_one_counter(
    tmp_path: Path, partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topk, "ROW_GROUP", 32)  # many row groups, most outside a range
    monkeypatch.setattr(topk, "reduce_partitions", lambda folder, memory_mb: partitions)
    shards = shard_counts(7, 5)
    for shard, counts in enumerate(shards):
        write_counts(counts, tmp_path, shard)
    total: Counter[str] = Counter()
    for counts in shards:
        total.update(counts)
    expected = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:25]
    top, found = top_counts(tmp_path, 25, ["w3", "ü", "never"])
    assert top == expected
    assert found == {"w3": total["w3"], "ü": total["ü"]}  # absent tokens are left out


def test_ties_rank_by_token_and_workers_agree(tmp_path: Path) -> None:
    for shard, counts in enumerate([Counter({"b": 2, "a": 1}), Counter({"a": 1, "c": 2})]):
        write_counts(counts, tmp_path, shard)
    one = top_counts(tmp_path, 3, (), LocalEngine(1))
    two = top_counts(tmp_path, 3, (), LocalEngine(2))
    assert one == two == ([("a", 2), ("b", 2), ("c", 2)], {})


def test_hash_ranges_cover_every_hash_once_and_grow_with_the_rows(tmp_path: Path) -> None:
    for partitions in (1, 2, 7):
        ranges = [topk.hash_range(p, partitions) for p in range(partitions)]
        assert ranges[0][0] == 0 and ranges[-1][1] == topk.HASH_SPAN
        assert all(a[1] == b[0] for a, b in pairwise(ranges))
    write_counts({f"t{i}": 1 for i in range(10_000)}, tmp_path, 0)
    write_counts({f"t{i}": 1 for i in range(5_000, 15_000)}, tmp_path, 1)
    bytes_held = 20_000 * topk.COUNT_ROW_BYTES
    assert topk.reduce_partitions(tmp_path, 1024) == 1
    assert topk.reduce_partitions(tmp_path, 1) == -(-bytes_held // (1 << 19))
    top, _ = top_counts(tmp_path, 3, (), memory_mb=1)  # several ranges, the same answer
    assert top == [("t5000", 2), ("t5001", 2), ("t5002", 2)]
