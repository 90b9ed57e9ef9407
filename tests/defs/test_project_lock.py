"""One build per project: a second build is refused naming the holder, a build that died
holding the lock has its run marked failed, and interrupted publishes are repaired."""

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from corpus_platform.cli import main as corpus
from corpus_platform.runner import run_build
from corpus_platform.store.lock import lock_path, project_lock
from corpus_platform.store.registry import list_snapshots
from tests.conftest import tree_digest


@pytest.fixture
def project(built, tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    return root


def test_a_second_build_is_refused_at_once_naming_the_holder(
    project: Path, capsys, monkeypatch
) -> None:
    before = tree_digest(project / "data")
    with project_lock(project, "run-holding") as lock:
        report = run_build(
            project, instance=dg.DagsterInstance.ephemeral(), assets=["split_documents"]
        )
        assert not report.success and not report.materialized
        assert "another build or command holds the project lock" in report.failures[0]
        assert (
            f"pid {lock.holder.pid}" in report.failures[0] and "run-holding" in report.failures[0]
        )
        monkeypatch.setenv("DAGSTER_HOME", str(project / ".dagster"))
        assert corpus(["run", "--root", str(project)]) == 2
        assert "run-holding" in capsys.readouterr().err
    assert tree_digest(project / "data") == before


def test_a_build_that_died_is_marked_failed_and_its_leftovers_cleaned(project: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    dead = instance.add_run(
        dg.DagsterRun(
            job_name="build_corpus", run_id="dead0001", status=dg.DagsterRunStatus.STARTED
        )
    )
    lock_path(project).write_text(
        '{"pid": 999999, "run_id": "dead0001", "started": "2026-11-23T00:00:00+00:00", '
        '"host": "gone"}'
    )
    data = project / "data"
    # died mid-publish: the old folder and pointer moved aside, no new folder in place yet
    shutil.copy2(data / "split_documents.dvc", data / ".previous-split_documents.dvc-copy")
    (data / "split_documents").rename(data / ".previous-split_documents")
    (data / ".staging-training_mix").mkdir()
    report = run_build(project, instance=instance, assets=["split_documents"])
    assert report.ok, report.render()
    assert instance.get_run_by_id(dead.run_id).status == dg.DagsterRunStatus.FAILURE
    assert not (data / ".staging-training_mix").exists()
    assert not list(data.glob(".previous-*"))
    assert (data / "split_documents" / "train").is_dir()
    assert lock_path(project).read_text() == ""


HOLD = """
import sys, time
from pathlib import Path
from corpus_platform.store.lock import project_lock
with project_lock(Path(sys.argv[1]), "run-building"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_the_lock(project: Path, seconds: float) -> subprocess.Popen:
    """A process that holds the project lock as a running build does, for ``seconds``."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(project), str(seconds)], stdout=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdout.readline().strip() == b"held"
    return child


def _state(project: Path) -> tuple[str, ...]:
    """What the commands may write: data/ with its pointers, the registry, DVC's cache and the
    project's local remote."""
    registry = (project / ".corpus" / "registry.jsonl").read_bytes()
    folders = (tree_digest(project / part) for part in ("data", ".dvc", ".dvc-storage"))
    return (hashlib.sha256(registry).hexdigest(), *folders)


@pytest.mark.parametrize(
    "command",
    [
        ["gc", "--keep", "1"],
        ["pin", "SNAPSHOT", "kept"],
        ["checkout", "SNAPSHOT"],
        ["sample", "--force", "--seed", "8"],
    ],
    ids=["gc", "pin", "checkout", "sample"],
)
def test_commands_that_write_refuse_during_a_build_naming_it(
    project: Path, command: list[str], capsys
) -> None:
    snapshot = list_snapshots(project, "split_documents")[-1]["snapshot_id"]
    argv = [snapshot if part == "SNAPSHOT" else part for part in command]
    before = _state(project)
    child = _hold_the_lock(project, 600)
    try:
        assert corpus([*argv, "--root", str(project)]) == 2
        error = capsys.readouterr().err
        assert "run-building" in error and f"pid {child.pid}" in error
        assert _state(project) == before
    finally:
        child.kill()
        child.wait(timeout=30)


def test_wait_takes_the_lock_when_the_build_ends(project: Path, capsys) -> None:
    child = _hold_the_lock(project, 3)
    try:
        started = time.monotonic()
        assert corpus(["gc", "--keep", "5", "--wait", "--root", str(project)]) == 0
        assert child.poll() is not None  # gc ran only after the holder let go
        assert time.monotonic() - started >= 2
    finally:
        child.kill()
        child.wait(timeout=30)
    assert "deleted 0 snapshot(s)" in capsys.readouterr().out


def test_run_wait_builds_after_the_holder_lets_go(project: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(project / ".dagster"))
    (project / ".dagster").mkdir(exist_ok=True)
    child = _hold_the_lock(project, 3)
    try:
        assert corpus(["run", "--wait", "--root", str(project)]) == 0
        assert child.poll() is not None
    finally:
        child.kill()
        child.wait(timeout=30)
    out = capsys.readouterr().out
    assert "waiting for the lock's holder" in out and "run run-building" in out
    assert "every applicable check passed" in out
