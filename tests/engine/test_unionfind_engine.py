"""Union-find names sets by their smallest key; the engine returns results in shard order."""

import itertools
import os
import time

from corpus_platform.engine import MAP_TASKS, LocalEngine, batch_count, batch_size
from corpus_platform.kernels.splitting.unionfind import UnionFind


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
    (alone,) = engine.map_shards(worker_pid, [0])  # one task: a worker too, not the caller
    assert alone in first and LocalEngine(1).map_shards(worker_pid, [0]) == [os.getpid()]


def test_batches_cover_every_item_and_spread_over_workers() -> None:
    for items, most in itertools.product((1, 2, 5, 16, 17, 100, 6_506), (1, 3, 64)):
        size = batch_size(items, most)
        tasks = batch_count(items, size)
        assert 1 <= size <= most and (tasks - 1) * size < items <= tasks * size
        assert size == most or tasks <= MAP_TASKS
        assert size == 1 or batch_count(items, size - 1) > MAP_TASKS  # the smallest such size
    assert batch_size(2, 64) == 1  # two big tar files: two tasks, one per worker
    assert batch_size(6_506, 64) == 64
