"""The local engine: shard tasks in a spawn process pool kept for the life of the process."""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TypeVar

from corpus_platform.engine.allocators import start_worker, worker_settings

Result = TypeVar("Result")


_POOLS: dict[int, ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()  # checks map from several threads at once


def _pool(workers: int) -> ProcessPoolExecutor:
    """One spawn pool per worker count for the life of the process: stages of a build reuse
    its workers instead of starting (and importing into) new ones for every map. Each worker
    applies :func:`~corpus_platform.engine.allocators.worker_settings` to itself first."""
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            context = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=start_worker,
                initargs=(worker_settings(),),
            )
            _POOLS[workers] = pool
            atexit.register(pool.shutdown, cancel_futures=True)
        return pool


@dataclass(frozen=True)
class LocalEngine:
    """Processes shards on this machine: in this process for one worker, else a spawn pool kept
    for the life of the process (a map of one task too: its working state stays out of the
    calling process, as on a cluster).

    Args:
        workers: Number of worker processes; 1 runs serially in the calling process.
    """

    workers: int = 1

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")

    def map_shards(self, task: Callable[[int], Result], shards: Sequence[int]) -> list[Result]:
        """Apply ``task`` to every shard; results in the order of ``shards``."""
        if self.workers == 1 or not shards:
            return [task(shard) for shard in shards]
        try:
            return list(_pool(self.workers).map(task, shards))
        except BrokenProcessPool:
            _POOLS.pop(self.workers, None)  # a worker died (killed, out of memory): start afresh
            raise


def shutdown_local_pools() -> None:
    """Stop every local worker pool this process started (they restart on the next map)."""
    while _POOLS:
        _POOLS.popitem()[1].shutdown()
