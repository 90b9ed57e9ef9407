"""corpus_platform.export's file digests (the release's SHA-256 and MD5 of each file)."""

import hashlib
from pathlib import Path

from corpus_platform.base import files
from corpus_platform.export import hash_file


def test_a_release_file_is_read_once_for_both_digests_and_its_known_md5_is_reused(
    tmp_path: Path,
) -> None:
    data = bytes(range(256)) * 9000
    fresh, hashed = tmp_path / "fresh.tar", tmp_path / "hashed.tar"
    fresh.write_bytes(data)
    hashed.write_bytes(data)
    expected = (hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest())
    assert hash_file(fresh) == expected
    # a shard the build hashed: its MD5 is taken as read (planted here to show it is not read)
    files.remember(files.identity(hashed.stat()), "f" * 32)
    assert hash_file(hashed) == (expected[0], "f" * 32)
    hashed.write_bytes(data + b"!")  # rewritten: no longer the file that was hashed
    assert hash_file(hashed)[1] == hashlib.md5(data + b"!").hexdigest()
