"""Shard work on a Dask distributed cluster: an existing scheduler or a LocalCluster.

``DaskEngine`` implements the same ``map_shards`` as :class:`~corpus_platform.engine.local.
LocalEngine`: a task is a picklable function of one shard number, results come back in the
order of the shards, so every reduction over them is the same whatever runs the tasks. Tasks
read and write the stage folders themselves: the workers must see the project's folders at the
same paths (one machine, or a shared filesystem), and only the tasks' small summaries travel
back to the Dagster process.

One client per (address or cluster size) lives as long as the process, like the local pools.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

Result = TypeVar("Result")

_CLIENTS: dict[tuple[str, int], Any] = {}


def _local_client(workers: int) -> Any:
    """A client of a LocalCluster of ``workers`` single-threaded worker processes, started with
    :func:`~corpus_platform.engine.allocators.worker_settings` like the local engine's: in the
    nannies' pre-spawn environment, since allocators read it when a process starts, and as
    their ``env``, which wins over this process's own (its Arrow pool is the driver's)."""
    import dask
    from distributed import Client, LocalCluster

    from corpus_platform.engine.allocators import worker_settings

    key, settings = "distributed.nanny.pre-spawn-environ", worker_settings()
    with dask.config.set({key: {**dask.config.get(key, {}), **settings}}):
        cluster = LocalCluster(
            env=settings,
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        )
    return Client(cluster, set_as_default=False)


def _remote_client(address: str) -> Any:
    """A client of the scheduler at ``address``; a clear error when it does not answer."""
    from distributed import Client

    try:
        return Client(address, set_as_default=False, timeout="30s")
    except OSError as err:
        raise ConnectionError(
            f"engine.address {address}: no Dask scheduler answered ({err}); start one "
            f"(`dask scheduler`, dask-kubernetes, dask-jobqueue) or use engine.kind: dask-local"
        ) from err


def client_for(address: str | None, workers: int) -> Any:
    """The process's client of that cluster, started on first use."""
    key = (address or "local", 0 if address else workers)
    client = _CLIENTS.get(key)
    if client is None or client.status not in ("running", "connecting"):
        client = _remote_client(address) if address else _local_client(workers)
        _CLIENTS[key] = client
    return client


def close_clients() -> None:
    """Close every client (and the LocalClusters this process started)."""
    while _CLIENTS:
        client = _CLIENTS.popitem()[1]
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()


atexit.register(close_clients)


@dataclass(frozen=True)
class DaskEngine:
    """Processes shards on a Dask cluster.

    Args:
        address: The scheduler, e.g. ``tcp://10.0.0.5:8786``; None starts a LocalCluster.
        workers: Worker processes of the LocalCluster (ignored with an address).
    """

    address: str | None = None
    workers: int = 2

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")

    def map_shards(self, task: Callable[[int], Result], shards: Sequence[int]) -> list[Result]:
        """Apply ``task`` to every shard on the cluster; results in the order of ``shards``."""
        shards = list(shards)
        if not shards:
            return []
        client = client_for(self.address, self.workers)
        futures = client.map(task, shards, pure=False)
        try:
            return client.gather(futures)
        finally:
            client.cancel(futures)
