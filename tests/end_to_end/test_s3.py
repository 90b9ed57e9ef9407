"""The sample project with its DVC remote on S3 (a real moto server over HTTP): the build pushes
every snapshot to the bucket, and `corpus gc`, `corpus checkout --with-upstream` and `corpus
replay` (from a fresh clone that has only the remote) work against the bucket alone."""

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from corpus_platform.base.names import STAGES
from corpus_platform.store.datasets import stage_path
from corpus_platform.store.registry import list_snapshots
from corpus_platform.store.releases import record_release
from corpus_platform.store.snapshots import cache_dir, current_snapshot, snapshot_objects
from tests.conftest import build, corpus_cli, make_project, set_config, tree_digest
from tests.defs.test_golden_snapshots import EXPECTED
from tests.s3server import FAKE_SECRET, S3Server, object_key, server_with_bucket

BUCKET = "corpus-e2e"
PREFIX = "sample"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from server_with_bucket(tmp_path_factory.mktemp("aws-home"), BUCKET)


@pytest.fixture(scope="module")
def s3_built(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample project, built once with its DVC remote in the bucket."""
    remote = {"remote": f"s3://{BUCKET}/{PREFIX}", "endpoint_url": s3.endpoint}
    root = make_project(tmp_path_factory.mktemp("s3") / "project", snapshots=remote)
    report = build(root)
    assert report.ok, report.render()
    return root


def pinned_ids(root: Path) -> set[str]:
    """Every snapshot id the registry names: stages and pinned inputs."""
    ids = set()
    for entry in list_snapshots(root):
        ids |= {entry["snapshot_id"], *entry["upstream_snapshots"].values()}
    return ids


def object_ids(root: Path, snapshots: set[str]) -> set[str]:
    """The DVC objects of ``snapshots``: their directory listings and every file."""
    found = set()
    for snapshot in snapshots:
        entries, missing = snapshot_objects(root, snapshot)
        assert not missing, missing
        found |= {snapshot, *(md5 for _, md5 in entries)}
    return found


def copy_project(s3: S3Server, source: Path, target: Path, prefix: str) -> Path:
    """A copy of the project whose remote is a copy of the bucket prefix: tests that delete
    leave the shared one alone."""
    shutil.copytree(source, target)
    assert s3.copy_prefix(BUCKET, PREFIX, prefix) > 0
    set_config(target, snapshots={"remote": f"s3://{BUCKET}/{prefix}"})
    return target


def test_the_build_pushes_every_snapshot_to_the_bucket(s3: S3Server, s3_built: Path) -> None:
    root = s3_built
    ids = {s: current_snapshot(root, stage_path(root, s)) for s in STAGES}
    assert ids == EXPECTED  # the remote changes nothing about the datasets
    wanted = object_ids(root, pinned_ids(root))
    stored = s3.objects(BUCKET, f"{PREFIX}/")
    assert {object_key(PREFIX, md5) for md5 in wanted} <= set(stored)
    assert all(stored[object_key(PREFIX, md5)] == md5.removesuffix(".dir") for md5 in wanted)
    assert not (root / ".dvc-storage").exists()
    config = (root / ".dvc" / "config").read_text(encoding="utf-8")
    assert f"s3://{BUCKET}/{PREFIX}" in config and FAKE_SECRET not in config


def test_gc_deletes_unreferenced_objects_from_the_bucket(
    s3: S3Server, s3_built: Path, tmp_path: Path
) -> None:
    root = copy_project(s3, s3_built, tmp_path / "copy", "gc")
    old = {current_snapshot(root, stage_path(root, s)) for s in ("training_mix", STAGES[-1])}
    set_config(root, mix={"total_rows": 1000})
    rebuilt = build(root, ["training_mix", STAGES[-1]])
    assert rebuilt.ok, rebuilt.render()
    record_release(root)  # the rebuilt chain is the newest release: the built one is older
    new = {rebuilt.materialized[s]["snapshot_id"] for s in ("training_mix", STAGES[-1])}
    assert not new & old and f"{BUCKET}/gc" in (root / ".dvc/config").read_text()
    kept = object_ids(root, pinned_ids(root) - old)
    only_old = object_ids(root, old) - kept
    assert only_old and set(s3.objects(BUCKET, "gc/")) >= {object_key("gc", m) for m in only_old}

    done = corpus_cli(root, "gc", "--keep", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(f"delete {snapshot}" in done.stdout for snapshot in old)
    assert "deleted 2 snapshot(s)" in done.stdout
    stored = set(s3.objects(BUCKET, "gc/"))
    assert not {object_key("gc", m) for m in only_old} & stored  # gone from the bucket
    assert {object_key("gc", m) for m in kept} <= stored  # everything still used stays
    assert {object_key(PREFIX, m) for m in only_old} <= set(s3.objects(BUCKET, f"{PREFIX}/"))


def test_checkout_with_upstream_restores_everything_from_the_bucket(
    s3: S3Server, s3_built: Path, tmp_path: Path
) -> None:
    root = copy_project(s3, s3_built, tmp_path / "copy", "checkout")
    folders = (*STAGES, "raw", "eval")
    before = {name: tree_digest(root / "data" / name) for name in folders}
    last = current_snapshot(root, stage_path(root, STAGES[-1]))
    shutil.rmtree(root / "data")
    shutil.rmtree(cache_dir(root))  # no local copy of any byte: only the bucket has them
    assert not (root / ".dvc-storage").exists()

    done = corpus_cli(root, "checkout", last, "--with-upstream")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("restored ") == len(STAGES) + 2
    assert {name: tree_digest(root / "data" / name) for name in folders} == before
    assert f"{BUCKET}/checkout" in (root / ".dvc" / "config").read_text(encoding="utf-8")


def fresh_clone(source: Path, target: Path) -> Path:
    """What a git clone of the project holds: corpus.yaml, the DVC config and pointers, and the
    registry. No data, no DVC cache."""
    kept = ["corpus.yaml", ".dvcignore", ".dvc/config", ".corpus/registry.jsonl"]
    kept += [p.relative_to(source).as_posix() for p in (source / "data").rglob("*.dvc")]
    for name in kept:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target / name)
    return target


def test_replay_from_a_fresh_clone_with_only_the_remote(
    s3: S3Server, s3_built: Path, tmp_path: Path
) -> None:
    clone = fresh_clone(s3_built, tmp_path / "clone")
    files = sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*") if p.is_file())
    assert "data/raw.dvc" in files and "data/training_mix.dvc" in files
    assert not [f for f in files if f.endswith(".parquet") or "/cache/" in f]
    last = current_snapshot(clone, stage_path(clone, STAGES[-1]))

    done = corpus_cli(clone, "replay", last)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: every stage rebuilt byte-identically" in done.stdout
    lines = done.stdout.splitlines()
    for stage in STAGES:
        line = next(line for line in lines if line.startswith(f"{stage} "))
        assert line.split()[1:] == [EXPECTED[stage], "identical"]
    assert not (clone / ".scratch" / f"replay-{last[:12]}").exists()


def test_a_clone_without_dvc_config_takes_the_remote_from_corpus_yaml(
    s3_built: Path, tmp_path: Path
) -> None:
    clone = fresh_clone(s3_built, tmp_path / "clone")
    shutil.rmtree(clone / ".dvc")
    raw_documents = current_snapshot(clone, stage_path(clone, "raw_documents"))
    done = corpus_cli(clone, "checkout", raw_documents)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree_digest(stage_path(clone, "raw_documents")) == tree_digest(
        stage_path(s3_built, "raw_documents")
    )
    assert f"s3://{BUCKET}/{PREFIX}" in (clone / ".dvc" / "config").read_text(encoding="utf-8")


def test_commands_without_credentials_name_the_remote_and_the_fix(
    s3_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = fresh_clone(s3_built, tmp_path / "clone")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    mix = current_snapshot(clone, stage_path(clone, "training_mix"))
    done = corpus_cli(clone, "checkout", mix)
    assert done.returncode == 2
    assert f"DVC remote 's3' (s3://{BUCKET}/{PREFIX} at " in done.stderr
    assert "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY not set" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (clone / "data" / "training_mix").exists()

    shutil.copytree(s3_built / "data" / "raw", clone / "data" / "raw")
    (tmp_path / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    done = corpus_cli(clone, "run")  # refused before any stage is built
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"DVC remote 's3' (s3://{BUCKET}/{PREFIX} at " in done.stderr
    assert "no credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY not set)" in done.stderr
    assert not (clone / "data" / "raw_documents").exists()


def test_a_bad_snapshots_section_is_named(s3_built: Path, tmp_path: Path) -> None:
    clone = fresh_clone(s3_built, tmp_path / "clone")
    data = yaml.safe_load((clone / "corpus.yaml").read_text(encoding="utf-8"))
    data["snapshots"]["secret_access_key"] = FAKE_SECRET
    (clone / "corpus.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    done = corpus_cli(clone, "checkout", "anything")
    assert done.returncode == 2
    assert "snapshots: ['secret_access_key']: credentials never go into corpus.yaml" in done.stderr
    assert FAKE_SECRET not in done.stderr
