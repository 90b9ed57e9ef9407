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


def test_a_subset_build_records_no_release(built_copy: Path) -> None:
    before = list_releases(built_copy)
    report = build(built_copy, ["raw_documents", "filtered_documents"])
    assert report.ok and report.release is None
    assert list_releases(built_copy) == before


def test_a_release_is_named_listed_kept_and_restored(built_copy: Path, capsys) -> None:
    assert corpus(["release", "v1", "--root", str(built_copy)]) == 0
    # without a Dagster instance the release is recorded all the same, and the CLI says what
    # it could not do
    assert "DAGSTER_HOME is not set: the release's audit is not shown" in capsys.readouterr().out
    assert corpus(["release", "v1", "--root", str(built_copy)]) == 2  # a name is taken once
    assert "in use" in capsys.readouterr().err
    assert corpus(["releases", "--root", str(built_copy)]) == 0
    assert "v1 " in capsys.readouterr().out
    release = find_release(built_copy, "v1")
    assert release is not None
    kept = plan_gc(built_copy, 0).keep
    assert set(release["snapshots"].values()) <= set(kept)

    data = built_copy / "data"
    before = {stage: tree_digest(data / stage) for stage in STAGES}
    for stage in ("split_documents", TRAINING_SHARDS):
        shutil.rmtree(data / stage)
    assert corpus(["checkout", "v1", "--root", str(built_copy)]) == 0
    assert {stage: tree_digest(data / stage) for stage in STAGES} == before


def test_a_chain_that_did_not_pass_together_is_no_release(built_copy: Path) -> None:
    report = build(built_copy, ["raw_documents"])  # a new raw snapshot? the same bytes: same chain
    assert report.ok
    (built_copy / "data" / "raw" / "web" / "more.jsonl").write_text(
        (built_copy / "data" / "raw" / "web" / "crawl-0.jsonl").read_text().replace("web-0", "x-0"),
        encoding="utf-8",
    )
    assert build(built_copy, ["raw_documents"]).ok  # rebuilt alone: the stages after it are stale
    with pytest.raises(RegistryError, match="rebuilt alone"):
        record_release(built_copy, "stale")


def test_gc_keeps_named_releases_and_the_newest_automatic_ones(built_copy: Path) -> None:
    old = list_releases(built_copy)[-1]  # the built fixture's automatic release
    assert corpus(["release", "kept-forever", "--root", str(built_copy)]) == 0
    set_config(built_copy, mix={"total_rows": 1000})
    assert build(built_copy, ["training_mix", TRAINING_SHARDS]).ok
    newer = record_release(built_copy)  # automatic, of the rebuilt chain
    assert not newer["named"] and newer["snapshot_id"] != old["snapshot_id"]
    reasons = plan_gc(built_copy, 1).keep
    assert reasons[old["snapshot_id"]] == "release kept-forever"  # named: kept like a pin
    assert reasons[newer["snapshot_id"]].startswith(("newest", "in use", "release"))
