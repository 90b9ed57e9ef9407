"""Digests of files: DVC's MD5 of one file, any per-file digest of many files on every core, and
the state of a folder's files (what tells that none changed, without reading them).

hashlib lets go of the GIL while it hashes a block, so threads hash as many files at once as
there are cores; the results come back in the order of the paths.

Each MD5 this process computes is remembered by the file's identity as DVC's own state knows a
file (device, inode, size, modification time), taken when the file was opened and found the
same when it was read to the end: :func:`known_md5` gives it back while the file is unchanged,
so that the pin of a stage whose generation digests hashed its files hands those MD5s to DVC
instead of DVC reading every byte again (:func:`corpus_platform.store.snapshots.pin`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

BLOCK = 1 << 20  # bytes read and hashed at a time

T = TypeVar("T")


class Hasher(Protocol):
    """A ``hashlib`` digest being fed."""

    def update(self, data: bytes, /) -> None: ...


Identity = tuple[int, int, int, int]  # (device, inode, size, mtime in ns): DVC's state key
KNOWN_LIMIT = 1 << 16  # identities remembered at most (then forgotten all at once)
_known: dict[Identity, str] = {}


def identity(info: os.stat_result) -> Identity:
    """A file's identity as DVC's state keys it: a file written since has another."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def file_md5(path: Path) -> str:
    """The MD5 of a file's bytes (what DVC records for it), remembered for :func:`known_md5`
    when the file was the same (:func:`identity`) from its opening to its last byte."""
    return hashed_md5(path)[0]


def hashed_md5(path: Path, *also: Hasher) -> tuple[str, Identity | None]:
    """:func:`file_md5` and the identity of the file it hashed (None when the file changed
    while it was read), which a worker hands to the process that pins (:func:`remember`).
    ``also``: other ``hashlib`` digests fed the same bytes (one read for several digests)."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        opened = identity(os.fstat(handle.fileno()))
        while chunk := handle.read(BLOCK):
            digest.update(chunk)
            for other in also:
                other.update(chunk)
        read = identity(os.fstat(handle.fileno()))
    md5 = digest.hexdigest()
    if opened != read:
        return md5, None
    remember(read, md5)
    return md5, read


def remember(hashed: Identity, md5: str) -> None:
    """Remember ``md5`` for the file of identity ``hashed``: only an MD5 :func:`hashed_md5`
    computed from that file's bytes (here or in a worker), never one a manifest claims."""
    if len(_known) >= KNOWN_LIMIT:
        _known.clear()
    _known[hashed] = md5


def known_md5(path: Path) -> str | None:
    """The MD5 :func:`file_md5` computed in this process for ``path``'s file as it is now (same
    device, inode, size and modification time); None when it hashed no such file."""
    found = known_hash(path)
    return None if found is None else found[0]


def known_hash(path: Path) -> tuple[str, Identity] | None:
    """:func:`known_md5` with the identity it holds for (what a reader of the MD5 compares the
    file with again before trusting it)."""
    try:
        now = identity(path.stat())
    except OSError:
        return None
    md5 = _known.get(now)
    return None if md5 is None else (md5, now)


def known_md5s(path: Path) -> dict[str, tuple[str, Identity]]:
    """:func:`known_hash` of ``path`` (a file) or of every file under it (a folder), by
    absolute path; files this process did not hash as they are now are left out."""
    files = [path] if path.is_file() else [Path(d) / n for d, _, ns in os.walk(path) for n in ns]
    known = {str(file.absolute()): known_hash(file) for file in files}
    return {name: found for name, found in sorted(known.items()) if found is not None}


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
