"""DVC snapshots in a real DVC project on tmp_path, and provenance fields."""

import json
import os
from pathlib import Path

import pytest

from corpus_platform.base import files as files_module
from corpus_platform.base.files import file_md5
from corpus_platform.store import snapshots
from corpus_platform.store.dvc_process import seed_hashes
from corpus_platform.store.pointers import move_pointer
from corpus_platform.store.provenance import ProvenanceError, environment_digest, require_provenance
from corpus_platform.store.registry import list_snapshots, record_snapshot
from corpus_platform.store.remotes import DvcSettings, RemoteSpec, dvc_settings, object_path
from corpus_platform.store.snapshots import (
    HARDLINK_FIRST,
    LINK_TYPES,
    ObjectCheck,
    SnapshotError,
    cache_dir,
    current_snapshot,
    ensure_dvc_project,
    pin,
    pin_in_place,
    reflink_works,
)


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


def _stage_with_two_files(root: Path, name: str) -> Path:
    folder = root / "data" / name
    folder.mkdir(parents=True)
    for index in range(2):
        (folder / f"part-{index:05d}.parquet").write_bytes(f"{name} {index}".encode() * 1000)
    return folder


def test_new_projects_link_stages_into_the_cache_and_leave_raw_files_alone(tmp_path: Path) -> None:
    root = tmp_path / "project"
    ensure_dvc_project(root, tmp_path / "remote")
    types = dvc_settings(root).config["cache"]["type"]
    expected = LINK_TYPES if reflink_works(root) else HARDLINK_FIRST
    assert (",".join(types) if isinstance(types, list) else types) == expected
    # hashing on every core, a machine-local setting (config.local is not shared)
    assert dvc_settings(root).config["core"]["checksum_jobs"] == (os.cpu_count() or 1)
    assert "checksum_jobs" in (root / ".dvc" / "config.local").read_text(encoding="utf-8")
    stage, raw = _stage_with_two_files(root, "stage"), _stage_with_two_files(root, "raw")
    raw_before = [(p.stat().st_ino, p.stat().st_mode, p.stat().st_nlink) for p in raw.iterdir()]
    pin(root, stage, link=True)
    pin(root, raw)
    cache = cache_dir(root)
    cached = {p.stat().st_ino for p in cache.rglob("*") if p.is_file()}
    for path in stage.iterdir():  # the stage's bytes are stored once: linked and read-only
        assert not path.stat().st_mode & 0o222
        assert path.stat().st_ino in cached or path.stat().st_nlink == 1  # hard link or clone
    raw_after = [(p.stat().st_ino, p.stat().st_mode, p.stat().st_nlink) for p in raw.iterdir()]
    assert raw_after == raw_before  # raw inputs: copied into the cache, never relinked
    if not reflink_works(root):  # ext4 and the like: hard links, made by `dvc add` itself; the
        # folder remote's object is a third name of the inode, the raw file's copy a second
        assert all(p.stat().st_nlink == 3 for p in stage.iterdir())
        raw_objects = [object_path(cache, file_md5(p)) for p in raw.iterdir()]
        assert all(o.stat().st_nlink == 2 for o in raw_objects)


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


def test_object_check_hashes_a_linked_file_once_and_sees_it_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    ensure_dvc_project(root, tmp_path / "remote")
    stage = _stage_with_two_files(root, "stage")
    snapshot = pin(root, stage, link=True)
    hashed: list[Path] = []

    def counting_md5(path: Path) -> str:
        hashed.append(path)
        return file_md5(path)

    monkeypatch.setattr(snapshots, "file_md5", counting_md5)
    objects = ObjectCheck(root)
    entries, missing = objects.snapshot(snapshot)
    assert not missing and len(entries) == 2
    workspace = {relpath: objects.md5_of(stage / relpath) for relpath, _ in entries}
    assert workspace == dict(entries)  # the files now hash to their pinned md5s
    if not reflink_works(root):  # hard links: the cache object and the file are one inode
        assert len(hashed) == 1 + 2  # the listing, then each file once for both
    path = stage / entries[0][0]
    path.unlink()  # a new file in its place (DVC's links are read-only)
    path.write_bytes(b"changed")
    assert objects.md5_of(path) == file_md5(path) != dict(entries)[entries[0][0]]


def test_object_check_takes_an_md5_this_process_hashed_from_the_file_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file hashed from its bytes earlier in this process (a raw file while it was ingested)
    is not read again while its identity holds; written since, it is."""
    path = tmp_path / "raw.jsonl"
    path.write_bytes(b"raw rows\n" * 1000)
    md5 = file_md5(path)
    hashed: list[Path] = []
    monkeypatch.setattr(snapshots, "file_md5", lambda p: hashed.append(p) or file_md5(p))
    assert ObjectCheck.md5_of(path) == md5 and hashed == []
    path.write_bytes(b"other rows\n" * 1000)
    assert ObjectCheck.md5_of(path) == file_md5(path) != md5 and hashed == [path]


def test_a_folder_pinned_in_place_then_renamed_gets_the_pointer_dvc_would_write(
    tmp_path: Path,
) -> None:
    root, remote = tmp_path / "project", tmp_path / "remote"
    ensure_dvc_project(root, remote)
    staged, final = root / "data" / ".staging-stage", root / "data" / "stage"
    (staged / "sub").mkdir(parents=True)
    (staged / "part-00000.parquet").write_bytes(b"rows")
    (staged / "sub" / "card.md").write_text("a card")
    inode = (staged / "part-00000.parquet").stat().st_ino

    snapshot = pin_in_place(root, staged)

    assert (staged / "part-00000.parquet").stat().st_ino == inode  # linked, never replaced
    assert (staged / "part-00000.parquet").read_bytes() == b"rows"
    staged.rename(final)
    assert move_pointer(staged, final) == snapshot
    assert not (root / "data" / ".staging-stage.dvc").exists()
    moved = (root / "data" / "stage.dvc").read_bytes()
    assert pin(root, final, link=True) == snapshot  # what `dvc add` of the folder says
    assert (root / "data" / "stage.dvc").read_bytes() == moved
    assert any(p.is_file() for p in remote.rglob("*"))  # pushed while still the candidate


@pytest.mark.parametrize("cache_type", [HARDLINK_FIRST, LINK_TYPES, "reflink,copy", "copy"])
def test_pinning_in_place_links_each_file_into_the_cache_where_hard_links_are_allowed(
    tmp_path: Path, cache_type: str
) -> None:
    """Beside the checks a candidate's bytes are stored once (its files become the cache
    objects' inodes, read-only) where the cache types allow hard links and the filesystem
    cannot clone, and copied where they do not; either way no file is moved, replaced or
    changed."""
    root, remote = tmp_path / "project", tmp_path / "remote"
    ensure_dvc_project(root, remote)
    snapshots._dvc(root, "config", "cache.type", cache_type)
    staged = root / "data" / ".staging-stage"
    staged.mkdir(parents=True)
    files = [staged / "part-00000.parquet", staged / "part-00001.parquet"]
    for number, path in enumerate(files):
        path.write_bytes(f"rows of shard {number}".encode())
    before = [(p.stat().st_ino, p.stat().st_mtime_ns) for p in files]

    pin_in_place(root, staged)

    assert [(p.stat().st_ino, p.stat().st_mtime_ns) for p in files] == before
    cached = [object_path(cache_dir(root), file_md5(p)) for p in files]
    linked = [c.stat().st_ino == p.stat().st_ino for c, p in zip(cached, files, strict=True)]
    hard_linked = "hardlink" in cache_type and not reflink_works(root)
    assert linked == [hard_linked] * 2
    assert [c.read_bytes() for c in cached] == [p.read_bytes() for p in files]
    pushed = [object_path(remote, file_md5(p)) for p in files]
    assert [r.read_bytes() for r in pushed] == [p.read_bytes() for p in files]
    # the folder remote's objects: the cache objects' inodes where hard links are allowed
    shared = [r.stat().st_ino == c.stat().st_ino for r, c in zip(pushed, cached, strict=True)]
    assert shared == [hard_linked] * 2
    assert not any(r.stat().st_mode & 0o222 for r in pushed)  # read-only, as DVC leaves them


def test_only_a_folder_remote_of_a_project_that_allows_hard_links_gets_linked_objects(
    tmp_path: Path,
) -> None:
    folder, bucket = RemoteSpec(str(tmp_path / "remote")), RemoteSpec("s3://bucket/corpus")
    for remote, types, linked in [
        (folder, "hardlink,copy", True),
        (folder, ["reflink", "hardlink", "copy"], True),
        (folder, "reflink,copy", False),
        (folder, "copy", False),
        (folder, None, False),
        (bucket, "hardlink,copy", False),
        (None, "hardlink,copy", False),
    ]:
        config = {"cache": {"type": types} if types else {}}
        settings = DvcSettings(tmp_path, tmp_path / "cache", remote, config, {})
        assert settings.push_links() is linked, (remote, types)


def test_a_pin_takes_the_md5s_this_process_made_of_the_files_instead_of_reading_them(
    tmp_path: Path,
) -> None:
    """The MD5s a stage computed of its files (its generation digest) go to DVC's state before
    the add: the snapshot is the one DVC gets by hashing every byte, and a file whose MD5 is
    known is not read again (shown with a planted wrong MD5, which DVC then records)."""
    root = tmp_path / "project"
    ensure_dvc_project(root, tmp_path / "remote")

    def stage(name: str) -> list[Path]:
        (root / "data" / name).mkdir(parents=True)
        files = [root / "data" / name / f"part-{i:05d}.parquet" for i in range(2)]
        for index, path in enumerate(files):
            path.write_bytes(f"rows of shard {index}".encode() * 1000)
        return files

    stage("stage")
    read_by_dvc = pin(root, root / "data" / "stage", push=False)
    for path in stage("again"):
        file_md5(path)  # as a stage's generation digest does
    assert pin(root, root / "data" / "again", push=False) == read_by_dvc
    first, second = stage("planted")
    file_md5(first)
    files_module._known[files_module.identity(first.stat())] = "0" * 32
    listing = object_path(cache_dir(root), pin(root, first.parent, push=False)).read_text()
    assert '"md5": "00000000000000000000000000000000"' in listing
    assert file_md5(second) in listing  # the file this process did not hash: read by DVC


def test_dvc_is_not_handed_the_md5_of_a_file_written_since_it_was_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DVC child looks at each file again before it records a handed-over MD5: a file
    written between the pin's look and the child's (another size here) is read by DVC."""
    root = tmp_path / "project"
    ensure_dvc_project(root, tmp_path / "remote")
    folder = root / "data" / "stage"
    folder.mkdir(parents=True)
    path = folder / "part-00000.parquet"
    path.write_bytes(b"rows as hashed")
    file_md5(path)
    stale = {str(path.absolute()): [file_md5(path), *files_module.identity(path.stat())]}
    path.write_bytes(b"rows as written afterwards")
    monkeypatch.chdir(root)
    assert seed_hashes(json.dumps(stale)) == 0
    snapshot = pin(root, folder, push=False)
    listing = object_path(cache_dir(root), snapshot).read_text()
    assert file_md5(path) in listing


def test_moving_a_pointer_that_is_missing_or_names_another_folder_fails(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(SnapshotError, match="no DVC pointer"):
        move_pointer(data / ".staging-a", data / "a")
    (data / ".staging-a.dvc").write_text("outs:\n- md5: 0123.dir\n  path: b\n")
    with pytest.raises(SnapshotError, match="not the pointer of one folder"):
        move_pointer(data / ".staging-a", data / "a")
    assert not (data / "a.dvc").exists()


def test_pinning_in_place_never_replaces_a_file_linked_to_another_inode(tmp_path: Path) -> None:
    """An append's candidate hard-links published files; where the cache holds their object as
    another inode, a linking `dvc add` deletes and relinks the file, which a check reading it
    then does not find. The pin beside the checks leaves every file as it is."""
    root, remote = tmp_path / "project", tmp_path / "remote"
    ensure_dvc_project(root, remote)
    published, staged = root / "data" / "stage", root / "data" / ".staging-stage"
    published.mkdir(parents=True)
    (published / "part-00000.parquet").write_bytes(b"published rows")
    pin(root, published)  # copied into the cache: the object is another inode
    staged.mkdir()
    (staged / "part-00000.parquet").hardlink_to(published / "part-00000.parquet")
    inode = (staged / "part-00000.parquet").stat().st_ino

    pin_in_place(root, staged)

    assert (staged / "part-00000.parquet").stat().st_ino == inode
    assert (staged / "part-00000.parquet").read_bytes() == b"published rows"
