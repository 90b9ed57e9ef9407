"""The local engine forks its workers from a fork server that has loaded, once, what every
build's workers use (corpus_platform.worker_preload): Great Expectations, Arrow, the kernels and
numba's compiled code; the preload imports no Dagster, and freezes what it loaded out of the
cyclic garbage collector, so a worker's collections do not walk it.

The map runs in a new process: one whose main module and earlier tasks imported nothing, so
that what its workers hold is what the fork server gave them.
"""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRELOADED = ("great_expectations", "numba", "corpus_platform.kernels.filtering.stage")

PROBE = """
import json, os
from corpus_platform.engine import LocalEngine, shutdown_pools, warm_engine
from tests.engine.test_fork_server import what_is_loaded
if __name__ == "__main__":
    warm_engine("local", 2)  # returns at once; the map waits for the same workers
    print(json.dumps([os.getpid(), LocalEngine(workers=2).map_shards(what_is_loaded, range(6))]))
    shutdown_pools()
"""


def what_is_loaded(_shard: int) -> tuple[int, int, dict[str, bool], int]:
    """Run in a worker: its pid, its parent's, which modules it holds and how many objects
    the collector leaves alone (frozen)."""
    names = (*PRELOADED, "dagster")
    loaded = {name: name in sys.modules for name in names}
    return os.getpid(), os.getppid(), loaded, gc.get_freeze_count()


def test_workers_are_forked_with_the_preload_and_without_dagster(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(probe)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    mapper, reports = json.loads(done.stdout)
    for pid, parent, loaded, frozen in reports:
        assert pid != mapper
        assert parent != mapper  # a child of the fork server, not of the mapping process
        assert all(loaded[name] for name in PRELOADED), loaded
        assert not loaded["dagster"], loaded
        assert frozen > 100_000  # the preloaded modules' objects (about 370,000)
