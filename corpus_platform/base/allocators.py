"""How the platform's processes allocate memory: the Dagster process returns freed pages to the
system, engine workers keep them for their next task.

An engine worker runs one shard task after another, and every task allocates and frees about the
same few hundred MB (Arrow buffers of a shard's texts, numpy arrays of its words, Python strings).
With the allocators' defaults each freed block goes straight back to the kernel: jemalloc, as
Arrow configures it, purges at once; glibc ``malloc`` serves blocks over 32 MiB with ``mmap``
and trims its heap above 128 KiB. The next task then faults every page in again and the kernel
zeroes it first. A build of 100,000 web documents took 25 million page faults, almost all in the
two workers, and 74 CPU-s of kernel time, most of it zeroing pages (``perf record -e
page-faults`` and ``-e cpu-clock``).

Workers therefore start with :data:`WORKER_ENVIRONMENT`: Arrow allocates from mimalloc without
purging, glibc allocates from one heap that it never maps around or trims. A worker's resident
memory stays at its largest task's instead of falling between tasks (2.2 GB against 1.4 GB at
12,500 documents a shard); in that build the page faults fell to 0.9 million, kernel time to 29
CPU-s and the wall time from 133.7 to 115.9 s (BENCHMARKS.md). The Dagster process keeps
jemalloc (:data:`DRIVER_ARROW_POOL`): it reads shard after shard while its live data stays
small, and kept pages would make its peak follow the corpus. A variable the user set in the
environment wins over both.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"
DRIVER_ARROW_POOL = "jemalloc"  # hands freed pages back: 567 MB peak against mimalloc's 831 MB
WORKER_ENVIRONMENT = {
    ARROW_POOL: "mimalloc",
    "MIMALLOC_PURGE_DELAY": "-1",  # never decommit freed pages
    "MALLOC_MMAP_MAX_": "0",  # glibc: large blocks from the heap too, not from mmap
    "MALLOC_TRIM_THRESHOLD_": str(1 << 40),  # glibc: never give the heap's top back
    # glibc: one arena, the main heap, for every thread: a Dask worker runs its tasks in a
    # thread, and a thread's own arena serves blocks over 64 MiB from mmap whatever the above
    "MALLOC_ARENA_MAX": "1",
}

# Set beside the Dagster process's pool when this package chose it, so that processes started
# from it (a benchmark's build, ``corpus run`` under a scheduler) can tell its choice, which
# they inherit, from the user's.
CHOSEN_HERE = "CORPUS_PLATFORM_ARROW_POOL"


def _set_by_user(name: str) -> bool:
    if name == ARROW_POOL and os.environ.get(CHOSEN_HERE) == os.environ.get(name):
        return False
    return name in os.environ


# What the user chose before this package touched the environment.
USER_SET = frozenset(name for name in WORKER_ENVIRONMENT if _set_by_user(name))


def use_driver_pool() -> None:
    """Make Arrow in this process allocate from :data:`DRIVER_ARROW_POOL` unless the user chose
    a pool; must run before pyarrow first allocates (the package's import does it)."""
    if ARROW_POOL not in os.environ:
        os.environ[ARROW_POOL] = os.environ[CHOSEN_HERE] = DRIVER_ARROW_POOL


def worker_settings() -> dict[str, str]:
    """The variables a worker process starts with: :data:`WORKER_ENVIRONMENT` less the ones
    the user set."""
    return {name: value for name, value in WORKER_ENVIRONMENT.items() if name not in USER_SET}


@contextmanager
def worker_environment() -> Iterator[None]:
    """Within the block, ``os.environ`` holds :func:`worker_settings`, so the worker processes
    started there inherit them (allocators read them when a process starts); restored after.
    This process's own allocators have read theirs already and do not change. One thread at a
    time (checks run side by side), so no thread restores what another set."""
    with _ENVIRONMENT_LOCK:
        settings = worker_settings()
        before = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


_ENVIRONMENT_LOCK = threading.Lock()
