"""The lineage report of a snapshot: its chain, config, code, environment, counts and checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus_platform.store.registry import (
    STATUS_LABELS,
    chain,
    check_status,
    find_snapshot,
    latest_checks,
    raw_snapshot,
)

COUNT_KEYS = (
    "rows",
    "rows_in",
    "duplicate_clusters",
    "split_sizes",
    "dropped",
    "removed_by_filter",
    "epoch",
    "epoch_moves",
)


def _counts(entry: dict[str, Any]) -> str:
    counts = entry.get("counts", {})
    return "; ".join(f"{k} {json.dumps(counts[k])}" for k in COUNT_KEYS if k in counts) or "-"


def _checks(root: Path, entry: dict[str, Any]) -> str:
    verdicts = latest_checks(root, entry["asset"], entry["snapshot_id"])
    if not verdicts:
        return "none recorded"
    return ", ".join(f"{STATUS_LABELS[check_status(v)]} {name}" for name, v in verdicts.items())


def lineage_report(root: Path, snapshot_id: str) -> str:
    """A markdown report of how a snapshot was made, readable in a terminal and in the UI."""
    entry = find_snapshot(root, snapshot_id)
    records = chain(root, entry)
    dirty = " (uncommitted changes)" if entry["code_dirty"] else ""
    annotations = entry.get("config", {}).get("annotations", {})
    lines = [
        f"# Lineage of {entry['asset']} snapshot {entry['snapshot_id']}",
        "",
        f"- replay: `corpus replay {entry['snapshot_id']}`",
        f"- raw snapshot: {raw_snapshot(records)}",
        f"- config hash: {entry['config_hash']}",
        f"- code version: {entry['code_version']}{dirty}",
        f"- environment digest: {entry['environment_digest']}",
        f"- annotations: {json.dumps(annotations, sort_keys=True)}",
        "",
        "| stage | snapshot | upstream | counts | checks |",
        "|---|---|---|---|---|",
    ]
    for record in records:
        upstream = ", ".join(f"{k} {v}" for k, v in sorted(record["upstream_snapshots"].items()))
        lines.append(
            f"| {record['asset']} | {record['snapshot_id']} | {upstream} | {_counts(record)} | "
            f"{_checks(root, record)} |"
        )
    return "\n".join(lines)
