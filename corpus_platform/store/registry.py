"""The snapshot registry: an append-only JSON-lines file, readable without the web server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REGISTRY_FILE = Path(".corpus") / "registry.jsonl"


def registry_path(root: Path) -> Path:
    """Where the registry of the project at ``root`` lives."""
    return root / REGISTRY_FILE


def record_snapshot(root: Path, entry: dict[str, Any]) -> None:
    """Append one snapshot record."""
    path = registry_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def list_snapshots(root: Path, asset: str | None = None) -> list[dict[str, Any]]:
    """Every recorded snapshot, oldest first, optionally of one asset."""
    path = registry_path(root)
    if not path.is_file():
        return []
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [e for e in entries if asset is None or e["asset"] == asset]
