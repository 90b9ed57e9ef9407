"""Folders removed beside the work: a stage's scratch is set aside at once and deleted by a
thread while the build goes on.

Deleting a folder of a few GB of scratch files is kernel work, page by page (every cached page
of every file is dropped): 0.3 s for the dedup stage's scratch at 100,000 documents, which the
Dagster process spent between two stages while the engine's workers waited for the next map.
:func:`remove_aside` renames the folder (instant, the name is free again) and deletes it in a
thread that is not a daemon, so the process ends only once the deletion has. A folder set
aside by a process that was killed before it finished is deleted by the next
:func:`remove_aside` or :func:`sweep` in that parent folder.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from pathlib import Path

ASIDE = ".removing-"  # prefix of a folder set aside: .removing-<pid>-<n>-<name>
_numbers = itertools.count()
_threads: list[threading.Thread] = []
_lock = threading.Lock()


def remove_aside(path: Path, into: Path | None = None) -> None:
    """Rename folder ``path`` aside, next to it or into folder ``into`` (on the same
    filesystem: out of a candidate that is about to be pinned), and delete it in a background
    thread (nothing when it is not there); folders a dead process left aside there are deleted
    by the same thread."""
    if not path.exists():
        return
    parent = into or path.parent
    parent.mkdir(parents=True, exist_ok=True)
    aside = parent / f"{ASIDE}{os.getpid()}-{next(_numbers)}-{path.name}"
    path.rename(aside)
    _start([aside, *_abandoned(parent)])


def sweep(parent: Path) -> None:
    """Delete, in a background thread, what dead processes set aside in ``parent``."""
    if parent.is_dir() and (left := _abandoned(parent)):
        _start(left)


def wait_for_removals() -> None:
    """Block until every deletion this process started has finished."""
    with _lock:
        pending, _threads[:] = list(_threads), []
    for thread in pending:
        thread.join()


def _start(folders: list[Path]) -> None:
    thread = threading.Thread(target=_delete, args=(folders,), name="remove-aside", daemon=False)
    with _lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    thread.start()


def _delete(folders: list[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _abandoned(parent: Path) -> list[Path]:
    """Folders in ``parent`` set aside by a process that no longer runs."""
    found = []
    for entry in parent.glob(f"{ASIDE}*"):
        pid = entry.name[len(ASIDE) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            found.append(entry)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
