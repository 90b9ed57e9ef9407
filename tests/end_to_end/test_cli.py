"""End to end: the `corpus` command in a subprocess, then the Dagster web server over HTTP."""

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from corpus_platform.audit_report import default_path as audit_path
from corpus_platform.kernels.sharding.audit_markdown import audit_markdown
from corpus_platform.store.releases import list_releases
from tests.conftest import dagster_project
from tests.defs.test_definitions import EXPECTED_CHECKS

CORPUS = [sys.executable, "-m", "corpus_platform.cli"]

# the checks a first build of the sample cannot apply: no stability baseline, no time order,
# no denied licence, no train rows since the fit
FIRST_BUILD_NOT_APPLICABLE = {
    ("split_documents", "no_held_out_row_moved_into_train"),
    ("split_documents", "temporal_order"),
    ("split_documents", "no_denied_license_in_splits"),
    ("fitted_statistics", "train_drift_within_thresholds"),
}


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        CORPUS + args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("e2e") / "project"
    env = dagster_project(root)
    yield root, env


def test_sample_then_run_prints_the_summary(project) -> None:
    root, env = project
    sample = run(
        ["sample", "--out", "data/raw", "--eval-out", "data/eval/benchmark.jsonl"], env, root
    )
    assert sample.returncode == 0 and sample.stdout.count("wrote ") == 5
    again = run(["sample", "--out", "data/raw"], env, root)
    assert "leaving them untouched" in again.stdout
    built = run(["run"], env, root)
    assert built.returncode == 0, built.stdout + built.stderr
    out = built.stdout
    assert "result: every stage built, every applicable check passed" in out
    assert "emitted no result" not in built.stdout + built.stderr  # n/a is in the summary
    assert (
        "PASS split_documents.no_entity_in_two_splits: entities in more than one split: 0 of 300"
        in out
    )
    assert "removed per filter: blocklist_words 20, c4_curly_braces 10" in out
    assert "split sizes: train " in out and "duplicate clusters: " in out
    lines = out.splitlines()
    for stage in ("raw_documents", "split_documents", "training_shards"):  # one line each way
        assert sum(line.startswith(stage) and line.endswith(" started") for line in lines) == 1
        built_line = next(
            line for line in lines if line.startswith(f"{stage} ") and " built " in line
        )
        assert built_line.endswith(" s") and " rows " in built_line
    assert " - STEP_" not in out + built.stderr  # Dagster's event log went to the file
    logs = list((root / ".corpus" / "logs").glob("build-*.log"))
    assert len(logs) == 1 and "STEP_SUCCESS" in logs[0].read_text(encoding="utf-8")
    snapshots = run(["snapshots"], env, root)
    assert len(snapshots.stdout.splitlines()) == 8 and "training_shards" in snapshots.stdout


def test_a_failed_check_is_told_calmly_with_the_log_path(project, tmp_path: Path) -> None:
    source, env = project
    root = tmp_path / "copy"
    shutil.copytree(source, root)
    env = {**env, "DAGSTER_HOME": str(root / ".dagster")}  # leave the web server test's runs alone
    config = yaml.safe_load((root / "corpus.yaml").read_text(encoding="utf-8"))
    config["split"]["mode"] = "row"
    (root / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = run(["run"], env, root)
    assert done.returncode == 1
    out = done.stdout
    assert "split_documents          FAILED" in out
    assert "FAIL split_documents.no_entity_in_two_splits: entities in more than one split: " in out
    assert "rejected by" in out and "corpus candidates" in out
    assert "Stack Trace" not in out + done.stderr and " - ERROR - " not in done.stderr
    log = Path(out.split("Dagster's full log of this build: ")[1].split()[0])
    assert log.is_file() and "Stack Trace" in log.read_text(encoding="utf-8")


def test_run_without_dagster_home_refuses(project) -> None:
    root, env = project
    bare = {k: v for k, v in env.items() if k != "DAGSTER_HOME"}
    done = run(["run"], bare, root)
    assert done.returncode == 2 and "DAGSTER_HOME is not set" in done.stderr


def test_bad_config_is_reported_by_the_cli(project, tmp_path: Path) -> None:
    _, env = project
    (tmp_path / "corpus.yaml").write_text("split:\n  mode: sideways\n", encoding="utf-8")
    done = run(["run", "--root", str(tmp_path)], env, tmp_path)
    assert done.returncode == 2 and "split.mode" in done.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


QUERY = """{
  assetNodes { assetKey { path } assetChecksOrError { ... on AssetChecks { checks {
    name blocking executionForLatestMaterialization { status } } } } }
  runsOrError { ... on Runs { results { status jobName } } }
  shouldShowNux
  assetOrError(assetKey: {path: ["training_shards"]}) { ... on Asset {
    assetObservations(limit: 1) { description metadataEntries { label
      ... on MarkdownMetadataEntry { mdStr } ... on TextMetadataEntry { text }
      ... on PathMetadataEntry { path } } } } }
}"""


def test_web_server_shows_graph_runs_and_checks(project) -> None:
    root, env = project
    assert (root / "data" / "training_shards").is_dir(), "needs the CLI run above"
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster-webserver"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-w",
            "workspace.yaml",
        ],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5)
                break
            except OSError:
                assert server.poll() is None, "web server exited"
                assert time.monotonic() < deadline, "web server did not start"
                time.sleep(1)
        data = graphql(port, QUERY)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert data["shouldShowNux"] is False  # no newsletter modal over the project
    assets = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
    assert len(assets) == 8 and "training_shards" in assets
    checks = [c for n in assets.values() for c in n["assetChecksOrError"]["checks"]]
    shown = {
        (key, c["name"]) for key, n in assets.items() for c in n["assetChecksOrError"]["checks"]
    }
    assert shown == EXPECTED_CHECKS
    assert all(c["blocking"] for c in checks)
    statuses = {
        (key, c["name"]): (c["executionForLatestMaterialization"] or {}).get("status")
        for key, n in assets.items()
        for c in n["assetChecksOrError"]["checks"]
    }
    passed = {k for k, status in statuses.items() if status == "SUCCEEDED"}
    assert passed == EXPECTED_CHECKS - FIRST_BUILD_NOT_APPLICABLE  # n/a: skipped, never passed
    runs = data["runsOrError"]["results"]
    assert [r["jobName"] for r in runs] == ["build_corpus"] and runs[0]["status"] == "SUCCESS"
    assert_the_ui_shows_the_release_audit(root, data["assetOrError"]["assetObservations"])


def assert_the_ui_shows_the_release_audit(root: Path, observations: list[dict]) -> None:
    """The build's release audit is on training_shards' page: the audit page's own content,
    with the release's rows, tokens and snapshot, and the path of the HTML page."""
    (release,) = list_releases(root)
    (observation,) = observations
    assert observation["description"] == f"audit of release {release['name']}"
    entries = {e["label"]: e for e in observation["metadataEntries"]}
    page = Path(entries["audit_page"]["path"])
    assert page == audit_path(root, release["name"]) and page.is_file()
    croissant = Path(entries["croissant"]["path"])  # written with the release, like the page
    assert croissant == page.with_name("croissant.json") and croissant.is_file()
    markdown = entries["audit"]["mdStr"]
    assert markdown == audit_markdown(page.read_text(encoding="utf-8"))
    assert markdown.startswith(f"# Audit of release {release['name']}\n")
    for label, value in [
        ("samples (rows)", f"{release['rows']:,}"),
        ("tokens", f"{release['tokens']:,}"),
        ("training_shards snapshot", release["snapshot_id"]),
    ]:
        assert f"- **{label}**: {value}\n" in markdown
    assert "## Checks" in markdown and "| stage | check | status | verdict |" in markdown
