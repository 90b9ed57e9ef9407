"""A build killed with SIGKILL mid-stage: its run is marked failed by the next build, which
cleans the leftovers and produces the same snapshot ids as an uninterrupted build."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import yaml

from corpus_platform.base.names import STAGES
from corpus_platform.store.lock import current_holder
from tests.conftest import REPO, project_config

CORPUS = [sys.executable, "-m", "corpus_platform.cli"]


def test_a_killed_build_is_marked_failed_and_the_next_one_matches_an_uninterrupted_one(
    built, tmp_path: Path, monkeypatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "corpus.yaml").write_text(yaml.safe_dump(project_config()), encoding="utf-8")
    home = root / ".dagster"
    home.mkdir()
    (home / "dagster.yaml").write_bytes((REPO / "dagster.yaml").read_bytes())
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # DagsterInstance.get() below reads it
    sample = ["sample", "--out", "data/raw", "--eval-out", "data/eval/benchmark.jsonl"]
    subprocess.run(CORPUS + sample, env=env, cwd=root, check=True, capture_output=True)

    build = subprocess.Popen(
        [*CORPUS, "run"],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert build.stdout is not None
    for line in build.stdout:
        if line.startswith("filtered_documents") and line.rstrip().endswith("started"):
            break
    else:
        raise AssertionError("the build ended before filtered_documents started")
    holder = current_holder(root)
    assert holder is not None and holder.pid == build.pid
    os.killpg(build.pid, signal.SIGKILL)
    build.wait(timeout=60)
    with dg.DagsterInstance.get() as instance:
        (killed,) = instance.get_runs()
        assert killed.status == dg.DagsterRunStatus.STARTED  # nothing marked it yet
        assert killed.run_id == holder.run_id

    again = subprocess.run([*CORPUS, "run"], env=env, cwd=root, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    with dg.DagsterInstance.get() as instance:
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
    assert not list((root / "data").glob(".staging-*"))
    for stage in STAGES:
        pointer = yaml.safe_load((root / "data" / f"{stage}.dvc").read_text(encoding="utf-8"))
        assert pointer["outs"][0]["md5"] == built[1].materialized[stage]["snapshot_id"], stage
