"""Dagster on PostgreSQL (deploy/dagster-postgres.yaml) against a real server: `corpus run`, then
the web server and the daemon run the job launched through GraphQL, and both runs, their
materializations and check evaluations are read back from PostgreSQL itself."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import dagster as dg
import pytest
import yaml

from corpus_platform.base.names import STAGES
from corpus_platform.defs.batches import partition_range_tags
from corpus_platform.defs.schedules import BUILD_JOB, BUILD_TAG
from tests.conftest import REPO, make_project
from tests.defs.test_definitions import EXPECTED_CHECKS
from tests.end_to_end.test_cli import FIRST_BUILD_NOT_APPLICABLE, free_port
from tests.end_to_end.test_daemon import SAMPLE_FILES
from tests.pg_server import MissingServer, PostgresServer, server_bin_dir, temporary_server

VARIANT = REPO / "deploy" / "dagster-postgres.yaml"
BIN = Path(sys.executable).parent
RUN_EVENTS = {t.value for t in dg.DagsterEventType if t.name.startswith("RUN_")}
RUN_TIMEOUT = 600  # seconds for the queued run to reach SUCCESS (about 20 s here)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A fresh PostgreSQL server with an empty database; missing binaries fail, never skip."""
    try:
        server_bin_dir()
        missing = ""
    except MissingServer as error:
        missing = str(error)
    if missing:
        pytest.fail(missing, pytrace=False)
    with temporary_server("corpus_dagster") as server:
        yield server


@pytest.fixture(scope="module")
def pg_project(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, dict[str, str]]:
    """(project root, DAGSTER_HOME holding the PostgreSQL variant, environment of the processes)."""
    base = tmp_path_factory.mktemp("pg")
    root = make_project(base / "project")
    shutil.copy(REPO / "workspace.yaml", root / "workspace.yaml")
    home = base / "dagster_home"
    home.mkdir()
    shutil.copy(VARIANT, home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), **postgres.dagster_env()}
    return root, home, env


def query(server: PostgresServer, sql: str, *params: object) -> list[tuple]:
    connection = server.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    finally:
        connection.close()


def assert_run_recorded(
    server: PostgresServer, run_id: str, not_applicable: set = FIRST_BUILD_NOT_APPLICABLE
) -> None:
    """The run's events in PostgreSQL: SUCCESS, every stage materialized, every applicable check
    passed; ``not_applicable`` (a first build's by default) recorded no evaluation."""
    ((status, job),) = query(
        server, "SELECT status, pipeline_name FROM runs WHERE run_id = %s", run_id
    )
    assert (status, job) == ("SUCCESS", BUILD_JOB)
    counts = dict(
        query(
            server,
            "SELECT dagster_event_type, count(*) FROM event_logs WHERE run_id = %s GROUP BY 1",
            run_id,
        )
    )
    assert counts[dg.DagsterEventType.RUN_SUCCESS.value] == 1
    batched = 2 * len(SAMPLE_FILES)  # raw and filtered documents: one per raw batch
    assert counts[dg.DagsterEventType.ASSET_MATERIALIZATION.value] == len(STAGES) - 2 + batched
    evaluated = EXPECTED_CHECKS - not_applicable  # n/a checks record no evaluation
    assert counts[dg.DagsterEventType.ASSET_CHECK_EVALUATION.value] == len(evaluated)
    assert dg.DagsterEventType.STEP_FAILURE.value not in counts
    materialized = query(
        server,
        "SELECT asset_key FROM event_logs WHERE run_id = %s AND dagster_event_type = %s",
        run_id,
        dg.DagsterEventType.ASSET_MATERIALIZATION.value,
    )
    assert {json.loads(key)[0] for (key,) in materialized} == set(STAGES)
    checks = query(
        server,
        "SELECT asset_key, check_name, execution_status FROM asset_check_executions "
        "WHERE run_id = %s",
        run_id,
    )
    statuses = {(json.loads(key)[0], name): status for key, name, status in checks}
    assert set(statuses) == EXPECTED_CHECKS
    assert {k for k, status in statuses.items() if status == "SUCCEEDED"} == evaluated


def assert_no_sqlite(home: Path) -> None:
    """Nothing of Dagster's SQLite storage under DAGSTER_HOME (history/runs.db, history/runs/,
    schedules/schedules.db); compute logs under storage/ are plain files and allowed."""
    assert (home / "dagster.yaml").is_file()
    assert not (home / "history").exists()
    assert not (home / "schedules").exists()
    assert not [p for p in home.rglob("*") if p.suffix in {".db", ".sqlite"}]


def test_the_variant_is_dagster_yaml_plus_postgres_storage() -> None:
    variant = yaml.safe_load(VARIANT.read_text(encoding="utf-8"))
    default = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
    storage = variant.pop("storage")
    assert variant == default
    fields = storage["postgres"]["postgres_db"]
    assert {k: v for k, v in fields.items() if isinstance(v, dict)} == {
        "hostname": {"env": "DAGSTER_PG_HOSTNAME"},
        "port": {"env": "DAGSTER_PG_PORT"},
        "db_name": {"env": "DAGSTER_PG_DB"},
        "username": {"env": "DAGSTER_PG_USERNAME"},
        "password": {"env": "DAGSTER_PG_PASSWORD"},
    }


def test_corpus_run_records_its_run_in_postgres(pg_project, postgres) -> None:
    root, home, env = pg_project
    done = subprocess.run(
        [sys.executable, "-m", "corpus_platform.cli", "run", "--root", str(root)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: every stage built, every applicable check passed" in done.stdout
    ((run_id,),) = query(postgres, "SELECT run_id FROM runs")
    assert_run_recorded(postgres, run_id)
    assert_no_sqlite(home)


@contextmanager
def started(command: list[str], root: Path, env: dict[str, str], log: Path) -> Iterator[None]:
    """Run ``command`` in its own process group for the block, then stop the whole group."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):  # SIGKILL: whatever is left of the group
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                with suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=60)


def wait_for_server(port: int, log: Path) -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5)
            return
        except OSError:
            assert time.monotonic() < deadline, "web server did not start:\n" + log.read_text()
            time.sleep(1)


LOCATIONS = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  name location { name } jobs { name } } } } }"""

LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId status } } ... on Error { message } } }"""

RUN = """query($runId: ID!) { runOrError(runId: $runId) {
  __typename ... on Run { status tags { key value } } } }"""

RUNS = "{ runsOrError { ... on Runs { results { runId status jobName } } } }"


def ask(port: int, text: str, **variables: object) -> dict:
    """The data of a GraphQL query or mutation; GraphQL errors fail the test."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": text, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def test_web_server_and_daemon_run_a_launched_build_on_postgres(
    pg_project, postgres, tmp_path: Path
) -> None:
    root, home, env = pg_project
    runs = query(postgres, "SELECT run_id FROM runs")
    assert len(runs) == 1, "needs the `corpus run` of the test above (run the whole module)"
    ((cli_run,),) = runs
    port = free_port()
    web_log, daemon_log = tmp_path / "webserver.log", tmp_path / "daemon.log"
    webserver = [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port)]
    daemon = [str(BIN / "dagster-daemon"), "run"]
    with ExitStack() as stack:
        stack.enter_context(started([*webserver, "-w", "workspace.yaml"], root, env, web_log))
        stack.enter_context(started([*daemon, "-w", "workspace.yaml"], root, env, daemon_log))
        wait_for_server(port, web_log)
        (repository,) = [
            node
            for node in ask(port, LOCATIONS)["repositoriesOrError"]["nodes"]
            if BUILD_JOB in {job["name"] for job in node["jobs"]}
        ]
        selector = {
            "repositoryLocationName": repository["location"]["name"],
            "repositoryName": repository["name"],
            "jobName": BUILD_JOB,
        }
        tags = [  # every raw batch's partition, as `corpus run` added them
            {"key": key, "value": value}
            for key, value in partition_range_tags(SAMPLE_FILES).items()
        ]
        params = {"selector": selector, "executionMetadata": {"tags": tags}}
        launched = ask(port, LAUNCH, params=params)["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            run = ask(port, RUN, runId=run_id)["runOrError"]
            if run["status"] in {"SUCCESS", "FAILURE", "CANCELED"}:
                break
            assert time.monotonic() < deadline, (
                f"run still {run['status']}:\n" + (daemon_log.read_text(errors="replace")[-5000:])
            )
            time.sleep(2)
        assert run["status"] == "SUCCESS", daemon_log.read_text(errors="replace")[-5000:]
        assert {"key": BUILD_TAG, "value": "build"} in run["tags"]
        shown = ask(port, RUNS)["runsOrError"]["results"]
        daemons = {name for (name,) in query(postgres, "SELECT daemon_type FROM daemon_heartbeats")}

    assert {(r["runId"], r["status"], r["jobName"]) for r in shown} == {
        (cli_run, "SUCCESS", BUILD_JOB),
        (run_id, "SUCCESS", BUILD_JOB),
    }
    assert sorted(query(postgres, "SELECT run_id, status FROM runs")) == sorted(
        [(cli_run, "SUCCESS"), (run_id, "SUCCESS")]
    )
    # the second build has a published split to compare with: the time order, the licence
    # check (nothing denied) and the drift check (no train row since the kept fit) are n/a
    assert_run_recorded(
        postgres,
        run_id,
        {
            ("split_documents", "temporal_order"),
            ("split_documents", "no_denied_license_in_splits"),
            ("fitted_statistics", "train_drift_within_thresholds"),
        },
    )
    assert_run_recorded(postgres, cli_run)  # untouched by the second build
    lifecycle = [
        event
        for (event,) in query(
            postgres,
            "SELECT dagster_event_type FROM event_logs WHERE run_id = %s ORDER BY id",
            run_id,
        )
        if event in RUN_EVENTS
    ]
    assert lifecycle == [  # queued by the web server, started by the daemon
        dg.DagsterEventType.RUN_ENQUEUED.value,
        dg.DagsterEventType.RUN_STARTING.value,
        dg.DagsterEventType.RUN_START.value,
        dg.DagsterEventType.RUN_SUCCESS.value,
    ]
    assert "QUEUED_RUN_COORDINATOR" in daemons  # the daemon's heartbeats went to PostgreSQL too
    tags = query(
        postgres, "SELECT value FROM run_tags WHERE run_id = %s AND key = %s", run_id, BUILD_TAG
    )
    assert tags == [("build",)]
    assert_no_sqlite(home)
