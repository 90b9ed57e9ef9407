r"""Where the Dagster process's memory rises while one asset of a built project is rebuilt: a
thread reads the process's resident memory every millisecond and, each time it passes its
highest value so far by more than ``--step`` MB, records what every other thread is running.

    .bench-venv/bin/python bench/memory_spikes.py PROJECT split_documents

Rebuilds ASSET from scratch (``corpus run --full`` for that asset) in PROJECT, a project kept by
``run_benchmarks.py --keep``, and prints the process's peak (VmHWM) and every rise above the
process's memory after imports by more than ``--above`` MB with the corpus_platform frames of
each thread. A 10 Hz sampler outside the process misses allocations that live for less than a
tenth of a second; this one sees them, as long as the allocating thread lets the sampler run
(Arrow's kernels release the GIL; a long pickle does not).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_mb() -> int:
    """This process's resident memory, MB (``/proc/self/statm``)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE // 2**20


@dataclass(frozen=True)
class Rise:
    """A new high of resident memory and what the other threads were running then."""

    seconds: float
    before: int
    after: int
    stacks: tuple[str, ...]


class Sampler(threading.Thread):
    """Records a :class:`Rise` each time resident memory passes its high by ``step`` MB."""

    def __init__(self, step: int) -> None:
        super().__init__(daemon=True)
        self.step, self.rises, self.done = step, [], threading.Event()
        self.start_time = time.perf_counter()

    def run(self) -> None:
        high = resident_mb()
        while not self.done.is_set():
            now = resident_mb()
            if now > high + self.step:
                self.rises.append(Rise(time.perf_counter() - self.start_time, high, now, _stacks()))
                high = now
            time.sleep(0.001)


def _stacks() -> tuple[str, ...]:
    """The corpus_platform frames of every thread but the caller's, innermost last."""
    me = threading.get_ident()
    out = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        ours = [
            f"  {f.filename.split('corpus_platform/')[-1]}:{f.lineno} {f.name}"
            for f in traceback.extract_stack(frame)
            if "corpus_platform/" in f.filename
        ]
        if ours:
            out.append("\n".join(ours[-6:]))
    return tuple(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("asset")
    parser.add_argument("--step", type=int, default=8, help="MB above the high to record")
    parser.add_argument("--above", type=int, default=40, help="MB above imports to print")
    args = parser.parse_args()
    import dagster as dg

    from corpus_platform.runner import run_build

    base = resident_mb()
    sampler = Sampler(args.step)
    sampler.start()
    report = run_build(
        args.project, instance=dg.DagsterInstance.ephemeral(), assets=[args.asset], full=True
    )
    sampler.done.set()
    sampler.join()
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM"))
    print(f"built: {report.ok}; after imports {base} MB; peak (VmHWM) {peak} MB")
    for rise in sampler.rises:
        if rise.after >= base + args.above:
            print(f"\n{rise.seconds:8.2f} s: {rise.before} -> {rise.after} MB")
            for stack in rise.stacks:
                print(f"{stack}\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
