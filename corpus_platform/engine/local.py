"""The local engine: shard tasks in a process pool kept for the life of the process.

Workers are forked from a fork server (``multiprocessing``'s ``forkserver``; ``spawn`` where
the platform has none) that imports :mod:`corpus_platform.worker_preload` once: the
workers' allocator settings, then the libraries every build's workers load (Great
Expectations alone takes about 3 s). Each spawned worker used to import them itself; a forked
one finds them loaded. :func:`warm` starts the server and the workers ahead of the first map,
so the imports overlap the start of the run instead of its first stage.
"""

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


# The application module the fork server imports before it forks a worker (the engine never
# imports it: it loads kernels, a layer above the engine).
PRELOAD = "corpus_platform.worker_preload"


def _context() -> multiprocessing.context.BaseContext:
    """The fork server's context, preloading :data:`PRELOAD`; spawn where there is none. The
    preload list is the process's one fork server's: it applies when that server starts."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([PRELOAD])
    return context


def _pool(workers: int) -> ProcessPoolExecutor:
    """One pool per worker count for the life of the process: stages of a build reuse its
    workers instead of starting new ones for every map. Each worker applies
    :func:`~corpus_platform.engine.allocators.worker_settings` to itself first (the fork
    server did too, before it loaded Arrow)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=_context(),
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


def _ready(_: int) -> None:
    """A task that does nothing: a worker that ran it has started and imported the preload."""


def warm(workers: int) -> None:
    """Start the pool of ``workers`` workers (and its fork server) in a background thread and
    return at once: one empty task a worker, so that each is forked as soon as the server has
    loaded what the workers share (starting a worker waits for that). A build calls it before
    Dagster starts the run; a map meanwhile waits for the same workers."""
    if workers > 1:
        threading.Thread(target=_start, args=(workers,), name="warm-engine", daemon=True).start()


def _start(workers: int) -> None:
    pool = _pool(workers)
    for shard in range(workers):
        pool.submit(_ready, shard)


def shutdown_local_pools() -> None:
    """Stop every local worker pool this process started (they restart on the next map)."""
    while _POOLS:
        _POOLS.popitem()[1].shutdown()
