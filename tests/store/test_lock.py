"""The project build lock: one holder at a time, named; a holder killed with -9 is detected."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus_platform.store.lock import ProjectBusy, current_holder, lock_path, project_lock

HOLD = """
import sys, time
from pathlib import Path
from corpus_platform.store.lock import project_lock
with project_lock(Path(sys.argv[1]), "run-killed"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_holder_is_refused_with_the_first_named(tmp_path: Path) -> None:
    with project_lock(tmp_path, "run-one") as lock:
        assert lock.crashed is None
        holder = current_holder(tmp_path)
        assert holder is not None and holder.run_id == "run-one" and holder.pid == os.getpid()
        with (
            pytest.raises(
                ProjectBusy, match=rf"run run-one.*pid {os.getpid()}|pid {os.getpid()}.*run run-one"
            ),
            project_lock(tmp_path, "run-two"),
        ):
            pass
    assert current_holder(tmp_path) is None
    assert lock_path(tmp_path).read_text() == ""  # a clean release leaves no trace
    with project_lock(tmp_path, "run-three") as lock:
        assert lock.crashed is None


def test_a_holder_killed_with_sigkill_releases_the_lock_and_is_reported(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"held"
        holder = current_holder(tmp_path)
        assert holder is not None and holder.pid == child.pid
        with pytest.raises(ProjectBusy, match="run-killed"), project_lock(tmp_path, "run-next"):
            pass
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    deadline = time.monotonic() + 10
    while current_holder(tmp_path) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with project_lock(tmp_path, "run-next") as lock:
        assert lock.crashed is not None and lock.crashed.run_id == "run-killed"
        assert lock.crashed.pid == child.pid
