"""Engine workers keep freed pages for their next task; the Dagster process does not change.

A worker's allocators are those of corpus_platform.engine.allocators: Arrow from mimalloc without
purging, glibc without mmap or trimming. The test that matters is the page-fault count: a task
that allocates what the task before it freed must not fault those pages in again.
"""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.engine import LocalEngine
from corpus_platform.engine.allocators import ARROW_POOL, WORKER_ENVIRONMENT

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["a shard's worth of words " * 300] * 2_000  # 15 MB of text
ROUNDS = 3


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _shard_like_work() -> None:
    """What a shard task allocates and frees: Arrow strings and a 100 MB numpy array."""
    strings = pa.array(TEXTS, pa.large_string())
    numbers = np.ones(12_500_000, dtype=np.int64)
    del strings, numbers


def worker_report(_shard: int) -> dict[str, object]:
    """Run in a worker: its Arrow pool, its allocator variables, and the page faults of a
    task's allocations repeated after a first, warming round."""
    _shard_like_work()
    before = _faults()
    for _ in range(ROUNDS):
        _shard_like_work()
    return {
        "pool": pa.default_memory_pool().backend_name,
        "environment": {name: os.environ.get(name) for name in WORKER_ENVIRONMENT},
        "faults_per_round": (_faults() - before) / ROUNDS,
        "pid": os.getpid(),
    }


def test_workers_keep_pages_and_the_dagster_process_keeps_its_settings() -> None:
    reports = LocalEngine(workers=2).map_shards(worker_report, [0, 1, 2, 3])
    assert all(r["pid"] != os.getpid() for r in reports)
    for report in reports:
        assert report["pool"] == "mimalloc"
        assert report["environment"] == WORKER_ENVIRONMENT
        # 15 MB of strings and a 100 MB array are ~28,000 pages: freed pages were reused
        assert report["faults_per_round"] < 100, report
    assert not set(WORKER_ENVIRONMENT) & set(os.environ)  # the settings stayed in the workers


BASELINE = """
from corpus_platform.engine.allocators import use_driver_pool
from tests.engine.test_allocators import _faults, _shard_like_work
use_driver_pool()  # as a build's Dagster process does
_shard_like_work()
before = _faults()
_shard_like_work()
print(_faults() - before)
"""


def test_the_same_work_faults_its_pages_in_again_with_the_default_allocators() -> None:
    """The baseline the settings remove: in a Dagster-side process (a new one, so that no
    earlier test's allocations shape it), jemalloc and glibc's defaults return the freed pages,
    and every round faults them in again."""
    done = subprocess.run(
        [sys.executable, "-c", BASELINE],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 1_000


PROBE = """
import json
import pyarrow
from corpus_platform.engine import LocalEngine, shutdown_pools
from tests.engine.test_allocators import worker_report
if __name__ == "__main__":
    print(json.dumps(LocalEngine(workers=2).map_shards(worker_report, [0, 1])))
    shutdown_pools()
"""


def _reports_of_a_new_build_process(tmp_path: Path, **env: str) -> list[dict]:
    """Worker reports of a map run by a new process started from this one, with ``env``
    added."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(probe)],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_process_started_from_a_dagster_process_still_gives_its_workers_their_pool(
    tmp_path: Path,
) -> None:
    for report in _reports_of_a_new_build_process(tmp_path):
        assert report["pool"] == "mimalloc" and report["faults_per_round"] < 100, report


def test_a_users_allocator_setting_wins_in_the_workers(tmp_path: Path) -> None:
    reports = _reports_of_a_new_build_process(
        tmp_path, **{ARROW_POOL: "system", "MALLOC_TRIM_THRESHOLD_": "131072"}
    )
    for report in reports:
        assert report["pool"] == "system"
        assert report["environment"][ARROW_POOL] == "system"
        assert report["environment"]["MALLOC_TRIM_THRESHOLD_"] == "131072"
        assert report["environment"]["MALLOC_MMAP_MAX_"] == "0"
