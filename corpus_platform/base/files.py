"""Digests of files: DVC's MD5 of one file, any per-file digest of many files on every core, and
the state of a folder's files (what tells that none changed, without reading them).

hashlib lets go of the GIL while it hashes a block, so threads hash as many files at once as
there are cores; the results come back in the order of the paths.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

BLOCK = 1 << 20  # bytes read and hashed at a time

T = TypeVar("T")


def file_md5(path: Path) -> str:
    """The MD5 of a file's bytes (what DVC records for it)."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(BLOCK):
            digest.update(chunk)
    return digest.hexdigest()


def digest_files(paths: list[Path], digest: Callable[[Path], T] = file_md5) -> list[T]:
    """``digest`` of every path, in the order of ``paths``, as many files at once as there are
    cores."""
    workers = max(1, min(len(paths), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="digest") as pool:
        return list(pool.map(digest, paths))


FileState = tuple[str, int, int]  # (path relative to the folder, size in bytes, mtime in ns)


def folder_state(folder: Path) -> tuple[FileState, ...]:
    """Every file under ``folder`` (recursively, sorted) with its size and modification time:
    two equal states mean no file was added, removed, or written in between. A rename of the
    folder, a hard link to a file or a change of its mode leaves the state as it was."""
    states = []
    for directory, _, names in os.walk(folder):
        for name in names:
            path = Path(directory) / name
            info = path.stat()
            states.append((path.relative_to(folder).as_posix(), info.st_size, info.st_mtime_ns))
    return tuple(sorted(states))
