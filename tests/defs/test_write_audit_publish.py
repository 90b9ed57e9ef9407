"""Write-audit-publish: a candidate that fails a check never becomes data/, and every check of
its stage is reported."""

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from corpus_platform.base.names import RAW_DOCUMENTS, SPLIT_DOCUMENTS
from corpus_platform.cli import main as corpus
from corpus_platform.defs.stages import STAGE_CHECKS
from corpus_platform.store.candidates import list_candidates
from corpus_platform.store.datasets import recover_stage_folders
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.registry import CHECK, list_snapshots, read_records
from corpus_platform.store.remotes import object_path
from corpus_platform.store.snapshots import ObjectCheck, cache_dir, remote_dir
from tests.conftest import build, set_config, tree_digest

DOWNSTREAM = ("fitted_statistics", "normalized_splits", "training_mix", "training_shards")


def pointers(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "data").glob("*.dvc"))}


def test_a_rejected_split_leaves_data_pointers_and_snapshots_as_they_were(
    built, tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    data_before, pointers_before = tree_digest(root / "data"), pointers(root)
    published_before = list_snapshots(root, SPLIT_DOCUMENTS)
    set_config(root, split={"mode": "row"})  # users now sit on both sides of the split

    report = build(root)

    assert not report.ok
    split_checks = {c.name: c for c in report.checks if c.asset == SPLIT_DOCUMENTS}
    assert set(split_checks) == set(STAGE_CHECKS[SPLIT_DOCUMENTS].names)  # one failing skips none
    assert not split_checks["no_entity_in_two_splits"].passed
    assert split_checks["temporal_order"].label == "n/a"  # group split: no time order promised
    assert not split_checks["temporal_order"].passed
    assert SPLIT_DOCUMENTS not in report.materialized
    assert all(stage not in report.materialized for stage in DOWNSTREAM)
    assert "rejected by" in report.failures[0] and "corpus candidates" in report.failures[0]

    assert tree_digest(root / "data") == data_before
    assert pointers(root) == pointers_before
    assert list_snapshots(root, SPLIT_DOCUMENTS) == published_before

    (candidate,) = list_candidates(root)
    assert candidate["asset"] == SPLIT_DOCUMENTS
    failed = {c["check"]: c["verdict"] for c in candidate["checks"] if c["status"] == "failed"}
    assert failed["no_entity_in_two_splits"].startswith("entities in more than one split: ")
    assert candidate["snapshot_id"] not in {s["snapshot_id"] for s in list_snapshots(root)}
    recorded = {
        r["check"]: r["verdict"]
        for r in read_records(root, CHECK)
        if r["snapshot_id"] == candidate["snapshot_id"]
    }
    assert recorded["no_entity_in_two_splits"] == failed["no_entity_in_two_splits"]
    judged = {
        r["check"]
        for r in read_records(root, CHECK)
        if r["snapshot_id"] == candidate["snapshot_id"]
    }
    assert judged == set(STAGE_CHECKS[SPLIT_DOCUMENTS].names)
    folder = root / candidate["path"]
    assert len(pd.read_parquet(folder / "train")) > 0  # readable like any stage

    # pinned and pushed while its checks ran: gc deletes what only the candidate uses
    objects = ObjectCheck(root)
    listing, missing = objects.snapshot(candidate["snapshot_id"])
    assert not missing
    published = {
        md5 for e in list_snapshots(root) for _, md5 in objects.snapshot(e["snapshot_id"])[0]
    }
    own = {candidate["snapshot_id"]} | {md5 for _, md5 in listing} - published
    stores = (cache_dir(root), remote_dir(root))
    assert all(object_path(store, md5).is_file() for md5 in own for store in stores)

    assert corpus(["candidates", "--root", str(root)]) == 0
    assert corpus(["gc", "--keep", "5", "--root", str(root)]) == 0
    assert not folder.exists() and list_candidates(root) == []
    assert not any(object_path(store, md5).exists() for md5 in own for store in stores)
    assert tree_digest(root / "data") == data_before  # every published object kept
    for entry in list_snapshots(root):
        assert not objects.snapshot(entry["snapshot_id"])[1], entry["asset"]


def test_the_stability_baseline_is_the_published_split_never_a_rejected_one(
    built, tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    accepted_seed = yaml.safe_load((root / "corpus.yaml").read_text(encoding="utf-8"))["seed"]
    set_config(root, seed=12345)  # reshuffles the split: rejected by the stability check
    rejected = build(root, ["split_documents"])
    assert not rejected.check("no_held_out_row_moved_into_train").passed
    set_config(root, seed=accepted_seed)
    back = build(root, ["split_documents"])  # the accepted config again: nothing moved
    assert back.check("no_held_out_row_moved_into_train").passed, back.render()
    assert back.ok


def test_a_new_split_epoch_may_move_rows_and_records_which(built, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    set_config(root, seed=12345, split={"epoch": 1})
    report = build(root, ["split_documents"])
    assert report.ok, report.render()
    stability = report.check("no_held_out_row_moved_into_train")
    assert stability.verdict.startswith("new split epoch 1 (published: 0)")
    moves = report.materialized[SPLIT_DOCUMENTS]["epoch_moves"]
    assert moves["from_epoch"] == 0 and moves["to_epoch"] == 1 and moves["moved_into_train"] > 0
    moved = pd.read_parquet(root / "data" / SPLIT_DOCUMENTS / "epoch_moves")
    assert len(moved) == moves["moved_into_train"]
    assert set(moved["from_split"]) <= {"validation", "test"}
    before = pd.concat(
        pd.read_parquet(built[0] / "data" / SPLIT_DOCUMENTS / name).assign(split=name)
        for name in ("validation", "test")
    )
    train_now = set(pd.read_parquet(root / "data" / SPLIT_DOCUMENTS / "train")["doc_id"])
    assert set(moved["doc_id"]) == set(before["doc_id"]) & train_now  # counted independently
    recorded = list_snapshots(root, SPLIT_DOCUMENTS)[-1]
    assert recorded["counts"]["epoch_moves"] == moves
    assert "epoch_moves" in lineage_report(root, recorded["snapshot_id"])

    set_config(root, split={"epoch": 0})
    back = build(root, ["split_documents"])
    assert not back.ok
    assert "epochs only increase" in back.check("no_held_out_row_moved_into_train").verdict


def copy_with_a_new_split(built, tmp_path: Path) -> Path:
    """A copy of the built project whose config asks for a new split that passes its checks."""
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    set_config(root, split={"epoch": 1}, seed=777)
    return root


def test_a_failed_pin_leaves_data_and_pointers_as_they_were(
    built, tmp_path: Path, monkeypatch
) -> None:
    from corpus_platform.defs import publish as publishing
    from corpus_platform.store.snapshots import SnapshotError, pin_in_place

    root = copy_with_a_new_split(built, tmp_path)
    data_before, pointers_before = tree_digest(root / "data"), pointers(root)

    def pin_then_fail(*args, **kwargs):
        pin_in_place(*args, **kwargs)  # the candidate's pointer exists, its objects are cached
        raise SnapshotError("`dvc push` failed: remote unreachable")

    monkeypatch.setattr(publishing, "pin_in_place", pin_then_fail)
    report = build(root, [SPLIT_DOCUMENTS])
    assert not report.ok and "remote unreachable" in report.failures[0]
    assert tree_digest(root / "data") == data_before
    assert pointers(root) == pointers_before
    assert not list((root / "data").glob(".previous-*"))
    assert not list((root / "data").glob(".staging-*"))


def test_the_candidate_is_pinned_while_its_checks_run_and_its_pointer_moves_with_it(
    built, tmp_path: Path, monkeypatch
) -> None:
    from corpus_platform.defs import publish as publishing
    from corpus_platform.store.snapshots import pin, pin_in_place

    root = copy_with_a_new_split(built, tmp_path)
    seen = []

    def audit_after_the_pin(project, checks, candidate):
        pinned = candidate.parent / f"{candidate.name}.dvc"
        for _ in range(600):  # the pin runs beside the checks: wait for its pointer
            if pinned.is_file():
                break
            time.sleep(0.1)
        seen.append(pinned.is_file())
        return real_audit(project, checks, candidate)

    pins = []

    def recorded_pin_in_place(root_: Path, folder: Path, **kwargs):
        pins.append((folder.name, threading.current_thread().name))
        return pin_in_place(root_, folder, **kwargs)

    real_audit = publishing.audit
    monkeypatch.setattr(publishing, "audit", audit_after_the_pin)
    monkeypatch.setattr(publishing, "pin_in_place", recorded_pin_in_place)
    report = build(root, [SPLIT_DOCUMENTS])

    assert report.ok, report.render()
    assert seen == [True]  # the candidate was pinned before its checks ended
    assert [name for name, _ in pins] == [f".staging-{SPLIT_DOCUMENTS}"]
    assert pins[0][1].startswith("pin")
    published = root / "data" / SPLIT_DOCUMENTS
    moved = (root / "data" / f"{SPLIT_DOCUMENTS}.dvc").read_bytes()
    assert b"path: split_documents\n" in moved
    assert not list((root / "data").glob(".staging-*"))
    # the moved pointer is the one DVC writes when it adds the published folder itself
    assert pin(root, published, push=False) == report.materialized[SPLIT_DOCUMENTS]["snapshot_id"]
    assert (root / "data" / f"{SPLIT_DOCUMENTS}.dvc").read_bytes() == moved


def test_a_candidate_that_changed_after_its_pin_is_pinned_again(
    built, tmp_path: Path, monkeypatch
) -> None:
    from corpus_platform.defs import publish as publishing
    from corpus_platform.store.snapshots import ObjectCheck

    root = copy_with_a_new_split(built, tmp_path)
    real_audit = publishing.audit

    def audit_then_write(project, checks, candidate):
        runs = real_audit(project, checks, candidate)
        (candidate / "late-note.txt").write_text("written after the pin began\n")
        return runs

    monkeypatch.setattr(publishing, "audit", audit_then_write)
    report = build(root, [SPLIT_DOCUMENTS])

    assert report.ok, report.render()
    snapshot = report.materialized[SPLIT_DOCUMENTS]["snapshot_id"]
    listing, missing = ObjectCheck(root).snapshot(snapshot)
    assert not missing
    assert "late-note.txt" in {name for name, _ in listing}
    assert not list((root / "data").glob(".staging-*"))


def _out_of_range_raw_file(root: Path) -> None:
    """A new raw file whose clicks break the declared range: the Great Expectations suite
    rejects raw_documents, while the raw files themselves pin fine."""
    row = {
        "id": "late-00001",
        "body": "A late row with negative clicks. " * 20,
        "src": "web",
        "author": "late-author",
        "created_at": "2024-07-01T00:00:00Z",
        "label": 1,
        "url": "https://late.example.org/1",
        "clicks": -5,
        "dwell_seconds": 3.0,
    }
    (root / "data" / "raw" / "web" / "late.jsonl").write_text(json.dumps(row) + "\n")


def test_raw_inputs_pinned_while_a_rejecting_check_ran_keep_their_old_pointer(
    built, tmp_path: Path, monkeypatch
) -> None:
    from corpus_platform.defs import publish as publishing
    from corpus_platform.store.snapshots import pin, pin_in_place

    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    _out_of_range_raw_file(root)
    data_before, pointers_before = tree_digest(root / "data"), pointers(root)
    pinned_in = []

    def recorded(real):
        def pinning(root_: Path, folder: Path, **kwargs):
            pinned_in.append((folder.name, threading.current_thread().name))
            return real(root_, folder, **kwargs)

        return pinning

    monkeypatch.setattr(publishing, "pin", recorded(pin))
    monkeypatch.setattr(publishing, "pin_in_place", recorded(pin_in_place))
    report = build(root, [RAW_DOCUMENTS])

    assert not report.ok
    assert not report.check("great_expectations_suite").passed
    # the raw files, then the candidate, were pinned beside the checks, then put back
    assert [name for name, _ in pinned_in] == ["raw", f".staging-{RAW_DOCUMENTS}"]
    assert all(thread.startswith("pin") for _, thread in pinned_in)
    assert pointers(root) == pointers_before
    assert tree_digest(root / "data") == data_before


def _extra_raw_file(root: Path) -> None:
    """A new raw file of well-formed rows (fresh ids): the raw files' pointer must move."""
    (root / "data" / "raw" / "web" / "extra.jsonl").write_text(
        (root / "data" / "raw" / "web" / "crawl-0.jsonl").read_text().replace('"web-', '"extra-')
    )


@pytest.mark.parametrize("failing", ["raw", f".staging-{RAW_DOCUMENTS}"])
def test_a_failed_pin_of_raw_files_or_stage_leaves_the_raw_pointer_as_it_was(
    built, tmp_path: Path, monkeypatch, failing: str
) -> None:
    """The raw files' pin fails, or they were pinned and the candidate's pin fails: nothing is
    published, the raw pointer is put back and the candidate removed at once."""
    from corpus_platform.defs import publish as publishing
    from corpus_platform.store.snapshots import SnapshotError, pin, pin_in_place

    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    _extra_raw_file(root)
    data_before, pointers_before = tree_digest(root / "data"), pointers(root)

    def then_fail_for(real):
        def pinning(root_: Path, folder: Path, **kwargs):
            snapshot = real(root_, folder, **kwargs)  # the folder's pointer has moved
            if folder.name == failing:
                raise SnapshotError("`dvc push` failed: remote unreachable")
            return snapshot

        return pinning

    monkeypatch.setattr(publishing, "pin", then_fail_for(pin))
    monkeypatch.setattr(publishing, "pin_in_place", then_fail_for(pin_in_place))
    report = build(root, [RAW_DOCUMENTS])
    assert not report.ok and "remote unreachable" in report.failures[0]
    assert pointers(root) == pointers_before
    assert recover_stage_folders(root) == []
    assert tree_digest(root / "data") == data_before
    assert not list((root / "data").glob(".input-pointers-*"))


KILL_DURING_CHECKS = """
import os, signal, sys, threading
from pathlib import Path
import dagster as dg
from corpus_platform.defs import publish
from corpus_platform.runner import run_build

pinned = threading.Event()
real_pin = publish.pin_in_place

def pin_and_tell(*args, **kwargs):
    snapshot = real_pin(*args, **kwargs)  # the candidate's add and push ended (the raw files' too)
    pinned.set()
    return snapshot

def audit_until_the_raw_files_are_pinned_then_die(*args, **kwargs):
    pinned.wait(timeout=300)
    os.kill(os.getpid(), signal.SIGKILL)

publish.pin_in_place = pin_and_tell
publish.audit = audit_until_the_raw_files_are_pinned_then_die
run_build(Path(sys.argv[1]), instance=dg.DagsterInstance.ephemeral(), assets=["raw_documents"])
"""


def test_a_build_killed_during_the_checks_gets_its_raw_pointer_back(built, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    _extra_raw_file(root)
    data_before, pointers_before = tree_digest(root / "data"), pointers(root)

    killed = subprocess.run(
        [sys.executable, "-c", KILL_DURING_CHECKS, str(root)], timeout=600, check=False
    )

    assert killed.returncode == -signal.SIGKILL
    assert pointers(root)["raw.dvc"] != pointers_before["raw.dvc"]  # pinned, never published
    assert (root / "data" / f".staging-{RAW_DOCUMENTS}.dvc").is_file()  # the candidate's pin
    assert recover_stage_folders(root) == [
        "restored the pointers of raw_documents's inputs from an unfinished publish",
        f"removed the unfinished candidate data/.staging-{RAW_DOCUMENTS}",
    ]
    assert pointers(root) == pointers_before
    assert tree_digest(root / "data") == data_before
    report = build(root, [RAW_DOCUMENTS])  # the next build pins and publishes them
    assert report.ok
    assert pointers(root)["raw.dvc"] != pointers_before["raw.dvc"]
