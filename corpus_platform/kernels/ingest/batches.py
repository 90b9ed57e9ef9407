"""Raw batches: every raw file is a batch, ingested once and never rewritten.

``raw_documents`` keeps each batch's rows in files of their own (one per logical shard,
``part-N.parquet/<batch key>.parquet``) and records, per batch, the SHA-256 of the raw file it
read and what reading it found (``batches`` in the manifest). A rebuild reads only the files
that are new since the published snapshot and takes the published files of every other batch
as they are (:func:`plan_batches`). A raw file that changed after it was ingested is an
error naming it and the way out, never a silent rewrite: batches are immutable, so new data
goes into a new file, and re-ingesting one on purpose is explicit (``corpus run --reingest
FILE``, or ``--full`` for all).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_platform.base.files import digest_files, hashed_md5
from corpus_platform.kernels.ingest.canonical import FileSummary
from corpus_platform.kernels.ingest.decoding import InputError


def file_sha256(path: Path) -> str:
    """The SHA-256 of a raw file's bytes. The same read gives their MD5, which this process
    then knows for the file as it is (:func:`corpus_platform.base.files.hashed_md5`): the raw
    folder's DVC pin and the release's audit take it instead of reading the file again."""
    digest = hashlib.sha256()
    hashed_md5(path, digest)
    return digest.hexdigest()


def file_digests(files: dict[str, Path], known: Path) -> dict[str, str]:
    """The SHA-256 of every raw file (name -> path), read again only when a file's size,
    modification time or inode differ from what ``known`` (a JSON file outside the stage
    folder: these facts belong to this machine, not to the data) recorded when it was last
    read, as many files at once as there are cores; ``known`` is rewritten with what holds
    now."""
    seen = json.loads(known.read_text(encoding="utf-8")) if known.is_file() else {}
    identities = {}
    for name, path in files.items():
        info = path.stat()
        identities[name] = [info.st_size, info.st_mtime_ns, info.st_ino]
    stale = [n for n in files if not (seen.get(n) and seen[n][0] == identities[n])]
    hashed = dict(zip(stale, digest_files([files[n] for n in stale], file_sha256), strict=True))
    digests, now = {}, {}
    for name in files:
        digest = hashed[name] if name in hashed else seen[name][1]
        digests[name], now[name] = digest, [identities[name], digest]
    known.parent.mkdir(parents=True, exist_ok=True)
    known.write_text(json.dumps(now, sort_keys=True), encoding="utf-8")
    return digests


def batch_record(sha256: str, summary: FileSummary) -> dict[str, Any]:
    """A batch's entry in the manifest: the raw file's digest and what reading it found."""
    return {
        "sha256": sha256,
        "rows": summary.rows,
        "replaced_chars": summary.replaced_chars,
        "licenses": summary.licences,
    }


def summary_of(record: Mapping[str, Any]) -> FileSummary:
    """The :class:`FileSummary` a published batch entry recorded."""
    return FileSummary(record["rows"], record["replaced_chars"], dict(record["licenses"]))


@dataclass(frozen=True)
class BatchPlan:
    """Which raw files a build reads and which it takes from the published snapshot.

    Attributes:
        names: Every raw file, relative to the raw folder, in order.
        digests: Each file's SHA-256, by name.
        new: The names read by this build.
        kept: The names whose published files are taken as they are.
        gone: Published batches whose raw file is no longer there (their rows leave).
    """

    names: tuple[str, ...]
    digests: dict[str, str]
    new: tuple[str, ...]
    kept: tuple[str, ...]
    gone: tuple[str, ...]


def plan_batches(
    names: list[str],
    digests: dict[str, str],
    published: Mapping[str, Mapping[str, Any]] | None,
    reingest: Iterable[str] = (),
    snapshot: str | None = None,
) -> BatchPlan:
    """Decide, per raw file, whether it is a new batch or a published one kept as it is.

    ``published`` is the published manifest's ``batches`` (None when there is nothing to keep
    from: a first build, a full build, a changed ingest setting). ``reingest`` names files to
    read again although published (``corpus run --reingest``).

    Raises:
        InputError: when a published batch's raw file changed (its SHA-256 differs), naming
            the file, both digests and the ways out; or when ``reingest`` names a file that is
            not in the raw folder.
    """
    again = set(reingest)
    unknown = sorted(again - set(names))
    if unknown:
        raise InputError(
            f"--reingest names raw files that are not in the raw folder: {unknown}; "
            "give paths relative to input.path, as `corpus trace` prints them"
        )
    published = published or {}
    changed = [
        name
        for name in names
        if name in published and name not in again and published[name]["sha256"] != digests[name]
    ]
    if changed:
        first = changed[0]
        raise InputError(
            f"raw file {first} changed after it was ingested"
            f"{f' into raw_documents snapshot {snapshot}' if snapshot else ''} "
            f"(sha256 {published[first]['sha256'][:12]}... then, {digests[first][:12]}... now)"
            f"{f'; {len(changed) - 1} more changed: {changed[1:6]}' if len(changed) > 1 else ''}. "
            "A raw file is an immutable batch: put new rows into a new file and restore this "
            "one as it was, or re-ingest it on purpose "
            f"with `corpus run --reingest {first}` (every changed file: `corpus run --full`)"
        )
    kept = tuple(n for n in names if n in published and n not in again)
    return BatchPlan(
        names=tuple(names),
        digests=digests,
        new=tuple(n for n in names if n not in kept),
        kept=kept,
        gone=tuple(sorted(set(published) - set(names))),
    )
