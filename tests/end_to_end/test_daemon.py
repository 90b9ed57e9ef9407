"""End to end through the Dagster daemon (`dagster-daemon run`, as `make ui` starts it), not in
process: the new-raw-files sensor starts a build of the sample, a file dropped into data/raw
starts another that reads it, two launched builds queue behind one another (the instance's
limit of one build), and a daemon-launched build killed with SIGKILL is marked failed (by the
code server that started its process) while the next build names it, cleans up and passes. Every
run's checks pass or are not applicable (which emit no evaluation)."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef
from dagster._core.scheduler.instigation import (
    InstigatorStatus,
    InstigatorType,
    ScheduleInstigatorData,
)

from corpus_platform.base.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS, TRAINING_SHARDS
from corpus_platform.defs.batches import (
    RANGE_END,
    RANGE_START,
    RAW_BATCHES,
    partition_range_tags,
    raw_file_names,
    sync_raw_batches,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.schedules import BUILD_JOB, NIGHTLY_SCHEDULE, RAW_SENSOR
from corpus_platform.store.lock import current_holder
from corpus_platform.store.registry import list_snapshots
from tests.conftest import dagster_project

BIN = Path(sys.executable).parent
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
TIMEOUT = 420  # seconds for one build of the sample through the daemon
SCHEDULE_TAG = "dagster/schedule_name"


class Daemon:
    """A ``dagster-daemon run`` process of a project, in its own process group, its output
    appended to the project's daemon.log."""

    def __init__(self, root: Path, env: dict) -> None:
        self.root, self.env = root, env
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with (self.root / "daemon.log").open("a") as log:
            self.process = subprocess.Popen(
                [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        """SIGTERM to the daemon and the code servers it started; waits for it to end."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, dict, dg.DagsterInstance, Daemon]]:
    """A project with the sample corpus, its instance (the repository's dagster.yaml) and a
    running daemon; the sensor is switched on."""
    root = tmp_path_factory.mktemp("daemon") / "project"
    env = dagster_project(root)
    home = Path(env["DAGSTER_HOME"])
    corpus = [sys.executable, "-m", "corpus_platform.cli"]
    sample = ["sample", "--out", "data/raw", "--eval-out", "data/eval/benchmark.jsonl"]
    subprocess.run([*corpus, *sample], cwd=root, env=env, check=True, capture_output=True)
    started = dagster(root, env, "sensor", "start", RAW_SENSOR, "-w", "workspace.yaml")
    assert started.returncode == 0, started.stdout + started.stderr
    process = Daemon(root, env)
    process.start()
    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    try:
        yield root, env, instance, process
    finally:
        process.stop()


@pytest.fixture
def daemon(
    project: tuple[Path, dict, dg.DagsterInstance, Daemon],
) -> tuple[Path, dict, dg.DagsterInstance]:
    """The project, its environment and instance, its daemon running."""
    return project[:3]


SAMPLE_FILES = [
    "code/snippets.csv",
    "web/crawl-0.jsonl",
    "web/crawl-1.jsonl.gz",
    "wiki/articles.parquet",
]


def dagster(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "dagster"), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def launch_build(root: Path, env: dict, instance: dg.DagsterInstance) -> None:
    """Launch the build job as ``dagster job launch`` does, over every raw batch's partition
    (added first, as ``corpus run``, the schedule and the sensor add them)."""
    keys = sync_raw_batches(instance, raw_file_names(CorpusProject(root=str(root))))
    tags = json.dumps(partition_range_tags(keys))
    launched = dagster(root, env, "job", "launch", "-j", BUILD_JOB, "-w", "workspace.yaml",
                       "--tags", tags)  # fmt: skip
    assert launched.returncode == 0, launched.stdout + launched.stderr


def runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """Every run of the build job, oldest first."""
    return sorted(
        instance.get_runs(filters=dg.RunsFilter(job_name=BUILD_JOB)),
        key=lambda r: instance.get_run_record_by_id(r.run_id).create_timestamp,
    )


def wait_for(predicate, what: str, root: Path, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            log = (root / "daemon.log").read_text(encoding="utf-8", errors="replace")
            pytest.fail(f"timed out waiting for {what}; daemon log tail:\n{log[-4000:]}")
        time.sleep(1)


def finished(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRun:
    run = instance.get_run_by_id(run_id)
    assert run is not None
    return run


def check_statuses(instance: dg.DagsterInstance, run_id: str) -> dict[str, bool]:
    """Every check evaluated by a run: name -> passed (not applicable checks emit none)."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    return {
        r.event_log_entry.dagster_event.event_specific_data.check_name: (
            r.event_log_entry.dagster_event.event_specific_data.passed
        )
        for r in records
    }


def assert_succeeded_with_every_check(instance: dg.DagsterInstance, run_id: str) -> None:
    run = finished(instance, run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
    statuses = check_statuses(instance, run_id)
    assert len(statuses) >= 15 and all(statuses.values()), statuses


def test_the_sensor_builds_the_sample_then_a_dropped_file(daemon) -> None:
    root, _, instance = daemon
    wait_for(lambda: len(runs(instance)) >= 1, "the sensor's first run", root)
    first = runs(instance)[0]
    assert first.tags.get("dagster/sensor_name") == RAW_SENSOR
    wait_for(lambda: finished(instance, first.run_id).status in DONE, "the first build", root)
    assert_succeeded_with_every_check(instance, first.run_id)
    assert (root / "data" / TRAINING_SHARDS / "manifest.json").is_file()

    rows = [
        json.loads(line)
        for line in (root / "data" / "raw" / "web" / "crawl-0.jsonl").read_text().splitlines()
    ][:30]
    dropped = [{**r, "id": f"{r['id']}-dropped", "author": f"{r['author']}-new"} for r in rows]
    (root / "data" / "raw" / "web" / "dropped.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in dropped), encoding="utf-8"
    )
    # the sensor looks again after its minimum interval (60 s)
    wait_for(lambda: len(runs(instance)) >= 2, "the sensor's run for the new file", root)
    second = runs(instance)[1]
    assert second.tags.get("dagster/sensor_name") == RAW_SENSOR
    wait_for(lambda: finished(instance, second.run_id).status in DONE, "the second build", root)
    assert_succeeded_with_every_check(instance, second.run_id)
    raw = list_snapshots(root, RAW_DOCUMENTS)[-1]
    assert raw["counts"]["rows_per_file"]["web/dropped.jsonl"] == 30
    assert (raw["counts"]["batches_read"], raw["counts"]["batches_kept"]) == (1, 4)

    # every raw file is a partition; the second run materialized only the dropped file's
    assert instance.get_dynamic_partitions(RAW_BATCHES.name) == [*SAMPLE_FILES, "web/dropped.jsonl"]
    assert (first.tags[RANGE_START], first.tags[RANGE_END]) == (SAMPLE_FILES[0], SAMPLE_FILES[-1])
    assert second.tags[RANGE_START] == second.tags[RANGE_END] == "web/dropped.jsonl"
    for stage in (RAW_DOCUMENTS, FILTERED_DOCUMENTS):
        assert instance.get_materialized_partitions(dg.AssetKey(stage)) == {
            *SAMPLE_FILES,
            "web/dropped.jsonl",
        }
        materialized = instance.get_records_for_run(
            second.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        partitions = {
            r.event_log_entry.dagster_event.partition
            for r in materialized
            if r.event_log_entry.dagster_event.asset_key == dg.AssetKey(stage)
        }
        assert partitions == {"web/dropped.jsonl"}


def test_the_nightly_schedule_builds_a_new_batch_through_the_daemon(project) -> None:
    """The scheduler daemon runs the schedule's missed 02:00 tick (its state started a day ago):
    the run adds the partition of a file dropped since, builds it and passes every check.

    The state is dated back while no daemon runs: a scheduler that evaluated the schedule
    between its start and the backdating keeps that evaluation's time in memory and would
    never look back to the missed tick."""
    root, env, instance, process = project
    stopped = dagster(root, env, "sensor", "stop", RAW_SENSOR, "-w", "workspace.yaml")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr  # the schedule's turn
    process.stop()
    dropped = root / "data" / "raw" / "web" / "nightly.jsonl"
    dropped.write_text(
        (root / "data" / "raw" / "web" / "crawl-0.jsonl")
        .read_text()
        .replace('"id": "', '"id": "n-'),
        encoding="utf-8",
    )
    started = dagster(root, env, "schedule", "start", NIGHTLY_SCHEDULE, "-w", "workspace.yaml")
    assert started.returncode == 0, started.stdout + started.stderr
    (state,) = [
        s
        for s in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
        if s.name == NIGHTLY_SCHEDULE and s.status == InstigatorStatus.RUNNING
    ]
    data = state.instigator_data
    yesterday = time.time() - 86_400  # the last 02:00 UTC tick lies after it: a missed tick
    instance.update_instigator_state(
        state.with_data(ScheduleInstigatorData(data.cron_schedule, start_timestamp=yesterday))
    )
    process.start()

    def scheduled() -> list[dg.DagsterRun]:
        return [r for r in runs(instance) if r.tags.get(SCHEDULE_TAG) == NIGHTLY_SCHEDULE]

    wait_for(lambda: len(scheduled()) >= 1, "the nightly schedule's run", root)
    run = scheduled()[0]
    wait_for(lambda: finished(instance, run.run_id).status in DONE, "the nightly build", root)
    assert_succeeded_with_every_check(instance, run.run_id)
    stopped = dagster(root, env, "schedule", "stop", NIGHTLY_SCHEDULE, "-w", "workspace.yaml")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    keys = instance.get_dynamic_partitions(RAW_BATCHES.name)
    assert "web/nightly.jsonl" in keys
    assert (run.tags[RANGE_START], run.tags[RANGE_END]) == (keys[0], keys[-1])
    raw = list_snapshots(root, RAW_DOCUMENTS)[-1]
    assert (
        raw["counts"]["batches_read"] == 1 and "web/nightly.jsonl" in raw["counts"]["rows_per_file"]
    )
    later = list_snapshots(root, TRAINING_SHARDS)[-1]["counts"]["build"]
    assert later["kind"] == "append", later


def test_two_launched_builds_run_one_after_the_other(daemon) -> None:
    root, env, instance = daemon
    before = {r.run_id for r in runs(instance)}
    for _ in range(2):
        launch_build(root, env, instance)
    new = [r.run_id for r in runs(instance) if r.run_id not in before]
    assert len(new) == 2
    seen_waiting = False

    def both_done() -> bool:
        nonlocal seen_waiting
        statuses = [finished(instance, r).status for r in new]
        if dg.DagsterRunStatus.STARTED in statuses and dg.DagsterRunStatus.QUEUED in statuses:
            seen_waiting = True
        assert statuses.count(dg.DagsterRunStatus.STARTED) <= 1, statuses
        return all(s in DONE for s in statuses)

    wait_for(both_done, "two queued builds", root, timeout=2 * TIMEOUT)
    assert seen_waiting  # one waited in the queue while the other ran
    records = [instance.get_run_record_by_id(r) for r in new]
    records.sort(key=lambda r: r.start_time)
    assert records[0].end_time <= records[1].start_time  # never at the same time
    for run_id in new:
        assert_succeeded_with_every_check(instance, run_id)


def test_a_killed_daemon_run_is_marked_failed_and_the_next_build_recovers(daemon) -> None:
    root, env, instance = daemon
    before = {r.run_id for r in runs(instance)}
    launch_build(root, env, instance)
    (victim,) = [r.run_id for r in runs(instance) if r.run_id not in before]
    wait_for(
        lambda: (h := current_holder(root)) is not None and h.run_id == victim,
        "the launched run to take the project lock",
        root,
    )
    holder = current_holder(root)
    assert holder is not None
    time.sleep(3)  # into the build
    os.kill(holder.pid, signal.SIGKILL)
    wait_for(lambda: current_holder(root) is None, "the lock to be free", root, timeout=60)
    # the code server that started the run process sees it die and marks the run failed
    wait_for(
        lambda: finished(instance, victim).status == dg.DagsterRunStatus.FAILURE,
        "the killed run to be marked failed",
        root,
        timeout=120,
    )
    told = [e.message or "" for e in instance.all_logs(victim)]
    assert any("terminated by signal 9" in m for m in told), told[-3:]

    launch_build(root, env, instance)
    (after,) = [r.run_id for r in runs(instance) if r.run_id not in {*before, victim}]
    wait_for(lambda: finished(instance, after).status in DONE, "the build after the kill", root)
    assert_succeeded_with_every_check(instance, after)
    # the next build finds the killed build's trace in the project lock, says so, and cleans
    # what it left under data/ before building
    messages = [
        e.message for e in instance.all_logs(after) if "died without releasing" in (e.message or "")
    ]
    assert messages and victim in messages[0]
    assert not list((root / "data").glob(".staging-*"))
