"""One build at a time per project: an advisory lock on ``.corpus/build.lock``.

The lock is an ``flock`` on the file, so the kernel releases it when its holder dies, even by
``kill -9``. While held, the file names the holder (pid, Dagster run id, start time, host); a
clean release empties it. A file that still names a holder when the lock is free is the trace of
a build that died: the next holder gets it back (:attr:`BuildLock.crashed`) to mark that run
failed and to clean what it left.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from corpus_platform.base.errors import CorpusError

LOCK_FILE = Path(".corpus") / "build.lock"
LOCKED = "another build or command holds the project lock"  # in every refusal


class ProjectBusy(CorpusError):
    """Another build of the same project holds the lock."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the build lock."""

    pid: int
    run_id: str
    started: str
    host: str

    def describe(self) -> str:
        """One line for an error message."""
        return f"pid {self.pid} on {self.host}, run {self.run_id}, started {self.started}"


@dataclass(frozen=True)
class BuildLock:
    """A held lock; ``crashed`` names the holder of a build that died without releasing it."""

    holder: Holder
    crashed: Holder | None


def busy(root: Path, holder: Holder | None) -> ProjectBusy:
    """The error for a second build of the project at ``root``, naming the holder."""
    return ProjectBusy(
        f"{root}: {LOCKED} "
        f"({holder.describe() if holder else 'unknown holder'}); wait for it (`--wait`) or stop "
        "it first"
    )


def lock_path(root: Path) -> Path:
    """The lock file of the project at ``root``."""
    return root / LOCK_FILE


def _read_holder(fd: int) -> Holder | None:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 4096).decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        return Holder(**json.loads(text))
    except (ValueError, TypeError):
        return Holder(pid=0, run_id="unknown", started="unknown", host="unknown")


def current_holder(root: Path) -> Holder | None:
    """The holder of the project's lock, or None when no build runs."""
    path = lock_path(root)
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or Holder(0, "unknown", "unknown", "unknown")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def wait_until_free(root: Path, poll_seconds: float = 2.0) -> None:
    """Block until no build holds the project's lock."""
    while current_holder(root) is not None:
        time.sleep(poll_seconds)


@contextmanager
def project_lock(
    root: Path, run_id: str, *, wait: bool = False, keep_crash_trace: bool = False
) -> Iterator[BuildLock]:
    """Hold the project's lock for the duration of the block: a build, or any command that
    writes ``data/``, the ``.dvc`` pointers, the registry, DVC's cache or its remote.

    Args:
        root: The project folder.
        run_id: What holds it: a Dagster run id, or the command (``corpus gc``).
        wait: Block until the holder releases it, then take it (no gap in between), instead of
            refusing at once.
        keep_crash_trace: For commands other than a build: when the previous holder died, leave
            its trace for the next build, which marks its run failed and cleans what it left.

    Raises:
        ProjectBusy: at once, naming the holder, when another holder has it and ``wait`` is
            false.
    """
    path = lock_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise busy(root, _read_holder(fd)) from None
            fcntl.flock(fd, fcntl.LOCK_EX)
        crashed = _read_holder(fd)
        holder = Holder(
            pid=os.getpid(),
            run_id=run_id,
            started=datetime.now(UTC).isoformat(timespec="seconds"),
            host=socket.gethostname(),
        )
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(asdict(holder)).encode("utf-8"))
        os.fsync(fd)
        try:
            yield BuildLock(holder, crashed)
        finally:
            os.ftruncate(fd, 0)
            if keep_crash_trace and crashed is not None:
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, json.dumps(asdict(crashed)).encode("utf-8"))
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
