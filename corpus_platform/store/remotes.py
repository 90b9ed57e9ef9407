"""The project's DVC cache and default remote, and the remote's objects seen through DVC's own
filesystem for it (a folder, or S3 through dvc-s3 and s3fs).

DVC's commands move objects (``push``, ``pull``: see :mod:`corpus_platform.store.snapshots`);
this module only looks at the remote where the platform must: verifying every object of a
snapshot before a restore, and deleting the objects retention gave up. Settings are read with
DVC's own config loader (every level: system, global, ``.dvc/config``, ``.dvc/config.local``).
An S3 remote takes its credentials from the environment only; every failure names the remote and
the fix.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.snapshot_remote import (
    CREDENTIAL_VARIABLES,
    CREDENTIALS_FIX,
    S3_SCHEME,
    SnapshotsConfig,
    is_s3,
)

DEFAULT_REMOTE = ".dvc-storage"  # a new project's remote: a folder in the project
# DVC remote options that carry credentials of their own (set by hand, never by the platform).
_OWN_CREDENTIALS = ("access_key_id", "profile", "credentialpath", "allow_anonymous_login")
_IO_THREADS = 16


class SnapshotError(CorpusError):
    """DVC could not pin, push or read a snapshot; the message carries DVC's own words."""


@dataclass(frozen=True)
class RemoteSpec:
    """A DVC remote: an S3 URL (with the address of a store that is not AWS) or a folder."""

    url: str
    endpoint_url: str | None = None
    name: str = ""

    @property
    def label(self) -> str:
        """The remote's name in ``.dvc/config`` (``s3`` or ``local`` when the platform adds it)."""
        return self.name or ("s3" if is_s3(self.url) else "local")

    def describe(self) -> str:
        """``DVC remote 's3' (s3://bucket/prefix at http://host:port)``."""
        at = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"DVC remote {self.label!r} ({self.url}{at})"

    def same_place(self, other: RemoteSpec) -> bool:
        """True when both name the same storage (names aside)."""
        if is_s3(self.url) or is_s3(other.url):
            return (self.url.rstrip("/"), self.endpoint_url or None) == (
                other.url.rstrip("/"),
                other.endpoint_url or None,
            )
        return Path(self.url).resolve() == Path(other.url).resolve()


def wanted_remote(root: Path, snapshots: SnapshotsConfig) -> tuple[RemoteSpec, bool]:
    """The remote corpus.yaml asks for, and whether it must replace what ``.dvc/config`` says
    (False: only a new project gets it, the folder :data:`DEFAULT_REMOTE`)."""
    url = snapshots.remote_url(root)
    if url is None:
        return RemoteSpec(str(root / DEFAULT_REMOTE)), False
    return RemoteSpec(url, snapshots.endpoint_url), True


def cache_types(config: Mapping[str, Any]) -> list[str]:
    """The project's ``cache.type`` list, in its order (empty when unset)."""
    types = config["cache"].get("type") or []
    listed = types.split(",") if isinstance(types, str) else list(types)
    return [t.strip() for t in listed if t.strip()]


@dataclass(frozen=True)
class DvcSettings:
    """What the DVC config of a project says about its cache and default remote."""

    root: Path
    cache: Path
    remote: RemoteSpec | None
    config: Any  # dvc.config.Config, for DVC's filesystem of the remote
    options: dict[str, Any]

    def require_remote(self) -> RemoteSpec:
        """The default remote.

        Raises:
            SnapshotError: when the project has none, with the fix.
        """
        if self.remote is None:
            raise SnapshotError(
                f"{self.root}: no default DVC remote; set snapshots.remote in corpus.yaml "
                "(or `dvc remote add -d NAME URL`)"
            )
        return self.remote

    def may_hardlink(self) -> bool:
        """Whether the project's ``cache.type`` lists "hardlink": its cache objects may share
        their inode with a stage's files (and, for a folder remote, with the remote's)."""
        return "hardlink" in cache_types(self.config)

    def push_links(self) -> bool:
        """Whether a push links the remote's new objects to their cache objects
        (:func:`~corpus_platform.store.dvc_process.linked_push`): the default remote is a folder
        and ``cache.type`` lists hardlink, so the project already keeps read-only objects that
        share their inode with a stage's files. DVC's objects never change once written; a
        remote on another filesystem gets copies all the same, and S3 always does."""
        folder = self.remote is not None and not is_s3(self.remote.url)
        return folder and self.may_hardlink()

    def require_credentials(self) -> None:
        """Fail before any request when an S3 remote has no credentials in the environment.

        Raises:
            SnapshotError: naming the remote and the variables to export.
        """
        remote = self.remote
        if remote is None or not is_s3(remote.url):
            return
        missing = [name for name in CREDENTIAL_VARIABLES if not os.environ.get(name)]
        if missing and not any(self.options.get(k) for k in _OWN_CREDENTIALS):
            raise SnapshotError(
                f"{remote.describe()}: no credentials ({', '.join(missing)} not set): "
                f"{CREDENTIALS_FIX}; they are never read from corpus.yaml or .dvc/config"
            )


def dvc_settings(root: Path) -> DvcSettings:
    """Read the DVC config of the project at ``root`` (about 50 ms, no DVC process)."""
    from dvc.config import Config, ConfigError

    dvc_dir = root / ".dvc"
    try:
        config = Config(dvc_dir=str(dvc_dir))
    except ConfigError as error:
        raise SnapshotError(f"{dvc_dir / 'config'}: DVC cannot read it: {error}") from None
    cache = Path(config["cache"].get("dir") or dvc_dir / "cache")
    name = config["core"].get("remote")
    if not name:
        return DvcSettings(root, cache, None, config, {})
    options = dict(config["remote"].get(name) or {})
    if "url" not in options:
        raise SnapshotError(
            f"{dvc_dir / 'config'}: the default remote {name!r} is not defined; set "
            "snapshots.remote in corpus.yaml (or `dvc remote add -d NAME URL`)"
        )
    remote = RemoteSpec(str(options["url"]), options.get("endpointurl"), name)
    return DvcSettings(root, cache, remote, config, options)


_PROBLEMS = (
    (
        ("unable to locate credentials", "nocredentialserror", "partial credentials"),
        f"no usable credentials: {CREDENTIALS_FIX}",
    ),
    (
        ("could not connect", "cannot connect to host", "connect timeout", "connection refused"),
        "the endpoint {endpoint} is unreachable: start the store, or correct "
        "snapshots.endpoint_url in corpus.yaml",
    ),
    (
        ("nosuchbucket", "bucket does not exist"),
        "bucket {bucket!r} does not exist: create it (`aws s3 mb s3://{bucket}"
        "{endpoint_option}`) or correct snapshots.remote in corpus.yaml",
    ),
    (
        ("invalidaccesskeyid", "signaturedoesnotmatch", "accessdenied", "access denied"),
        "the store refused the credentials: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY "
        "(AWS_SESSION_TOKEN) and the bucket's policy",
    ),
)


def explain(remote: RemoteSpec | None, text: str) -> str:
    """What went wrong with an S3 ``remote`` and the fix, read from an error's words ("" when
    the words say nothing known, or the remote is a folder)."""
    if remote is None or not is_s3(remote.url):
        return ""
    lower = text.lower()
    for markers, problem in _PROBLEMS:
        if any(marker in lower for marker in markers):
            bucket = remote.url.removeprefix(S3_SCHEME).split("/", 1)[0]
            endpoint = remote.endpoint_url or "of AWS S3"
            option = f" --endpoint-url {remote.endpoint_url}" if remote.endpoint_url else ""
            fix = problem.format(bucket=bucket, endpoint=endpoint, endpoint_option=option)
            return f"{remote.describe()}: {fix}"
    return ""


def object_path(base: Path, md5: str) -> Path:
    """Where DVC 3 stores an object under a cache or local remote folder."""
    return base / "files" / "md5" / md5[:2] / md5[2:]


def md5_of_chunks(chunks: Iterable[bytes]) -> str:
    """MD5 of a stream of bytes, as DVC computes it."""
    digest = hashlib.md5(usedforsecurity=False)
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


class RemoteObjects:
    """The objects of a project's default remote, through DVC's filesystem for that remote."""

    def __init__(self, settings: DvcSettings) -> None:
        from dvc.fs import get_cloud_fs

        self.remote = settings.require_remote()
        settings.require_credentials()
        cls, conf, self.base = self._guard(
            lambda: get_cloud_fs(settings.config, name=self.remote.label)
        )
        self.fs = self._guard(lambda: cls(**conf))
        if is_s3(self.remote.url):
            self._guard(lambda: self.fs.fs.invalidate_cache())  # objects change behind our back

    def _guard(self, call: Any) -> Any:
        """Run ``call``; a failure of the store becomes a SnapshotError naming remote and fix."""
        try:
            return call()
        except FileNotFoundError as error:
            if "bucket" in str(error).lower():
                raise self._error(error) from None
            raise
        except CorpusError:
            raise
        except Exception as error:  # the store's client raises many kinds; name them all
            raise self._error(error) from None

    def _error(self, error: BaseException) -> SnapshotError:
        words = f"{type(error).__name__}: {error}"
        hint = explain(self.remote, words) or f"{self.remote.describe()}: cannot be read"
        return SnapshotError(f"{hint}\n  ({words})")

    def path(self, md5: str) -> str:
        """The object's path on the remote's filesystem."""
        return self.fs.join(self.base, "files", "md5", md5[:2], md5[2:])

    def _info(self, md5: str) -> dict[str, Any] | None:
        try:
            return self._guard(lambda: self.fs.info(self.path(md5)))
        except FileNotFoundError:
            return None

    def read(self, md5: str) -> bytes | None:
        """The object's bytes when the remote holds it intact (they hash to ``md5``)."""
        if self._info(md5) is None:
            return None
        data = self._guard(lambda: self.fs.cat_file(self.path(md5)))
        return data if md5_of_chunks([data]) == md5.removesuffix(".dir") else None

    def _intact(self, md5: str) -> bool:
        info = self._info(md5)
        if info is None:
            return False
        want = md5.removesuffix(".dir")
        # S3 gives a single-part object's MD5 as its ETag: no download needed. Otherwise (a
        # folder, a multipart upload, encryption, a tampered object) the bytes are hashed.
        if str(info.get("ETag") or "").strip('"') == want:
            return True
        try:
            return self._guard(lambda: self._hash(md5)) == want
        except FileNotFoundError:  # deleted meanwhile
            return False

    def _hash(self, md5: str) -> str:
        with self.fs.open(self.path(md5), "rb") as handle:
            return md5_of_chunks(iter(lambda: handle.read(1 << 20), b""))

    def intact(self, md5s: Iterable[str]) -> set[str]:
        """The objects among ``md5s`` that the remote holds with bytes hashing to their md5."""
        wanted = sorted(set(md5s))
        if not wanted:
            return set()
        with ThreadPoolExecutor(min(_IO_THREADS, len(wanted))) as pool:
            flags = list(pool.map(self._intact, wanted))
        return {md5 for md5, ok in zip(wanted, flags, strict=True) if ok}

    def delete(self, md5s: Iterable[str]) -> int:
        """Delete the objects among ``md5s`` the remote holds; return how many there were."""
        wanted = sorted(set(md5s))
        if not wanted:
            return 0
        with ThreadPoolExecutor(min(_IO_THREADS, len(wanted))) as pool:
            present = [m for m, i in zip(wanted, pool.map(self._info, wanted), strict=True) if i]
        if present:
            paths = [self.path(md5) for md5 in present]
            self._guard(lambda: self.fs.rm(paths))
        return len(present)
