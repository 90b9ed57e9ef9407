"""DVC snapshots of stage folders: the folder's DVC hash is its snapshot id.

This module runs DVC's commands: it drives DVC's command line (its stable public interface) in
the project root; the project's ``.dvc/config`` names the default remote, a folder or an S3
bucket (see :mod:`corpus_platform.store.remotes`, which reads DVC's config and looks at the
remote's objects through DVC's filesystem).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from corpus_platform.base.files import digest_files, file_md5, known_md5, known_md5s
from corpus_platform.base.snapshot_remote import SnapshotsConfig, is_s3
from corpus_platform.store.datasets import remove_path
from corpus_platform.store.dvc_process import LINKED_ADD, LINKED_PUSH, SEED_HASHES, run_dvc
from corpus_platform.store.remotes import (
    RemoteObjects,
    RemoteSpec,
    SnapshotError,
    cache_types,
    dvc_settings,
    explain,
    object_path,
    wanted_remote,
)

# The workspace file and its cache object share storage where the filesystem allows (a reflink
# copy-on-write clone, else a hard link), so pinning a stage does not write its bytes twice;
# DVC makes linked files read-only. A filesystem with neither falls back to a copy.
LINK_TYPES = "reflink,hardlink,copy"
# Where the filesystem cannot clone files (ext4, ...), hard links come first: `dvc add` then
# links the stage's files into the cache itself, where with reflink first it copies every byte
# into the cache and the workspace is relinked afterwards (a second pass). DVC takes the
# hard-link path of `add` only when "hardlink" is the first cache type.
HARDLINK_FIRST = "hardlink,copy"
FICLONE = 0x40049409  # Linux's ioctl that clones a file's extents (what DVC's reflink does)


def reflink_works(folder: Path) -> bool:
    """Whether files in ``folder`` can be cloned (reflink): tried on two scratch files there.
    Off Linux the answer is yes, so DVC keeps trying reflink first (APFS clones)."""
    if not sys.platform.startswith("linux"):
        return True
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    source, clone = folder / ".reflink-probe", folder / ".reflink-probe-clone"
    try:
        source.write_bytes(b"probe")
        with source.open("rb") as src, clone.open("wb") as dst:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
        return True
    except OSError:
        return False
    finally:
        source.unlink(missing_ok=True)
        clone.unlink(missing_ok=True)


def link_types(root: Path) -> str:
    """The ``cache.type`` a new DVC project at ``root`` gets: reflink first where its
    filesystem clones files, else hard links first (see :data:`HARDLINK_FIRST`)."""
    return LINK_TYPES if reflink_works(root) else HARDLINK_FIRST


def adds_by_hardlink(config: Mapping[str, Any]) -> bool:
    """Whether `dvc add` in a project with this DVC ``config`` hard-links files into the cache
    (its first cache type is "hardlink"), leaving them linked and read-only."""
    return cache_types(config)[:1] == ["hardlink"]


def _run(root: Path, commands: list[list[str]], what: str) -> str:
    """Run DVC commands in the project at ``root`` (:func:`run_dvc`: a child forked from a
    server that imported DVC once), stopping at the first that fails; return their output."""
    done = run_dvc(root, commands, {**os.environ, "DVC_NO_ANALYTICS": "1"})
    if done.returncode != 0:
        said = "\n".join(
            line
            for line in (done.stderr.strip() or done.stdout.strip()).splitlines()
            if line.strip() and "Having any troubles?" not in line
        )
        hint = explain(_remote_or_none(root), said)
        raise SnapshotError(
            (f"{hint}\n" if hint else "")
            + f"`dvc {what}` failed in {root} (exit {done.returncode}):\n{said}"
        )
    return done.stdout


def _remote_or_none(root: Path) -> RemoteSpec | None:
    try:
        return dvc_settings(root).remote
    except SnapshotError:
        return None


def _dvc(root: Path, *args: str) -> str:
    return _run(root, [list(args)], " ".join(args))


def ensure_dvc_project(root: Path, remote: Path | RemoteSpec, enforce: bool = False) -> None:
    """Make ``root`` a DVC project (no git needed) whose default remote is ``remote``: a folder,
    or an S3 URL with the address of its store.

    A project that exists keeps its DVC config, unless ``enforce``: then ``remote`` becomes its
    default remote when it is not already (DVC's ``remote add -d`` and ``remote modify``, about a
    second; checking costs about 50 ms). Credentials are never written.
    """
    spec = remote if isinstance(remote, RemoteSpec) else RemoteSpec(str(remote))
    exists = (root / ".dvc" / "config").is_file()
    if exists and not enforce:
        return
    if exists:
        current = dvc_settings(root).remote
        if current is not None and current.same_place(spec):
            return
    commands = []
    if not exists:
        commands = [
            ["init", "--no-scm", "--force", "-q"],
            ["config", "core.analytics", "false"],
            ["config", "cache.type", link_types(root)],
            # DVC hashes with one thread on two cores (half the cores, at most four); a pin
            # runs while the engine's workers wait, so it may use every core. Machine-local.
            ["config", "--local", "core.checksum_jobs", str(os.cpu_count() or 1)],
        ]
    location = spec.url
    if not is_s3(location):
        inside = Path(location).resolve().is_relative_to(root.resolve())
        location = os.path.relpath(Path(location).resolve(), root.resolve()) if inside else location
    commands.append(["remote", "add", "--force", "--default", spec.label, location])
    if spec.endpoint_url:
        commands.append(["remote", "modify", spec.label, "endpointurl", spec.endpoint_url])
    root.mkdir(parents=True, exist_ok=True)
    _dvc_commands(root, commands)


def ensure_snapshot_remote(root: Path, snapshots: SnapshotsConfig) -> None:
    """Make the project at ``root`` a DVC project with the remote corpus.yaml asks for (unset: a
    new project gets the folder ``.dvc-storage/``, an existing one keeps its ``.dvc/config``)."""
    ensure_dvc_project(root, *wanted_remote(root, snapshots))


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
    """Run several DVC commands in one child process, stopping at the first that fails."""
    _run(root, commands, " then ".join(c[0] for c in commands))


def pin(
    root: Path,
    folder: Path,
    push: bool = True,
    link: bool = False,
    added: Callable[[], None] | None = None,
    in_place_links: bool = False,
) -> str:
    """Track ``folder`` (or a file) with DVC, push its objects to the default remote, return its
    snapshot id; DVC reads no file this process hashed as it is (``files.known_md5s``: into
    DVC's state first). ``added``: called once DVC has added the folder (cache objects written,
    pointer moved) and before the push (a failpoint). ``in_place_links``: :func:`pin_in_place`.

    ``link``: leave the workspace files as links to their cache objects (``cache.type``: `dvc
    add` hard-links them itself when "hardlink" comes first, else a relink follows), so a
    stage's bytes are stored once on this disk. Only for stage folders the platform wrote:
    linked files become read-only. Without ``link`` the files are copied into the cache and
    left as they were (`add --no-relink`): raw inputs are never touched.
    """
    relative = folder.resolve().relative_to(root.resolve()).as_posix()
    settings = dvc_settings(root)
    add = ["add", "-q", relative] if link else ["add", "-q", "--no-relink", relative]
    if in_place_links and not link and settings.may_hardlink():
        add = [LINKED_ADD, "-q", relative]
    known = {path: [md5, *hashed] for path, (md5, hashed) in known_md5s(folder).items()}
    commands = [*([[SEED_HASHES, json.dumps(known)]] if known else []), add]
    adding = len(commands)
    if push:
        settings.require_credentials()
        push = LINKED_PUSH if settings.push_links() else "push"
        commands.append([push, f"{relative}.dvc"])  # not -q: DVC's errors would be silenced
    if link and not adds_by_hardlink(settings.config):
        commands.append(["checkout", "--relink", "-q", f"{relative}.dvc"])
    if added is not None:  # the add in a run of its own, so that the caller sees it end
        _dvc_commands(root, commands[:adding])
        added()
        commands = commands[adding:]
    if commands:
        _dvc_commands(root, commands)
    if (snapshot := current_snapshot(root, folder)) is None:
        raise SnapshotError(f"{relative}.dvc: DVC wrote no pointer; check the DVC project {root}")
    return snapshot


def pin_in_place(root: Path, folder: Path, added: Callable[[], None] | None = None) -> str:
    """:func:`pin` ``folder`` without moving or replacing a file in it, so that it can be
    pinned while others read it (a candidate while its checks run). Where the project's cache
    types allow hard links, each new cache object is a clone of its file where the filesystem
    clones (reflink), else a hard link to it
    (:func:`~corpus_platform.store.dvc_process.linked_add`: the bytes stored once, a linked
    file left read-only); otherwise `dvc add --no-relink` copies (or clones) them.
    DVC's own linking add would not do: it removes each file and links it back from the cache,
    and a check opening the file in between finds none."""
    return pin(root, folder, link=False, added=added, in_place_links=True)


def cache_dir(root: Path) -> Path:
    """The DVC cache folder of the project."""
    return dvc_settings(root).cache


def remote_dir(root: Path) -> Path:
    """The folder of the default DVC remote (a local-folder remote; see :func:`describe_remote`
    and :class:`RemoteObjects` for any remote)."""
    remote = dvc_settings(root).require_remote()
    if is_s3(remote.url) or "://" in remote.url:
        raise SnapshotError(f"{remote.describe()} is not a folder; its objects are on the store")
    return Path(remote.url).resolve()


def describe_remote(root: Path) -> str:
    """The project's default remote for messages, or a note that it has none."""
    remote = dvc_settings(root).remote
    return remote.describe() if remote else "no default DVC remote"


@dataclass(frozen=True)
class MissingObject:
    """A snapshot object that neither the cache nor the remote holds intact."""

    relpath: str
    md5: str
    problem: str


MISSING = "missing or corrupted in cache and remote"


class ObjectCheck:
    """Verifies the objects of snapshots: in the cache first, then on the default remote (opened
    once, and only when the cache lacks something, so a cached restore needs no network)."""

    def __init__(self, root: Path) -> None:
        self.settings = dvc_settings(root)
        self._remote: RemoteObjects | None = None

    @staticmethod
    def md5_of(path: Path) -> str:
        """The MD5 of a file's bytes, read once per file by this process: a file is known by
        its device, inode, size and modification time (DVC's own state keys), so a workspace
        file hard-linked to its cache object (the platform's link type) is hashed once for
        both, and a file this process hashed from its bytes earlier (a raw file while the
        build ingested it, a shard while its worker wrote it) is not read again while all four
        stay the same (:func:`corpus_platform.base.files.known_md5`)."""
        return known_md5(path) or file_md5(path)

    @property
    def remote(self) -> RemoteObjects:
        """The default remote's objects."""
        if self._remote is None:
            self._remote = RemoteObjects(self.settings)
        return self._remote

    def in_cache(self, md5: str) -> bool:
        """True when the cache holds the object with bytes hashing to its md5."""
        path = object_path(self.settings.cache, md5)
        return path.is_file() and self.md5_of(path) == md5.removesuffix(".dir")

    def _cached(self, wanted: set[str]) -> set[str]:
        """The objects of ``wanted`` the cache holds intact, hashed on every core."""
        found = [
            (md5, path)
            for md5 in sorted(wanted)
            if (path := object_path(self.settings.cache, md5)).is_file()
        ]
        digests = digest_files([path for _, path in found], self.md5_of)
        return {
            md5
            for (md5, _), digest in zip(found, digests, strict=True)
            if digest == md5.removesuffix(".dir")
        }

    def _listing(self, snapshot: str) -> list[dict[str, str]] | None:
        if self.in_cache(snapshot):
            data = object_path(self.settings.cache, snapshot).read_bytes()
        else:
            data = self.remote.read(snapshot)
        return None if data is None else json.loads(data)

    def snapshot(self, snapshot: str) -> tuple[list[tuple[str, str]], list[MissingObject]]:
        """See :func:`snapshot_objects`."""
        if not snapshot.endswith(".dir"):
            entries = [("", snapshot)]
        else:
            listing = self._listing(snapshot)
            if listing is None:
                return [], [MissingObject("(directory listing)", snapshot, MISSING)]
            entries = [(e["relpath"], e["md5"]) for e in listing]
        wanted = {md5 for _, md5 in entries}
        present = self._cached(wanted)
        if present != wanted:
            present |= self.remote.intact(wanted - present)
        missing = [MissingObject(rel, md5, MISSING) for rel, md5 in entries if md5 not in present]
        return entries, missing


def snapshot_objects(
    root: Path, snapshot: str
) -> tuple[list[tuple[str, str]], list[MissingObject]]:
    """The (relpath, md5) entries of a snapshot and the objects that are missing or corrupted.

    A file snapshot has one entry with an empty relpath. An object counts as present when the
    cache or the remote holds a copy whose bytes hash to its md5 (on S3, an ETag equal to the
    md5 vouches for the bytes; any other ETag means they are downloaded and hashed).
    """
    return ObjectCheck(root).snapshot(snapshot)


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
            f"(cache {cache_dir(root)}, {describe_remote(root)}):\n" + "\n".join(lines[:20])
        )
    staging = target.parent / f".restore-{target.name}"
    pointer = target.parent / f".restore-{target.name}.dvc"
    remove_path(staging)
    _write_pointer(pointer, snapshot, staging.name)
    try:
        _dvc(root, "pull", str(pointer.relative_to(root)))  # not -q: it silences DVC's errors
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
