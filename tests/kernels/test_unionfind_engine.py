"""Union-find names sets by their smallest key; the engine returns results in shard order."""

import itertools
import os
import time

from corpus_platform.kernels.engine import LocalEngine
from corpus_platform.kernels.unionfind import UnionFind


def test_names_do_not_depend_on_link_order() -> None:
    links = [("d", "b"), ("c", "e"), ("e", "b"), ("x", "y")]
    results = set()
    for order in itertools.permutations(links):
        uf = UnionFind()
        uf.union_all(order)
        results.add(tuple((k, tuple(v)) for k, v in sorted(uf.groups().items())))
    assert results == {(("b", ("b", "c", "d", "e")), ("x", ("x", "y")))}


def test_unseen_key_is_its_own_set() -> None:
    assert UnionFind().find("solo") == "solo"


def square(shard: int) -> int:
    return shard * shard


def test_worker_count_does_not_change_results() -> None:
    assert LocalEngine(1).map_shards(square, range(9)) == LocalEngine(2).map_shards(
        square, range(9)
    )
    assert LocalEngine(2).map_shards(square, [3, 1, 2]) == [9, 1, 4]


def worker_pid(_: int) -> int:
    time.sleep(0.05)  # long enough for both workers to take tasks
    return os.getpid()


def test_stages_reuse_the_same_worker_processes() -> None:
    engine = LocalEngine(2)
    first = set(engine.map_shards(worker_pid, range(8)))
    second = set(LocalEngine(2).map_shards(worker_pid, range(8)))
    assert os.getpid() not in first
    assert first == second
