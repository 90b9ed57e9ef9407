"""Retention: keep the newest snapshots per asset, everything pinned by name, and everything
either of them was built from; delete the other snapshots' objects from cache and remote.

Not ``dvc gc``: DVC keeps what the workspace's pointers name, while a pinned snapshot or the
chain of a kept one is usually in no pointer. The remote's objects (a folder or an S3 bucket)
are deleted one by one through DVC's filesystem for the remote."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corpus_platform.store.datasets import STAGE_ROOT
from corpus_platform.store.registry import (
    GC,
    PIN,
    RegistryError,
    append_record,
    find_snapshot,
    is_input,
    list_snapshots,
    read_records,
)
from corpus_platform.store.releases import list_releases
from corpus_platform.store.snapshots import ObjectCheck, current_snapshot, object_path


def pin_snapshot(root: Path, snapshot_id: str, name: str) -> str:
    """Pin a snapshot under ``name`` so that gc keeps it and its whole chain."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise RegistryError(f"pin name {name!r}: use letters, digits, '-', '_' or '.'")
    entry = find_snapshot(root, snapshot_id)
    append_record(
        root, PIN, {"name": name, "snapshot_id": entry["snapshot_id"], "asset": entry["asset"]}
    )
    return entry["snapshot_id"]


def pins(root: Path) -> dict[str, str]:
    """Pin name -> snapshot id (the newest pin of each name wins)."""
    return {r["name"]: r["snapshot_id"] for r in read_records(root, PIN)}


@dataclass
class GcPlan:
    """Which snapshots stay (and why) and which go."""

    keep: dict[str, str] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)


def _needs(root: Path, snapshot_id: str) -> set[str]:
    """A snapshot and every snapshot (stage or input) it was built from."""
    records = {e["snapshot_id"]: e for e in list_snapshots(root)}
    needed, todo = set(), [snapshot_id]
    while todo:
        current = todo.pop()
        if current in needed:
            continue
        needed.add(current)
        if current in records:
            todo += list(records[current]["upstream_snapshots"].values())
    return needed


def plan_gc(root: Path, keep: int) -> GcPlan:
    """Decide what a ``gc --keep N`` would keep and delete."""
    if keep < 0:
        raise RegistryError("--keep must be 0 or more")
    entries = list_snapshots(root)
    gone = {r["snapshot_id"] for r in read_records(root, GC)}
    plan = GcPlan()
    reasons: dict[str, str] = {}
    for asset in sorted({e["asset"] for e in entries}):
        newest: list[str] = []
        for e in reversed([e for e in entries if e["asset"] == asset]):
            if e["snapshot_id"] not in newest and e["snapshot_id"] not in gone:
                newest.append(e["snapshot_id"])
        for snapshot in newest[:keep]:
            reasons.setdefault(snapshot, f"newest {keep} of {asset}")
        current = current_snapshot(root, root / STAGE_ROOT / asset)
        if current:
            reasons.setdefault(current, f"in use in {STAGE_ROOT}/{asset}")
    for name, snapshot in pins(root).items():
        reasons[snapshot] = f"pinned as {name!r}"
    releases = list_releases(root)
    automatic = [r for r in releases if not r.get("named")]  # recorded by corpus run
    for release in [r for r in releases if r.get("named")] + automatic[len(automatic) - keep :]:
        reasons.setdefault(release["snapshot_id"], f"release {release['name']}")
    for snapshot, why in list(reasons.items()):
        for needed in _needs(root, snapshot) - {snapshot}:
            reasons.setdefault(needed, f"needed by {snapshot} ({why})")
    plan.keep = dict(sorted(reasons.items()))
    known = {e["snapshot_id"] for e in entries} | {
        s for e in entries for n, s in e["upstream_snapshots"].items() if is_input(n)
    }
    plan.delete = sorted(known - set(plan.keep) - gone)
    return plan


def collect(root: Path, plan: GcPlan, rejected: Sequence[str] = ()) -> int:
    """Delete objects used only by deleted snapshots, or by the ``rejected`` candidates being
    removed (pinned, and pushed, while their checks ran), from cache and remote; count files
    removed. An object any kept snapshot uses stays."""
    check = ObjectCheck(root)
    kept_objects = set(plan.keep)
    for snapshot in plan.keep:
        entries, _ = check.snapshot(snapshot)
        kept_objects |= {md5 for _, md5 in entries}
    doomed: set[str] = set()
    for snapshot in [*plan.delete, *rejected]:
        entries, _ = check.snapshot(snapshot)
        doomed |= ({snapshot} | {md5 for _, md5 in entries}) - kept_objects
    removed = 0
    for md5 in sorted(doomed):
        path = object_path(check.settings.cache, md5)
        if path.is_file():
            path.unlink()
            removed += 1
    if doomed:
        removed += check.remote.delete(doomed)
    for snapshot in plan.delete:
        append_record(root, GC, {"snapshot_id": snapshot})
    return removed
