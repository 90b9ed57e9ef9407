"""Run one function over logical shards.

Workers are not shards: any number of workers processes the same shards, and results come back
in shard order, so reductions over them never depend on the worker count. ``LocalEngine`` uses a
process pool; :class:`~corpus_platform.kernels.dask_engine.DaskEngine` runs the same tasks on a
Dask cluster. :func:`engine_for` picks one from the config's ``engine`` section.
"""

from __future__ import annotations

import atexit
import multiprocessing
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Protocol, TypeVar

from corpus_platform.base.allocators import worker_environment

Result = TypeVar("Result")


class Engine(Protocol):
    """Something that maps a picklable function over shard numbers."""

    def map_shards(
        self, task: Callable[[int], Result], shards: Sequence[int]
    ) -> list[Result]:  # pragma: no cover - protocol
        """Apply ``task`` to every shard; return results in the order of ``shards``."""
        ...


_POOLS: dict[int, ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()  # checks map from several threads at once


def _pool(workers: int) -> ProcessPoolExecutor:
    """One spawn pool per worker count for the life of the process: stages of a build reuse
    its workers instead of starting (and importing into) new ones for every map. The pool
    starts its workers when tasks are submitted, so submit inside
    :func:`~corpus_platform.base.allocators.worker_environment`."""
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            context = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
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
            with worker_environment():  # workers start on submission, with keep-pages allocators
                results = _pool(self.workers).map(task, shards)
            return list(results)
        except BrokenProcessPool:
            _POOLS.pop(self.workers, None)  # a worker died (killed, out of memory): start afresh
            raise


MAP_TASKS = 16  # a batched map is cut into up to this many tasks before batches grow


def batch_size(items: int, most: int) -> int:
    """How many of ``items`` one task of a batched map takes: the fewest that keep the map at
    :data:`MAP_TASKS` tasks or under, so every worker gets some (two 256 MiB tar files are two
    tasks, not one), but never more than ``most`` (a task's arguments and state stay small)."""
    return max(1, min(most, -(-items // MAP_TASKS)))


def batch_count(items: int, size: int) -> int:
    """The number of tasks of ``size`` items each that cover ``items``."""
    return -(-items // size)


def shutdown_pools() -> None:
    """Stop every worker pool this process started (they restart on the next map). A
    ``multiprocessing`` child must call this before it returns: atexit does not run there, and
    the child's exit waits for its own child processes."""
    while _POOLS:
        _POOLS.popitem()[1].shutdown()
    dask_engine = sys.modules.get("corpus_platform.kernels.dask_engine")
    if dask_engine is not None:
        dask_engine.close_clients()


def engine_for(kind: str, workers: int, address: str | None = None) -> Engine:
    """The engine of ``engine.kind``: ``local`` (a process pool), ``dask-local`` (a Dask
    LocalCluster of ``workers`` processes) or ``dask`` (the scheduler at ``address``)."""
    if kind == "local":
        return LocalEngine(workers=workers)
    from corpus_platform.kernels.dask_engine import DaskEngine

    if kind == "dask-local":
        return DaskEngine(workers=workers)
    if kind == "dask" and address:
        return DaskEngine(address=address, workers=workers)
    raise ValueError(f"engine.kind {kind!r} (address {address!r}) is not an engine")
