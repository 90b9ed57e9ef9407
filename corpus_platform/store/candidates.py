"""Rejected candidates: a stage's output whose blocking checks failed, kept out of ``data/``.

Write-audit-publish: a stage writes its candidate beside ``data/<asset>``, every check of the
stage judges it, and only a candidate that passed them all is renamed into ``data/``. A rejected
candidate moves to ``.corpus/candidates/<asset>/<run_id>/`` (Parquet shards, readable like any
stage), is pinned with DVC for its snapshot id (never pushed, never a baseline, not in the
snapshot list) and recorded in the registry with every verdict; ``corpus candidates`` lists
them and ``corpus gc`` removes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_platform.store.datasets import remove_path
from corpus_platform.store.registry import CANDIDATE, append_record, read_records
from corpus_platform.store.snapshots import pin, pointer_path

QUARANTINE = Path(".corpus") / "candidates"


def quarantine_path(root: Path, asset: str, run_id: str) -> Path:
    """Where the rejected candidate of ``asset`` from run ``run_id`` is kept."""
    return root / QUARANTINE / asset / run_id


def quarantine(
    root: Path, asset: str, candidate: Path, run_id: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """Move a rejected candidate folder into quarantine, pin it, record it; return the record.

    ``entry`` carries the verdicts and provenance to record (JSON-ready, redacted by the
    registry).
    """
    folder = quarantine_path(root, asset, run_id)
    remove_path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    candidate.rename(folder)
    snapshot = pin(root, folder, push=False)
    record = {
        "asset": asset,
        "run_id": run_id,
        "snapshot_id": snapshot,
        "path": folder.relative_to(root).as_posix(),
        **entry,
    }
    append_record(root, CANDIDATE, record)
    return record


def list_candidates(root: Path) -> list[dict[str, Any]]:
    """Every rejected candidate still kept in quarantine, oldest first."""
    return [r for r in read_records(root, CANDIDATE) if (root / r["path"]).is_dir()]


def remove_candidates(root: Path) -> list[dict[str, Any]]:
    """Delete every quarantined candidate folder and its pointer; return what was removed."""
    removed = list_candidates(root)
    for record in removed:
        folder = root / record["path"]
        remove_path(folder)
        pointer_path(folder).unlink(missing_ok=True)
    return removed
