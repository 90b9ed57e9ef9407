"""Run one function over logical shards.

Workers are not shards: any number of workers processes the same shards, and results come back
in shard order, so reductions over them never depend on the worker count. ``LocalEngine`` uses a
process pool; a Dask engine implements the same ``map_shards``.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

Result = TypeVar("Result")


class Engine(Protocol):
    """Something that maps a picklable function over shard numbers."""

    def map_shards(
        self, task: Callable[[int], Result], shards: Sequence[int]
    ) -> list[Result]:  # pragma: no cover - protocol
        """Apply ``task`` to every shard; return results in the order of ``shards``."""
        ...


@dataclass(frozen=True)
class LocalEngine:
    """Processes shards on this machine: in this process for one worker, else a spawn pool.

    Args:
        workers: Number of worker processes; 1 runs serially in the calling process.
    """

    workers: int = 1

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")

    def map_shards(self, task: Callable[[int], Result], shards: Sequence[int]) -> list[Result]:
        """Apply ``task`` to every shard; results in the order of ``shards``."""
        if self.workers == 1 or len(shards) <= 1:
            return [task(shard) for shard in shards]
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            return list(pool.map(task, shards))
