"""DVC snapshots in a real DVC project on tmp_path, and provenance fields."""

from pathlib import Path

import pytest

from corpus_platform.store.provenance import ProvenanceError, environment_digest, require_provenance
from corpus_platform.store.registry import list_snapshots, record_snapshot
from corpus_platform.store.snapshots import SnapshotError, current_snapshot, ensure_dvc_project, pin


def test_pin_gives_content_addressed_ids_and_pushes(tmp_path: Path) -> None:
    root, remote = tmp_path / "project", tmp_path / "remote"
    folder = root / "data" / "stage"
    folder.mkdir(parents=True)
    ensure_dvc_project(root, remote)
    (folder / "part-00000.parquet").write_bytes(b"first")
    first = pin(root, folder)
    assert first.endswith(".dir") and current_snapshot(root, folder) == first
    assert any(p.is_file() for p in remote.rglob("*"))  # objects reached the remote
    (folder / "part-00000.parquet").write_bytes(b"second")
    second = pin(root, folder)
    assert second != first
    (folder / "part-00000.parquet").write_bytes(b"first")
    assert pin(root, folder) == first


def test_pin_outside_a_dvc_project_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "stage").mkdir()
    with pytest.raises(SnapshotError, match="dvc add"):
        pin(tmp_path, tmp_path / "stage", push=False)


def test_provenance_gate() -> None:
    complete = {
        "snapshot_id": "abc.dir",
        "upstream_snapshots": {"raw": "def.dir"},
        "config_hash": "c",
        "code_version": "deadbeef",
        "code_dirty": False,
        "environment_digest": environment_digest(),
    }
    require_provenance(complete)
    with pytest.raises(ProvenanceError, match="environment_digest"):
        require_provenance({**complete, "environment_digest": ""})


def test_registry_appends_and_filters(tmp_path: Path) -> None:
    record_snapshot(tmp_path, {"asset": "a", "snapshot_id": "1"})
    record_snapshot(tmp_path, {"asset": "b", "snapshot_id": "2"})
    record_snapshot(tmp_path, {"asset": "a", "snapshot_id": "3"})
    assert [e["snapshot_id"] for e in list_snapshots(tmp_path, "a")] == ["1", "3"]
    assert len(list_snapshots(tmp_path)) == 3
