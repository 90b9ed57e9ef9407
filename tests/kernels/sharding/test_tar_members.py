"""The audit's own tar reader against the standard library's, and what it refuses."""

import io
import tarfile
from pathlib import Path

import pytest

from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.base.shards import read_json
from corpus_platform.kernels.sharding.audit import tar_members, verify_shard
from tests.shardtools import make_shards


def _tars(folder: Path) -> list[Path]:
    shards = read_json(folder / SHARDS_MANIFEST)["shards"]
    return [folder / e["name"] for e in shards if e["format"] == "webdataset"]


def _stdlib_members(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as archive:
        return [(m.name, archive.extractfile(m).read()) for m in archive]


def _write_tar(path: Path, members: list[tuple[str, bytes]], **options: object) -> Path:
    with tarfile.open(path, "w", **options) as archive:
        for name, payload in members:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    return path


def test_reads_every_member_the_standard_library_reads(tmp_path: Path) -> None:
    tars = _tars(make_shards(tmp_path, max_samples=40))
    assert len(tars) > 1
    for path in tars:
        members = list(tar_members(path))
        assert members == _stdlib_members(path)
        assert {name.rsplit(".", 1)[1] for name, _ in members} == {"json", "txt"}
    # a long name goes to the ustar prefix field; an empty payload has no data block
    long_name = f"{'d' * 120}/{'k' * 90}.txt"
    members = [(long_name, b"x" * 513), ("e.json", b"")]
    odd = _write_tar(tmp_path / "odd.tar", members, format=tarfile.USTAR_FORMAT)
    assert list(tar_members(odd)) == _stdlib_members(odd)


def test_refuses_what_the_platform_never_writes(tmp_path: Path) -> None:
    good = _write_tar(tmp_path / "good.tar", [("a.json", b"{}"), ("a.txt", b"text")])
    pax = _write_tar(tmp_path / "pax.tar", [("\u00e9.txt", b"x")], format=tarfile.PAX_FORMAT)
    with pytest.raises(ValueError, match="member type b'x', not a regular file"):
        list(tar_members(pax))
    data = good.read_bytes()
    cases = {
        "truncated": (data[:700], "truncated"),
        "no end": (data[:2048], "without a zero block"),
        "checksum": (data[:10] + b"Z" + data[11:], "checksum does not match"),
        "not ustar": (data[:257] + b"xxxxx" + data[262:], "not a ustar header"),
        "empty": (b"", "empty file"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / f"{name}.tar"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            list(tar_members(path))


def test_a_damaged_tar_is_a_finding_of_the_manifest_check(tmp_path: Path) -> None:
    folder = make_shards(tmp_path)
    manifest = read_json(folder / SHARDS_MANIFEST)
    entry = next(e for e in manifest["shards"] if e["format"] == "webdataset")
    path = folder / entry["name"]
    data = bytearray(path.read_bytes())
    data[148:156] = b"0000000\0"  # the first header's checksum
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    entries = {entry["shard"]: [e for e in manifest["shards"] if e["shard"] == entry["shard"]]}
    problems = verify_shard(entry["shard"], folder, entries)
    assert f"{path.name}: unreadable: ValueError: {path.name}: header at byte 0: checksum" in (
        "\n".join(problems)
    )
