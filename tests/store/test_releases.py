"""Releases: every full build that passed records the chain it published; a release can be
named, listed, kept by gc and restored in one command."""

import shutil
from pathlib import Path

import pytest

from corpus_platform.base.names import STAGES, TRAINING_SHARDS
from corpus_platform.cli import main as corpus
from corpus_platform.store.registry import RegistryError
from corpus_platform.store.releases import find_release, list_releases, record_release
from corpus_platform.store.retention import plan_gc
from tests.conftest import build, set_config, tree_digest


@pytest.fixture
def project(built, tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    return root


def test_a_full_build_that_passed_records_its_chain(built) -> None:
    root, report, _ = built
    assert report.release is not None
    (release,) = [r for r in list_releases(root) if r["name"] == report.release["name"]]
    assert release["snapshots"] == {s: report.materialized[s]["snapshot_id"] for s in STAGES}
    assert release["snapshot_id"] == report.materialized[TRAINING_SHARDS]["snapshot_id"]
    assert release["rows"] == report.materialized[TRAINING_SHARDS]["rows"]
    assert release["raw_snapshot"] and "eval:benchmark" in release["inputs"]
    assert release["name"].count(".") == 1 and release["name"].endswith(".1")
    assert f"release: {release['name']}" in report.render()


def test_a_subset_build_records_no_release(project: Path) -> None:
    before = list_releases(project)
    report = build(project, ["raw_documents", "filtered_documents"])
    assert report.ok and report.release is None
    assert list_releases(project) == before


def test_a_release_is_named_listed_kept_and_restored(project: Path, capsys) -> None:
    assert corpus(["release", "v1", "--root", str(project)]) == 0
    # without a Dagster instance the release is recorded all the same, and the CLI says what
    # it could not do
    assert "DAGSTER_HOME is not set: the release's audit is not shown" in capsys.readouterr().out
    assert corpus(["release", "v1", "--root", str(project)]) == 2  # a name is taken once
    assert "in use" in capsys.readouterr().err
    assert corpus(["releases", "--root", str(project)]) == 0
    assert "v1 " in capsys.readouterr().out
    release = find_release(project, "v1")
    assert release is not None
    kept = plan_gc(project, 0).keep
    assert set(release["snapshots"].values()) <= set(kept)

    data = project / "data"
    before = {stage: tree_digest(data / stage) for stage in STAGES}
    for stage in ("split_documents", TRAINING_SHARDS):
        shutil.rmtree(data / stage)
    assert corpus(["checkout", "v1", "--root", str(project)]) == 0
    assert {stage: tree_digest(data / stage) for stage in STAGES} == before


def test_a_chain_that_did_not_pass_together_is_no_release(project: Path) -> None:
    report = build(project, ["raw_documents"])  # a new raw snapshot? the same bytes: same chain
    assert report.ok
    (project / "data" / "raw" / "web" / "more.jsonl").write_text(
        (project / "data" / "raw" / "web" / "crawl-0.jsonl").read_text().replace("web-0", "x-0"),
        encoding="utf-8",
    )
    assert build(project, ["raw_documents"]).ok  # rebuilt alone: the stages after it are stale
    with pytest.raises(RegistryError, match="rebuilt alone"):
        record_release(project, "stale")


def test_gc_keeps_named_releases_and_the_newest_automatic_ones(project: Path) -> None:
    old = list_releases(project)[-1]  # the built fixture's automatic release
    assert corpus(["release", "kept-forever", "--root", str(project)]) == 0
    set_config(project, mix={"total_rows": 1000})
    assert build(project, ["training_mix", TRAINING_SHARDS]).ok
    newer = record_release(project)  # automatic, of the rebuilt chain
    assert not newer["named"] and newer["snapshot_id"] != old["snapshot_id"]
    reasons = plan_gc(project, 1).keep
    assert reasons[old["snapshot_id"]] == "release kept-forever"  # named: kept like a pin
    assert reasons[newer["snapshot_id"]].startswith(("newest", "in use", "release"))
