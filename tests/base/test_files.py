import hashlib
import os
from pathlib import Path

from corpus_platform.base.files import (
    BLOCK,
    digest_files,
    file_md5,
    folder_state,
    identity,
    known_md5,
    known_md5s,
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_file_md5_is_the_md5_of_the_bytes_across_block_boundaries(tmp_path: Path) -> None:
    sizes = [0, 1, BLOCK - 1, BLOCK, 2 * BLOCK + 7]
    for size in sizes:
        data = bytes((i * 31 + size) % 256 for i in range(size))
        path = write(tmp_path / f"f{size}", data)
        assert file_md5(path) == hashlib.md5(data).hexdigest(), size


def test_digest_files_returns_each_files_digest_in_the_order_of_the_paths(tmp_path: Path) -> None:
    paths = [write(tmp_path / f"{i:02d}", str(i).encode() * (i + 1) * 1000) for i in range(12)]
    paths.reverse()
    assert digest_files(paths) == [hashlib.md5(p.read_bytes()).hexdigest() for p in paths]
    assert digest_files(paths, lambda p: p.stat().st_size) == [p.stat().st_size for p in paths]
    assert digest_files([]) == []


def test_folder_state_changes_with_a_written_or_added_file_not_with_a_rename_or_mode(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "stage"
    (folder / "sub").mkdir(parents=True)
    write(folder / "part-00000.parquet", b"rows")
    write(folder / "sub" / "card.md", b"card")
    before = folder_state(folder)
    assert [name for name, _, _ in before] == ["part-00000.parquet", "sub/card.md"]

    (folder / "part-00000.parquet").chmod(0o444)
    os.link(folder / "part-00000.parquet", tmp_path / "cache-object")
    moved = folder.rename(tmp_path / "published")
    assert folder_state(moved) == before

    write(moved / "sub" / "extra.txt", b"")
    assert folder_state(moved) != before
    (moved / "sub" / "extra.txt").unlink()
    assert folder_state(moved) == before
    stamp = (moved / "sub" / "card.md").stat().st_mtime_ns
    write(moved / "sub" / "card.md", b"CARD")  # the same size, written again
    os.utime(moved / "sub" / "card.md", ns=(stamp, stamp + 1))  # (a clock tick may be 4 ms)
    assert folder_state(moved) != before


def test_a_hashed_file_is_known_until_it_is_written_again(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    hashed, other = write(tmp_path / "a" / "hashed", b"rows" * 1000), tmp_path / "a" / "other"
    write(other, b"never hashed")
    assert known_md5(hashed) is None
    md5 = file_md5(hashed)
    linked = tmp_path / "linked"
    linked.hardlink_to(hashed)  # the same file: the same bytes
    assert known_md5(hashed) == known_md5(linked) == md5
    found = {str(hashed.absolute()): (md5, identity(hashed.stat()))}
    assert known_md5s(tmp_path / "a") == known_md5s(hashed) == found
    stat = hashed.stat()
    write(hashed, b"ROWS" * 1000)  # same size, new bytes
    os.utime(hashed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert known_md5(hashed) is None and known_md5s(tmp_path / "a") == {}
    assert known_md5(tmp_path / "missing") is None
