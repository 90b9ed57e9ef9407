"""The dedup stage's band keys and shingle sets, kept beside the project for the split's checks.

The dedup stage groups the LSH band keys of every filtered row; the split's held-out
neighbour check needs the same keys for the split's rows, and its recall check the rows' word
n-gram sets. Instead of sketching or shingling those rows again, the checks read what the dedup
stage left under ``.corpus/cache/band-keys/<snapshot id of deduplicated_documents>/``
(``bands/``, ``positions/``: each row's doc id and the hash of its exact text, ``sketches/``:
its MinHash signature and shingle set, row for row, and the layout they were made with), for
the rows whose text is the one it sketched. It is a cache: only the latest published dedup
snapshot's are kept (about 10 KB a row, most of it the shingle sets), a rejected candidate
leaves none, and a project without it (a fresh clone, a removed folder) sketches afresh.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CACHE = Path(".corpus") / "cache" / "band-keys"
PENDING = ".pending"
PARTS = ("bands", "positions")
KEPT = (*PARTS, "sketches")  # and the rows' shingle sets, for the split's recall check


def cache_root(root: Path) -> Path:
    """The folder of the kept band keys."""
    return root / CACHE


def stash(root: Path, scratch: Path) -> Path:
    """Move the band keys and positions out of a dedup scratch folder into a pending entry
    (not yet used by anyone); return it."""
    pending = cache_root(root) / PENDING
    shutil.rmtree(pending, ignore_errors=True)
    pending.mkdir(parents=True)
    for part in KEPT:
        shutil.move(scratch / part, pending / part)
    return pending


def keep(root: Path, snapshot_id: str) -> Path:
    """Name the pending entry after the published dedup snapshot and remove every older
    entry; return it."""
    folder = cache_root(root)
    final = folder / snapshot_id
    shutil.rmtree(final, ignore_errors=True)
    (folder / PENDING).rename(final)
    for entry in folder.iterdir():
        if entry != final:
            shutil.rmtree(entry, ignore_errors=True)
    return final


def discard_pending(root: Path) -> None:
    """Forget the pending entry (its candidate was rejected or the step failed)."""
    shutil.rmtree(cache_root(root) / PENDING, ignore_errors=True)


def band_keys_of(root: Path, snapshot_id: str | None) -> Path | None:
    """The kept band keys of dedup snapshot ``snapshot_id``, if they are here."""
    if snapshot_id is None:
        return None
    folder = cache_root(root) / snapshot_id
    return folder if all((folder / part).is_dir() for part in PARTS) else None
