"""DVC snapshots of stage folders: the folder's DVC hash is its snapshot id.

This is the only module that talks to DVC. It drives DVC's command line (its stable public
interface) in the project root; the project's ``.dvc/config`` names the default remote.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from corpus_platform.base.errors import CorpusError
from corpus_platform.store.datasets import remove_path

# The workspace file and its cache object share storage where the filesystem allows (a reflink
# copy-on-write clone, else a hard link), so pinning a stage does not write its bytes twice;
# DVC makes linked files read-only. A filesystem with neither falls back to a copy.
LINK_TYPES = "reflink,hardlink,copy"


class SnapshotError(CorpusError):
    """DVC could not pin, push or read a snapshot; the message carries DVC's own words."""


def _run(root: Path, python_args: list[str], what: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    done = subprocess.run(
        [sys.executable, *python_args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SnapshotError(
            f"`dvc {what}` failed in {root} (exit {done.returncode}):\n"
            f"{done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout


def _dvc(root: Path, *args: str) -> str:
    return _run(root, ["-m", "dvc", *args], " ".join(args))


def ensure_dvc_project(root: Path, remote: Path) -> None:
    """Make ``root`` a DVC project (no git needed) whose default remote is the folder ``remote``."""
    if (root / ".dvc" / "config").is_file():
        return
    _dvc(root, "init", "--no-scm", "--force", "-q")
    _dvc(root, "config", "core.analytics", "false")
    _dvc(root, "config", "cache.type", LINK_TYPES)
    inside = remote.resolve().is_relative_to(root.resolve())
    location = os.path.relpath(remote.resolve(), root.resolve()) if inside else str(remote)
    _dvc(root, "remote", "add", "--default", "local", location)


def share_cache(root: Path, cache: Path) -> None:
    """Make the DVC project at ``root`` use another project's cache folder."""
    _dvc(root, "config", "cache.dir", str(cache))


def pointer_path(folder: Path) -> Path:
    """The ``.dvc`` pointer file DVC keeps beside a tracked folder."""
    return folder.parent / f"{folder.name}.dvc"


def current_snapshot(root: Path, folder: Path) -> str | None:
    """The snapshot id the pointer of ``folder`` names, or None if it was never pinned."""
    pointer = pointer_path(folder)
    if not pointer.is_file():
        return None
    data = yaml.safe_load(pointer.read_text(encoding="utf-8"))
    return str(data["outs"][0]["md5"])


def _dvc_commands(root: Path, commands: list[list[str]]) -> None:
    """Run several DVC commands in one Python process (DVC's start-up costs about a second),
    stopping at the first that fails."""
    script = (
        "import sys, json\n"
        "from dvc.cli import main\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    code = main(args)\n"
        "    if code:\n"
        "        print('dvc ' + ' '.join(args), file=sys.stderr)\n"
        "        sys.exit(code)\n"
    )
    _run(root, ["-c", script, json.dumps(commands)], " then ".join(c[0] for c in commands))


def pin(root: Path, folder: Path, push: bool = True, link: bool = False) -> str:
    """Track ``folder`` (or a file) with DVC, push its objects to the default remote, return its
    snapshot id.

    ``link``: afterwards replace the workspace files by links to their cache objects
    (``cache.type``), so a stage's bytes are stored once on this disk. Only for stage folders
    the platform wrote: linked files become read-only, and raw inputs are never touched.
    """
    relative = folder.resolve().relative_to(root.resolve()).as_posix()
    commands = [["add", "-q", relative]]
    if push:
        commands.append(["push", "-q", f"{relative}.dvc"])
    if link:
        commands.append(["checkout", "--relink", "-q", f"{relative}.dvc"])
    _dvc_commands(root, commands)
    snapshot = current_snapshot(root, folder)
    if snapshot is None:
        raise SnapshotError(
            f"{relative}.dvc: DVC wrote no pointer; check the DVC project in {root}"
        )
    return snapshot


def cache_dir(root: Path) -> Path:
    """The DVC cache folder of the project."""
    return Path(_dvc(root, "cache", "dir").strip())


def remote_dir(root: Path) -> Path:
    """The folder of the default DVC remote (a local-folder remote)."""
    name = _dvc(root, "config", "core.remote").strip()
    if not name:
        raise SnapshotError(f"{root}: no default DVC remote; add one with `dvc remote add -d`")
    url = _dvc(root, "config", f"remote.{name}.url").strip()
    if "://" in url:
        raise SnapshotError(f"remote {url}: only local-folder remotes can be inspected here")
    return (root / ".dvc" / url).resolve()


def object_path(base: Path, md5: str) -> Path:
    """Where DVC 3 stores an object under a cache or local remote folder."""
    return base / "files" / "md5" / md5[:2] / md5[2:]


def file_md5(path: Path) -> str:
    """MD5 of a file's bytes, as DVC computes it."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class MissingObject:
    """A snapshot object that neither the cache nor the remote holds intact."""

    relpath: str
    md5: str
    problem: str


def snapshot_objects(
    root: Path, snapshot: str
) -> tuple[list[tuple[str, str]], list[MissingObject]]:
    """The (relpath, md5) entries of a snapshot and the objects that are missing or corrupted.

    A file snapshot has one entry with an empty relpath. An object counts as present when the
    cache or the remote holds a copy whose bytes hash to its md5.
    """
    bases = [cache_dir(root), remote_dir(root)]

    def intact(md5: str) -> bool:
        return any(
            object_path(b, md5).is_file()
            and file_md5(object_path(b, md5)) == md5.removesuffix(".dir")
            for b in bases
        )

    if not snapshot.endswith(".dir"):
        entries = [("", snapshot)]
    else:
        manifest = next(
            (object_path(b, snapshot) for b in bases if object_path(b, snapshot).is_file()), None
        )
        if manifest is None or not intact(snapshot):
            return [], [
                MissingObject(
                    "(directory listing)", snapshot, "missing or corrupted in cache and remote"
                )
            ]
        entries = [
            (e["relpath"], e["md5"]) for e in json.loads(manifest.read_text(encoding="utf-8"))
        ]
    missing = [
        MissingObject(rel, md5, "missing or corrupted in cache and remote")
        for rel, md5 in entries
        if not intact(md5)
    ]
    return entries, missing


def _write_pointer(pointer: Path, snapshot: str, path_name: str) -> None:
    pointer.parent.mkdir(parents=True, exist_ok=True)
    data = {"outs": [{"md5": snapshot, "path": path_name, "hash": "md5"}]}
    pointer.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def restore(root: Path, snapshot: str, target: Path) -> None:
    """Restore ``target`` (a folder or a file) to ``snapshot`` from the DVC cache or remote.

    Every object is verified by its md5 first; the snapshot is checked out beside the target and
    renamed into place only when complete, so a failure leaves ``target`` untouched. A target
    that differs from the snapshot is pinned first, so nothing is lost.

    Raises:
        SnapshotError: naming the path and hash of every missing or corrupted object.
    """
    entries, missing = snapshot_objects(root, snapshot)
    if missing:
        lines = [
            f"  {target / m.relpath if m.relpath else target}: {m.md5} {m.problem}" for m in missing
        ]
        raise SnapshotError(
            f"cannot restore {target} to snapshot {snapshot}: {len(missing)} object(s) unavailable "
            f"(cache {cache_dir(root)}, remote {remote_dir(root)}):\n" + "\n".join(lines[:20])
        )
    staging = target.parent / f".restore-{target.name}"
    pointer = target.parent / f".restore-{target.name}.dvc"
    remove_path(staging)
    _write_pointer(pointer, snapshot, staging.name)
    try:
        _dvc(root, "pull", "-q", str(pointer.relative_to(root)))
        for relpath, md5 in entries:
            restored = staging / relpath if relpath else staging
            if file_md5(restored) != md5:
                raise SnapshotError(f"{target / relpath}: restored bytes do not hash to {md5}")
        if target.exists() and current_snapshot(root, target) != snapshot:
            pin(root, target)
        remove_path(target)
        staging.rename(target)
    finally:
        pointer.unlink(missing_ok=True)
        remove_path(staging)
    if pin(root, target, push=False) != snapshot:
        raise SnapshotError(f"{target}: restored folder does not hash to {snapshot}")
