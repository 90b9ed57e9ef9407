"""The snapshot registry: an append-only JSON-lines file, readable without the web server.

Kinds of record: ``snapshot`` (one per published materialization, with its provenance, counts
and recorded config), ``check`` (one per check evaluation, against the snapshot it judged),
``candidate`` (a rejected candidate kept in quarantine, with its verdicts) and ``pin`` / ``gc``
(retention decisions). Records are redacted before they are written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.redact import redact

REGISTRY_FILE = Path(".corpus") / "registry.jsonl"
SNAPSHOT, CHECK, PIN, GC = "snapshot", "check", "pin", "gc"
CANDIDATE = "candidate"
RAW_INPUT = "raw"
EVAL_PREFIX = "eval:"
TOKENIZER_INPUT = "tokenizer"  # mix.tokenizer's file, when the mix counts tokens with one


def eval_input(name: str) -> str:
    """The upstream name under which an evaluation set's snapshot is recorded."""
    return f"{EVAL_PREFIX}{name}"


def is_input(name: str) -> bool:
    """True for upstream names that are pinned input files, not assets."""
    return name in (RAW_INPUT, TOKENIZER_INPUT) or name.startswith(EVAL_PREFIX)


class RegistryError(CorpusError):
    """A snapshot or name that the registry does not know."""


def registry_path(root: Path) -> Path:
    """Where the registry of the project at ``root`` lives."""
    return root / REGISTRY_FILE


def append_record(root: Path, kind: str, entry: dict[str, Any]) -> None:
    """Append one redacted record."""
    path = registry_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(redact({"kind": kind, **entry}), sort_keys=True) + "\n")


def record_snapshot(root: Path, entry: dict[str, Any]) -> None:
    """Append one snapshot record."""
    append_record(root, SNAPSHOT, entry)


def read_records(root: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Every record, oldest first, optionally of one kind."""
    path = registry_path(root)
    if not path.is_file():
        return []
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in records if kind is None or r.get("kind", SNAPSHOT) == kind]


def list_snapshots(root: Path, asset: str | None = None) -> list[dict[str, Any]]:
    """Every recorded snapshot, oldest first, optionally of one asset."""
    return [e for e in read_records(root, SNAPSHOT) if asset is None or e["asset"] == asset]


def find_snapshot(root: Path, snapshot_id: str) -> dict[str, Any]:
    """The newest record of a snapshot, by full id or a unique prefix of at least 6 characters.

    Raises:
        RegistryError: when nothing or more than one snapshot matches.
    """
    entries = list_snapshots(root)
    exact = [e for e in entries if e["snapshot_id"] == snapshot_id]
    if not exact and len(snapshot_id) >= 6:
        exact = [e for e in entries if e["snapshot_id"].startswith(snapshot_id)]
    ids = {e["snapshot_id"] for e in exact}
    if not exact:
        raise RegistryError(
            f"snapshot {snapshot_id!r} is not in {registry_path(root)}; "
            "list them with `corpus snapshots`"
        )
    if len(ids) > 1:
        raise RegistryError(f"snapshot prefix {snapshot_id!r} is ambiguous: {sorted(ids)}")
    return exact[-1]


def chain(root: Path, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``entry`` and every snapshot it was built from, upstream first (raw excluded).

    A snapshot id can have several records: a stage that rebuilt byte for byte what it had
    published (the statistics fit of unchanged train rows) records the same id again, with
    the upstream snapshots of that later build. Each upstream id is therefore resolved to its
    newest record written before the record that names it (a stage is recorded after the
    stages it read), so the chain of an older snapshot is the chain it was built from, never a
    later build's upstream.
    """
    records = list_snapshots(root)
    ordered: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(record: dict[str, Any], position: int) -> None:
        for name, upstream_id in sorted(record["upstream_snapshots"].items()):
            if is_input(name) or upstream_id in seen:
                continue
            visit(*_recorded_before(root, records, upstream_id, position))
        if record["snapshot_id"] not in seen:
            seen.add(record["snapshot_id"])
            ordered.append(record)

    visit(entry, _position(records, entry))
    return ordered


def _position(records: list[dict[str, Any]], entry: dict[str, Any]) -> int:
    """Where ``entry`` is among ``records`` (its last occurrence; past the end when absent)."""
    for index in range(len(records) - 1, -1, -1):
        if records[index] == entry:
            return index
    return len(records)


def _recorded_before(
    root: Path, records: list[dict[str, Any]], snapshot_id: str, position: int
) -> tuple[dict[str, Any], int]:
    """The newest record of ``snapshot_id`` among ``records[:position]``, and its position; the
    newest record of all (:func:`find_snapshot`) when none is that old."""
    for index in range(min(position, len(records)) - 1, -1, -1):
        if records[index]["snapshot_id"] == snapshot_id:
            return records[index], index
    found = find_snapshot(root, snapshot_id)
    return found, _position(records, found)


def raw_snapshot(records: list[dict[str, Any]]) -> str:
    """The raw snapshot id a chain starts from."""
    first = records[0]
    if RAW_INPUT not in first["upstream_snapshots"]:
        raise RegistryError(f"chain of {first['asset']} does not start at a raw snapshot")
    return first["upstream_snapshots"][RAW_INPUT]


def check_status(record: dict[str, Any]) -> str:
    """A check record's status: ``passed``, ``failed`` or ``not applicable`` (records written
    before the status was recorded say only whether they passed)."""
    return str(record.get("status") or ("passed" if record["passed"] else "failed"))


STATUS_LABELS = {"passed": "PASS", "failed": "FAIL", "not applicable": "n/a", "warned": "WARN"}


def latest_checks(root: Path, asset: str, snapshot_id: str) -> dict[str, dict[str, Any]]:
    """The newest verdict of every check evaluated against one snapshot."""
    out: dict[str, dict[str, Any]] = {}
    for record in read_records(root, CHECK):
        if record["asset"] == asset and record["snapshot_id"] == snapshot_id:
            out[record["check"]] = record
    return dict(sorted(out.items()))


def admitting_checks(root: Path, asset: str, snapshot_id: str) -> dict[str, dict[str, Any]]:
    """The verdicts that admitted a snapshot: the checks of the first publication of it. A
    rebuild that publishes the same bytes again records verdicts of its own (an append's
    checks judge its new rows, a rerun's the whole data), which :func:`latest_checks` gives;
    what first admitted the bytes stays the same. The newest verdicts where the registry
    names no publication (records older than publications)."""
    records = read_records(root)
    first = next(
        (
            r.get("publication")
            for r in records
            if r["kind"] == SNAPSHOT and r["asset"] == asset and r["snapshot_id"] == snapshot_id
        ),
        None,
    )
    if first is None:
        return latest_checks(root, asset, snapshot_id)
    admitted = {
        r["check"]: r  # the newest of a check evaluated twice in one publication
        for r in records
        if r["kind"] == CHECK
        and r.get("publication") == first
        and r["asset"] == asset
        and r["snapshot_id"] == snapshot_id
    }
    return dict(sorted(admitted.items()))


def record_admitted(work: Path, root: Path, asset: str, snapshot_id: str) -> None:
    """Record in the project at ``work`` the snapshot of ``root`` it restored, with the checks
    that admitted it, as that snapshot's publication there: a replay's card then shows the
    verdicts the original's does."""
    entry = find_snapshot(root, snapshot_id)
    record_snapshot(work, entry)
    for check in admitting_checks(root, asset, snapshot_id).values():
        append_record(work, CHECK, {**check, "publication": entry.get("publication")})
