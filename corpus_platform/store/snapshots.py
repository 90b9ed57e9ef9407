"""DVC snapshots of stage folders: the folder's DVC hash is its snapshot id.

This is the only module that talks to DVC. It drives DVC's command line (its stable public
interface) in the project root; the project's ``.dvc/config`` names the default remote.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml


class SnapshotError(RuntimeError):
    """DVC could not pin, push or read a snapshot; the message carries DVC's own words."""


def _dvc(root: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SnapshotError(
            f"`dvc {' '.join(args)}` failed in {root} (exit {done.returncode}):\n"
            f"{done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout


def ensure_dvc_project(root: Path, remote: Path) -> None:
    """Make ``root`` a DVC project (no git needed) whose default remote is the folder ``remote``."""
    if (root / ".dvc" / "config").is_file():
        return
    _dvc(root, "init", "--no-scm", "--force", "-q")
    _dvc(root, "config", "core.analytics", "false")
    _dvc(root, "remote", "add", "--default", "local", str(remote))


def pointer_path(root: Path, folder: Path) -> Path:
    """The ``.dvc`` pointer file DVC keeps beside a tracked folder."""
    return folder.parent / f"{folder.name}.dvc"


def current_snapshot(root: Path, folder: Path) -> str | None:
    """The snapshot id the pointer of ``folder`` names, or None if it was never pinned."""
    pointer = pointer_path(root, folder)
    if not pointer.is_file():
        return None
    data = yaml.safe_load(pointer.read_text(encoding="utf-8"))
    return str(data["outs"][0]["md5"])


def pin(root: Path, folder: Path, push: bool = True) -> str:
    """Track ``folder`` with DVC, push its objects to the default remote, return its snapshot id."""
    relative = folder.resolve().relative_to(root.resolve()).as_posix()
    _dvc(root, "add", "-q", relative)
    if push:
        _dvc(root, "push", "-q", f"{relative}.dvc")
    snapshot = current_snapshot(root, folder)
    if snapshot is None:
        raise SnapshotError(
            f"{relative}.dvc: DVC wrote no pointer; check the DVC project in {root}"
        )
    return snapshot
