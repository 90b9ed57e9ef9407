"""The dedup stage's band keys, kept beside the project for the split's neighbour check.

The dedup stage groups the LSH band keys of every filtered row; the split's held-out
neighbour check needs the same keys for the split's rows. Instead of sketching those rows again,
the check reads the keys the dedup stage left under ``.corpus/cache/band-keys/<snapshot id of
deduplicated_documents>/`` (``bands/``, ``positions/`` and the layout they were made with). It
is a cache: only the keys of the latest published dedup snapshot are kept, a rejected candidate
leaves none, and a project without it (a fresh clone, a removed folder) sketches afresh.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CACHE = Path(".corpus") / "cache" / "band-keys"
PENDING = ".pending"
PARTS = ("bands", "positions")


def cache_root(root: Path) -> Path:
    """The folder of the kept band keys."""
    return root / CACHE


def stash(root: Path, scratch: Path) -> Path:
    """Move the band keys and positions out of a dedup scratch folder into a pending entry
    (not yet used by anyone); return it."""
    pending = cache_root(root) / PENDING
    shutil.rmtree(pending, ignore_errors=True)
    pending.mkdir(parents=True)
    for part in PARTS:
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
