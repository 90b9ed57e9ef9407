r"""What each blocking check of a stage costs the Dagster process: every check run alone in a
fresh process against a built project's published stage, its peak resident memory (VmHWM) above
the process's after imports, Arrow's largest allocation and its seconds.

    .bench-venv/bin/python bench/check_memory.py PROJECT corpus_platform.defs.splitting.checks

Build PROJECT first (e.g. ``run_benchmarks.py --keep``); run it at two corpus sizes to see which
checks grow with the corpus.
"""

from __future__ import annotations

import importlib
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any


def high_water_mb() -> int:
    """This process's peak resident memory, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def stage_checks(module: str) -> Any:
    """The StageChecks a checks module defines."""
    found = [v for v in vars(importlib.import_module(module)).values()]
    return next(v for v in found if type(v).__name__ == "StageChecks")


def run_one(root: str, module: str, name: str, results: Any) -> None:
    """Run check ``name`` on the published stage; put (base MB, peak MB, Arrow MB, s, status)."""
    import pyarrow as pa

    from corpus_platform.defs.resources import CorpusProject
    from corpus_platform.engine import shutdown_pools

    checks = stage_checks(module)
    corpus = CorpusProject(root=root)
    corpus.load()
    base, start = high_water_mb(), time.perf_counter()
    outcome = checks.named(name)(corpus, corpus.stage_dir(checks.asset))
    seconds = time.perf_counter() - start
    arrow = pa.default_memory_pool().max_memory() // 2**20
    results.put((base, high_water_mb(), arrow, seconds, str(outcome.status)))
    shutdown_pools()


def main() -> int:
    root, module, *names = sys.argv[1:]
    context = multiprocessing.get_context("spawn")
    print("| check | above imports, MB | Arrow max, MB | seconds | result |")
    print("|---|---:|---:|---:|---|")
    for name in names or list(stage_checks(module).names):
        results = context.Queue()
        process = context.Process(target=run_one, args=(root, module, name, results))
        process.start()
        base, peak, arrow, seconds, status = results.get()
        process.join()
        print(f"| {name} | {peak - base} | {arrow} | {seconds:.1f} | {status} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
