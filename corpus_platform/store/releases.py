"""Releases: the chain of stage snapshots that passed together and went to training, by name.

A release names one published ``training_shards`` snapshot and, through the registry, the whole
chain it was built from: every stage snapshot, the raw files, the evaluation sets and the
tokenizer. ``corpus run`` records one after every build in which every stage was built and no
check failed (named ``YYYY-MM-DD.N``, the Nth of that day); ``corpus release NAME`` names the
chain published now. ``gc`` keeps the chain of every named release, like a pin, and of the
newest ``--keep`` automatic ones (the others go the way of any old snapshot, or no build would
ever be collected); ``corpus checkout RELEASE`` restores it. A release record carries when and
by which code it was made, the config hash, and its rows and tokens; it lives in the registry,
never inside a stage folder (whose bytes stay a function of the data, the config and the code).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corpus_platform.base.names import STAGES, TRAINING_SHARDS
from corpus_platform.store.datasets import STAGE_ROOT
from corpus_platform.store.registry import (
    RegistryError,
    append_record,
    chain,
    find_snapshot,
    raw_snapshot,
    read_records,
)
from corpus_platform.store.snapshots import current_snapshot

RELEASE = "release"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def list_releases(root: Path) -> list[dict[str, Any]]:
    """Every release, oldest first (a name recorded twice: the newest record wins)."""
    latest = {r["name"]: r for r in read_records(root, RELEASE)}
    return sorted(latest.values(), key=lambda r: (r["created"], r["name"]))


def find_release(root: Path, name: str) -> dict[str, Any] | None:
    """The release called ``name``, or None."""
    return next((r for r in list_releases(root) if r["name"] == name), None)


def next_name(root: Path, now: datetime) -> str:
    """``YYYY-MM-DD.N``: the first counter of the day not taken yet."""
    day = now.strftime("%Y-%m-%d")
    taken = {r["name"] for r in read_records(root, RELEASE)}
    counter = 1
    while f"{day}.{counter}" in taken:
        counter += 1
    return f"{day}.{counter}"


def record_release(
    root: Path, name: str | None = None, run_id: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """Record the chain published in ``data/`` now as a release and return its record.

    Raises:
        RegistryError: when a stage has no published snapshot, the published stages are not one
            chain (a stage was rebuilt without the stages after it), or the name is invalid or
            taken.
    """
    now = now or datetime.now(UTC)
    if name is not None and (not NAME.match(name) or find_release(root, name) is not None):
        raise RegistryError(
            f"release name {name!r}: use letters, digits, '.', '_' or '-', not a name in use "
            "(`corpus releases` lists them)"
        )
    shards = current_snapshot(root, root / STAGE_ROOT / TRAINING_SHARDS)
    if shards is None:
        raise RegistryError(f"{STAGE_ROOT}/{TRAINING_SHARDS} has no snapshot: build first")
    records = chain(root, find_snapshot(root, shards))
    snapshots = {r["asset"]: r["snapshot_id"] for r in records}
    stale = [
        stage
        for stage in STAGES
        if current_snapshot(root, root / STAGE_ROOT / stage) != snapshots.get(stage)
    ]
    if stale:
        raise RegistryError(
            f"the published {', '.join(stale)} are not the ones {TRAINING_SHARDS} {shards} was "
            "built from (a stage was rebuilt alone): build the stages after it first"
        )
    last = records[-1]
    record = {
        "name": name or next_name(root, now),
        "named": name is not None,
        "created": now.isoformat(timespec="seconds"),
        "run_id": run_id,
        "snapshot_id": shards,
        "snapshots": snapshots,
        "raw_snapshot": raw_snapshot(records),
        "inputs": {
            k: v for r in records for k, v in r["upstream_snapshots"].items() if k not in snapshots
        },
        "code_version": last["code_version"],
        "code_dirty": last["code_dirty"],
        "config_hash": last["config_hash"],
        "rows": last.get("counts", {}).get("rows"),
        "tokens": last.get("counts", {}).get("tokens"),
    }
    append_record(root, RELEASE, record)
    return record
