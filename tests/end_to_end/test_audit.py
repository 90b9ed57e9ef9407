"""Restore, replay, trace, lineage, retention and redaction on a built project."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest

from corpus_platform.audit import checkout, plan_change, replay
from corpus_platform.base.names import STAGES
from corpus_platform.base.shards import read_parquet
from corpus_platform.store.datasets import stage_path
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.registry import find_snapshot, list_snapshots
from corpus_platform.store.releases import record_release
from corpus_platform.store.retention import collect, pin_snapshot, plan_gc
from corpus_platform.store.snapshots import (
    SnapshotError,
    cache_dir,
    current_snapshot,
    object_path,
    remote_dir,
    snapshot_objects,
)
from corpus_platform.trace import TraceError, trace
from tests.conftest import REPO, build, corpus_cli, make_project, set_config, tree_digest


def copy_project(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(source, target)
    # the copy gets its own DVC remote: the source project's must stay intact
    shutil.copytree(source / ".dvc-storage", target / ".dvc-storage", dirs_exist_ok=True)
    return target


def mix_snapshot(root: Path) -> str:
    return current_snapshot(root, stage_path(root, "training_mix"))


def last_snapshot(root: Path) -> str:
    """The snapshot of the last stage, whose chain is every stage."""
    return current_snapshot(root, stage_path(root, STAGES[-1]))


def test_delete_data_restore_from_remote_and_replay_identically(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    before = {name: tree_digest(root / "data" / name) for name in (*STAGES, "raw", "eval")}
    snapshot = last_snapshot(root)
    shutil.rmtree(root / "data")
    shutil.rmtree(cache_dir(root))  # only the remote holds the bytes now
    restored = checkout(root, snapshot, with_upstream=True)
    assert len(restored) == len(STAGES) + 2  # every stage plus raw and the benchmark set
    after = {name: tree_digest(root / "data" / name) for name in before}
    assert after == before
    report = replay(root, snapshot)
    assert report.ok, report.render()
    assert [s.asset for s in report.stages] == list(STAGES)
    assert not (root / ".scratch" / f"replay-{snapshot[:12]}").exists()


def test_a_replay_that_rebuilds_differently_says_how_the_build_plan_changed() -> None:
    appended = {"kind": "append", "reason": "appends generation 1 (1 new upstream units) to s0"}
    record = {"asset": "split_documents", "counts": {"build": appended}}
    scratch = {"kind": "from scratch", "reason": "the splitting code changed since s0"}
    assert plan_change(record, scratch) == [
        "note: split_documents was pinned as append (appends generation 1 (1 new upstream "
        "units) to s0) and rebuilt as from scratch: the splitting code changed since s0"
    ]
    assert plan_change(record, {**appended, "reason": "appends generation 1 to s1"}) == []
    assert plan_change(record, None) == []
    assert plan_change({"asset": "raw_documents", "counts": {}}, scratch) == []


def test_replay_fails_loudly_when_a_raw_object_is_gone(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    raw = find_snapshot(root, current_snapshot(root, stage_path(root, "raw_documents")))
    raw_id = raw["upstream_snapshots"]["raw"]
    entries, missing = snapshot_objects(root, raw_id)
    assert not missing
    relpath, md5 = entries[0]
    for base in (cache_dir(root), remote_dir(root)):
        object_path(base, md5).unlink()
    done = corpus_cli(root, "replay", mix_snapshot(root))
    assert done.returncode == 2
    assert f"data/raw/{relpath}: {md5} missing or corrupted" in done.stderr
    assert "nothing was restored" in done.stderr
    assert not (root / ".scratch").exists() or not any((root / ".scratch").iterdir())


def test_corrupted_object_is_refused(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    snapshot = current_snapshot(root, stage_path(root, "fitted_statistics"))
    entries, _ = snapshot_objects(root, snapshot)
    for base in (cache_dir(root), remote_dir(root)):
        object_path(base, entries[0][1]).write_bytes(b"tampered")
    before = tree_digest(stage_path(root, "fitted_statistics"))
    with pytest.raises(SnapshotError, match=entries[0][1]):
        checkout(root, snapshot)
    assert tree_digest(stage_path(root, "fitted_statistics")) == before


def first_id(path: Path, column: str = "doc_id", where: tuple[str, object] | None = None) -> str:
    table = read_parquet(path)
    if where:
        table = table.filter(pc.equal(table.column(where[0]), where[1]))
    return table.column(column)[0].as_py()


def test_trace_explains_kept_filtered_and_duplicate_rows(built) -> None:
    root = built[0]
    data = root / "data"
    kept = first_id(data / "training_mix" / "part-00000.parquet")
    text = trace(root, kept)
    assert "raw_documents [" in text and " row " in text
    assert "filtered_documents [" in text and ": kept" in text
    assert "pass min_chars: score" in text
    assert "split_documents [" in text and "train; bucket" in text
    assert "as-of author_mean_clicks_30d = " in text
    assert "training_mix [" in text and "drawn 1 time(s)" in text
    removed = first_id(data / "filtered_documents" / "removed" / "part-00000.parquet")
    text = trace(root, removed)
    assert "REMOVED by " in text and "threshold" in text and "split_documents" not in text
    duplicate = first_id(
        data / "deduplicated_documents" / "clusters" / "part-00000.parquet", where=("kept", False)
    )
    text = trace(root, duplicate)
    assert "DROPPED: duplicate in cluster" in text and "similarity" in text
    with pytest.raises(TraceError, match="not in raw_documents"):
        trace(root, "no-such-doc")


def test_lineage_report_in_cli_and_metadata(built) -> None:
    root, report, _ = built
    snapshot = report.materialized[STAGES[-1]]["snapshot_id"]
    text = lineage_report(root, snapshot)
    assert f"corpus replay {snapshot}" in text
    for stage in STAGES:
        assert f"| {stage} | {report.materialized[stage]['snapshot_id']} |" in text
    assert "PASS no_entity_in_two_splits" in text
    assert "corpus replay" in report.materialized["training_mix"]["lineage"]
    assert report.materialized[STAGES[-1]]["replay_command"] == f"corpus replay {snapshot}"


def test_gc_keeps_pinned_chains_and_deletes_the_rest(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    old = {s: current_snapshot(root, stage_path(root, s)) for s in STAGES}
    set_config(root, seed=99)
    shutil.rmtree(stage_path(root, "split_documents"))
    rebuilt = build(root, list(STAGES[3:]))  # split_documents and everything downstream
    assert rebuilt.ok, rebuilt.render()
    assert rebuilt.materialized["split_documents"]["snapshot_id"] != old["split_documents"]
    record_release(root)  # the rebuilt chain is the newest release: the built one is older
    pin_snapshot(root, old["normalized_splits"], "release-1")
    plan = plan_gc(root, keep=1)
    assert (
        old["split_documents"] in plan.keep and "release-1" in plan.keep[old["normalized_splits"]]
    )
    assert old["training_mix"] in plan.delete
    collect(root, plan)
    assert not snapshot_objects(root, old["split_documents"])[1]  # needed by the pin: intact
    assert snapshot_objects(root, old["training_mix"])[1]  # gone
    assert not snapshot_objects(root, rebuilt.materialized["training_mix"]["snapshot_id"])[1]


def test_secrets_and_personal_data_never_reach_records(tmp_path: Path) -> None:
    secret, owner, user = (
        "sk-live-0123456789abcdef",
        "jane.doe@example.com",
        "leaky.user@example.com",
    )
    root = make_project(tmp_path / "p", annotations={"owner": owner, "api_token": secret})
    raw = root / "data" / "raw" / "web" / "crawl-0.jsonl"
    raw.write_text(
        raw.read_text(encoding="utf-8").replace("web-author-001", user), encoding="utf-8"
    )
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "corpus_platform.cli", "run", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = first_id(root / "data" / "raw_documents" / "part-00000.parquet", where=("entity", user))
    outputs = [done.stdout, done.stderr, trace(root, doc), lineage_report(root, mix_snapshot(root))]
    assert "[EMAIL]" in outputs[2]
    written = [p for p in home.rglob("*") if p.is_file()]
    written += [p for p in (root / ".corpus").rglob("*") if p.is_file()]
    written += list((root / "data").glob("*.dvc")) + list((root / "data").glob("*/_manifest.json"))
    written += list((root / "data").glob("*/manifest.json"))
    assert any(p.suffix == ".db" for p in written)  # the Dagster event log is among them
    for needle in (secret, owner, user):
        assert not any(needle in text for text in outputs), needle
        for path in written:
            assert needle.encode() not in path.read_bytes(), (needle, path)
    assert (
        find_snapshot(root, mix_snapshot(root))["config"]["annotations"]["api_token"]
        == "[REDACTED]"
    )
    assert len(list_snapshots(root)) == len(STAGES)
