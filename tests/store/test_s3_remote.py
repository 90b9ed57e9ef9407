"""DVC snapshots on an S3-API remote: a real moto server over HTTP, a small DVC project."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus_platform.base.snapshot_remote import SnapshotsConfig
from corpus_platform.store.remotes import RemoteSpec, dvc_settings
from corpus_platform.store.retention import GcPlan, collect
from corpus_platform.store.snapshots import (
    SnapshotError,
    cache_dir,
    ensure_dvc_project,
    ensure_snapshot_remote,
    pin,
    restore,
    snapshot_objects,
)
from tests.s3server import (
    FAKE_SECRET,
    S3Server,
    free_port,
    object_key,
    server_with_bucket,
)

BUCKET = "corpus-store-tests"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from server_with_bucket(tmp_path_factory.mktemp("aws-home"), BUCKET)


def small_project(root: Path, remote: RemoteSpec) -> Path:
    """A DVC project whose default remote is ``remote``, with a two-file folder to pin."""
    folder = root / "data" / "stage"
    folder.mkdir(parents=True)
    (folder / "part-00000.parquet").write_bytes(b"first shard " * 100)
    (folder / "part-00001.parquet").write_bytes(b"second shard " * 100)
    ensure_dvc_project(root, remote, enforce=True)
    return folder


def test_pin_pushes_to_the_bucket_and_restore_pulls_back(s3: S3Server, tmp_path: Path) -> None:
    remote = RemoteSpec(f"s3://{BUCKET}/small", s3.endpoint)
    root = tmp_path / "project"
    folder = small_project(root, remote)
    config = (root / ".dvc" / "config").read_text(encoding="utf-8")
    assert f"url = s3://{BUCKET}/small" in config and f"endpointurl = {s3.endpoint}" in config
    assert FAKE_SECRET not in config and os.environ["AWS_ACCESS_KEY_ID"] not in config
    assert not (root / ".dvc-storage").exists()

    snapshot = pin(root, folder)
    entries, missing = snapshot_objects(root, snapshot)
    assert len(entries) == 2 and not missing
    stored = s3.objects(BUCKET, "small/")
    expected = {object_key("small", md5) for md5 in [snapshot, *(m for _, m in entries)]}
    assert set(stored) == expected
    assert {stored[object_key("small", md5)] for _, md5 in entries} == {m for _, m in entries}

    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    shutil.rmtree(folder)
    shutil.rmtree(cache_dir(root))  # only the bucket holds the bytes now
    assert not snapshot_objects(root, snapshot)[1]  # verified on S3 itself
    restore(root, snapshot, folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_tampered_or_deleted_object_on_s3_is_named(s3: S3Server, tmp_path: Path) -> None:
    root = tmp_path / "project"
    folder = small_project(root, RemoteSpec(f"s3://{BUCKET}/tamper", s3.endpoint))
    snapshot = pin(root, folder)
    entries, _ = snapshot_objects(root, snapshot)
    shutil.rmtree(cache_dir(root))
    (first, first_md5), (_, second_md5) = sorted(entries)
    s3.client.put_object(Bucket=BUCKET, Key=object_key("tamper", first_md5), Body=b"tampered")
    s3.client.delete_object(Bucket=BUCKET, Key=object_key("tamper", second_md5))
    _, missing = snapshot_objects(root, snapshot)
    assert {m.md5 for m in missing} == {first_md5, second_md5}
    with pytest.raises(SnapshotError, match=first_md5) as error:
        restore(root, snapshot, folder)
    assert f"DVC remote 's3' (s3://{BUCKET}/tamper at {s3.endpoint})" in str(error.value)
    assert (folder / first).is_file()  # the folder was left as it was


def test_gc_deletes_only_unreferenced_objects_from_the_bucket(s3: S3Server, tmp_path: Path) -> None:
    root = tmp_path / "project"
    folder = small_project(root, RemoteSpec(f"s3://{BUCKET}/gc", s3.endpoint))
    old = pin(root, folder)
    (folder / "part-00001.parquet").unlink()
    (folder / "part-00002.parquet").write_bytes(b"third shard " * 100)
    new = pin(root, folder)
    old_entries, _ = snapshot_objects(root, old)
    new_entries, _ = snapshot_objects(root, new)
    shared = {m for _, m in old_entries} & {m for _, m in new_entries}
    assert len(shared) == 1  # part-00000 is in both
    only_old = {old} | {m for _, m in old_entries} - shared
    removed = collect(root, GcPlan(keep={new: "newest"}, delete=[old]))
    assert removed == 2 * len(only_old)  # from the cache and from the bucket
    stored = set(s3.objects(BUCKET, "gc/"))
    assert stored == {object_key("gc", m) for m in {new} | {m for _, m in new_entries}}
    assert not {object_key("gc", m) for m in only_old} & stored


def test_an_existing_project_is_switched_to_the_configured_s3_remote(
    s3: S3Server, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    ensure_dvc_project(root, tmp_path / "folder-remote")  # a project as it was before
    assert dvc_settings(root).remote.url == str(tmp_path / "folder-remote")
    wanted = SnapshotsConfig(remote=f"s3://{BUCKET}/switched", endpoint_url=s3.endpoint)
    ensure_snapshot_remote(root, wanted)
    remote = dvc_settings(root).remote
    assert (remote.name, remote.url, remote.endpoint_url) == (
        "s3",
        f"s3://{BUCKET}/switched",
        s3.endpoint,
    )
    config = root / ".dvc" / "config"
    written = config.stat().st_mtime_ns
    ensure_snapshot_remote(root, wanted)  # already so: nothing is rewritten
    assert config.stat().st_mtime_ns == written
    ensure_snapshot_remote(root, SnapshotsConfig())  # unset: .dvc/config decides
    assert dvc_settings(root).remote.url == f"s3://{BUCKET}/switched"


def test_missing_credentials_name_the_remote_and_the_variables(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    folder = small_project(root, RemoteSpec(f"s3://{BUCKET}/nocreds", s3.endpoint))
    snapshot = pin(root, folder, push=False)
    shutil.rmtree(cache_dir(root))
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    expected = f"DVC remote 's3' (s3://{BUCKET}/nocreds at {s3.endpoint}): no credentials"
    with pytest.raises(SnapshotError, match="AWS_SECRET_ACCESS_KEY not set") as error:
        pin(root, folder)
    assert str(error.value).startswith(expected) and "export AWS_ACCESS_KEY_ID" in str(error.value)
    with pytest.raises(SnapshotError, match="AWS_SECRET_ACCESS_KEY not set") as error:
        snapshot_objects(root, snapshot)
    assert str(error.value).startswith(expected)


def test_an_unreachable_endpoint_is_named_with_the_fix(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no retries with backoff: the test stays quick
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    root = tmp_path / "project"
    folder = small_project(root, RemoteSpec(f"s3://{BUCKET}/unreachable", closed))
    with pytest.raises(SnapshotError) as error:
        pin(root, folder)
    message = str(error.value)
    assert message.startswith(
        f"DVC remote 's3' (s3://{BUCKET}/unreachable at {closed}): the endpoint {closed} is "
        "unreachable: start the store, or correct snapshots.endpoint_url in corpus.yaml"
    )
    assert "Could not connect to the endpoint URL" in message  # DVC's own words follow
    shutil.rmtree(cache_dir(root))
    with pytest.raises(SnapshotError, match=f"the endpoint {closed} is unreachable"):
        snapshot_objects(root, "0" * 32 + ".dir")


def test_a_missing_bucket_is_named_with_the_fix(s3: S3Server, tmp_path: Path) -> None:
    root = tmp_path / "project"
    folder = small_project(root, RemoteSpec("s3://no-such-bucket/x", s3.endpoint))
    with pytest.raises(SnapshotError) as error:
        pin(root, folder)
    assert str(error.value).startswith(
        f"DVC remote 's3' (s3://no-such-bucket/x at {s3.endpoint}): bucket 'no-such-bucket' "
        f"does not exist: create it (`aws s3 mb s3://no-such-bucket --endpoint-url {s3.endpoint}`)"
    )
    shutil.rmtree(cache_dir(root))
    with pytest.raises(SnapshotError, match="bucket 'no-such-bucket' does not exist"):
        snapshot_objects(root, "0" * 32 + ".dir")
