"""One build per project: a second build is refused naming the holder, a build that died
holding the lock has its run marked failed, and interrupted publishes are repaired."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from corpus_platform.cli import main as corpus
from corpus_platform.runner import run_build
from corpus_platform.store.lock import lock_path, project_lock
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
        assert "another build is running" in report.failures[0]
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
