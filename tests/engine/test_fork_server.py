"""The local engine forks its workers from a fork server that has loaded, once, what every
build's workers use (corpus_platform.worker_preload): Great Expectations, Arrow, the kernels and
numba's compiled code; a worker imports no Dagster."""

import os
import sys

from corpus_platform.engine import LocalEngine, warm_engine

PRELOADED = ("great_expectations", "numba", "corpus_platform.kernels.filtering.stage")


def what_is_loaded(_shard: int) -> tuple[int, int, dict[str, bool]]:
    """Run in a worker: its pid, its parent's, and which modules it holds."""
    names = (*PRELOADED, "dagster")
    return os.getpid(), os.getppid(), {name: name in sys.modules for name in names}


def test_workers_are_forked_with_the_preload_and_without_dagster() -> None:
    warm_engine("local", 2)  # returns at once; the map below waits for the same workers
    reports = LocalEngine(workers=2).map_shards(what_is_loaded, range(6))
    for pid, parent, loaded in reports:
        assert pid != os.getpid()
        assert parent != os.getpid()  # a child of the fork server, not of this process
        assert all(loaded[name] for name in PRELOADED), loaded
        assert not loaded["dagster"], loaded
