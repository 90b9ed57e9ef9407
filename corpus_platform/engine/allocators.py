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
jemalloc (:data:`DRIVER_ARROW_POOL`, set when a build starts, not on import): it reads shard after
shard while its live data stays small, and kept pages would make its peak follow the corpus. A
variable the user set in the environment wins over both. Nothing here changes the environment of
the process that starts the workers: the settings apply inside the workers only.
"""

from __future__ import annotations

import ctypes
import os
import sys

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

# glibc's mallopt parameters for the variables above: glibc reads the variables only when a
# process starts, so a worker that was started without them applies them with mallopt.
_MALLOPT = {"MALLOC_MMAP_MAX_": -4, "MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_ARENA_MAX": -8}
_INT_MAX = 2**31 - 1


def worker_settings() -> dict[str, str]:
    """The variables a worker process runs with: :data:`WORKER_ENVIRONMENT` less the ones the
    user set in this process's environment."""
    return {name: value for name, value in WORKER_ENVIRONMENT.items() if name not in os.environ}


def start_worker(settings: dict[str, str]) -> None:
    """Apply ``settings`` inside an engine worker process, before its first task.

    Runs in the worker only (the local pool's initializer), never in the process that starts
    it: the variables go into the worker's own environment, where Arrow and mimalloc read them
    when pyarrow loads; glibc gets them through ``mallopt`` and Arrow's pool is set directly, in
    case the worker loaded pyarrow already (spawn re-imports the parent's main module).
    """
    os.environ.update(settings)
    libc = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
    for name, parameter in _MALLOPT.items():
        if libc is not None and name in settings:
            libc.mallopt(parameter, min(int(settings[name]), _INT_MAX))
    if ARROW_POOL in settings and "pyarrow" in sys.modules:
        _set_arrow_pool(settings[ARROW_POOL])


def use_driver_pool() -> None:
    """Make Arrow in this (the Dagster) process allocate from :data:`DRIVER_ARROW_POOL`, unless
    the user chose a pool in the environment. Called when a build starts, never on import."""
    if ARROW_POOL not in os.environ:
        _set_arrow_pool(DRIVER_ARROW_POOL)


def _set_arrow_pool(name: str) -> None:
    import pyarrow as pa

    pools = {
        "jemalloc": pa.jemalloc_memory_pool,
        "mimalloc": pa.mimalloc_memory_pool,
        "system": pa.system_memory_pool,
    }
    pa.set_memory_pool(pools[name]())
