import hashlib
from pathlib import Path

from corpus_platform.base.files import BLOCK, digest_files, file_md5


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
