"""Where kernels run: shard tasks mapped over logical shards, on this machine or a Dask cluster.

Workers are not shards: any number of workers processes the same shards, and results come back
in shard order, so reductions over them never depend on the worker count.
:class:`~corpus_platform.engine.local.LocalEngine` uses a process pool;
:class:`~corpus_platform.engine.dask_cluster.DaskEngine` runs the same tasks on a Dask cluster;
:func:`engine_for` picks one from the config's ``engine`` section. The package also holds what
runs on either: connected components partitioned through disk (:mod:`.graph`) and the worker
processes' allocator settings (:mod:`.allocators`). Dagster-free.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol, TypeVar

from corpus_platform.engine.local import LocalEngine, shutdown_local_pools, warm

Result = TypeVar("Result")


class Engine(Protocol):
    """Something that maps a picklable function over shard numbers."""

    def map_shards(
        self, task: Callable[[int], Result], shards: Sequence[int]
    ) -> list[Result]:  # pragma: no cover - protocol
        """Apply ``task`` to every shard; return results in the order of ``shards``."""
        ...


def _called(_: int, call: Callable[[], Result]) -> Result:
    return call()


def in_worker(engine: Engine, call: Callable[[], Result]) -> Result:
    """``call()`` run as one engine task: in a worker process (on ``local`` with two or more
    workers, or on Dask), so what it imports and allocates stays out of this process. ``call``
    must be picklable (a module-level function or a ``functools.partial`` of one)."""
    return engine.map_shards(partial(_called, call=call), [0])[0]


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
    shutdown_local_pools()
    dask_engine = sys.modules.get("corpus_platform.engine.dask_cluster")
    if dask_engine is not None:
        dask_engine.close_clients()


def warm_engine(kind: str, workers: int) -> None:
    """Start the engine's workers ahead of its first map, without waiting for them: the local
    engine's pool and fork server (:func:`~corpus_platform.engine.local.warm`); nothing for
    Dask, whose workers start with their cluster."""
    if kind == "local":
        warm(workers)


def engine_for(kind: str, workers: int, address: str | None = None) -> Engine:
    """The engine of ``engine.kind``: ``local`` (a process pool), ``dask-local`` (a Dask
    LocalCluster of ``workers`` processes) or ``dask`` (the scheduler at ``address``)."""
    if kind == "local":
        return LocalEngine(workers=workers)
    from corpus_platform.engine.dask_cluster import DaskEngine

    if kind == "dask-local":
        return DaskEngine(workers=workers)
    if kind == "dask" and address:
        return DaskEngine(address=address, workers=workers)
    raise ValueError(f"engine.kind {kind!r} (address {address!r}) is not an engine")
