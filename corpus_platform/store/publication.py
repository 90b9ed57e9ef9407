"""The end of a publication, journaled so that a build killed there still ends it.

Once a stage's candidate is renamed into ``data/<asset>`` and pinned, the publication writes a
journal (``data/.publishing-<asset>.json``: the registry records it is about to append), then
lets go of what it kept aside and appends the records, and removes the journal last. A build
killed anywhere in between leaves the journal: the next build's recovery
(:func:`recover_publications`, before the stage folders' own recovery) finishes the
publication: the folder stays, what was kept aside is dropped, and every record of the journal
missing from the registry is appended. So no published, pinned snapshot is ever unknown to the
registry, and no input pointer is reverted behind a published stage.

Before the journal exists (killed between the rename and the end of pinning) the stage folders'
recovery rolls the publication back instead: the stage's checks passed, but its snapshot was
never fully pinned.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from corpus_platform.store.datasets import STAGE_ROOT, forget_input_pointers, settle, stage_path
from corpus_platform.store.registry import CHECK, SNAPSHOT, append_record, read_records
from corpus_platform.store.snapshots import current_snapshot

JOURNAL = ".publishing-{asset}.json"

Record = tuple[str, dict[str, Any]]  # (registry kind, record)


def journal_path(root: Path, asset: str) -> Path:
    """The journal of the publication of ``asset``."""
    return root / STAGE_ROOT / JOURNAL.format(asset=asset)


def begin(root: Path, asset: str, snapshot: str, records: list[Record]) -> None:
    """Write the journal of a pinned publication (atomically: a partial write is no journal)."""
    path = journal_path(root, asset)
    partial = path.with_name(path.name + ".partial")
    publication = uuid.uuid4().hex  # tells this publication's records from a rebuild's
    records = [(kind, {**record, "publication": publication}) for kind, record in records]
    document = {"asset": asset, "snapshot_id": snapshot, "records": records}
    partial.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
    partial.replace(path)


def complete(root: Path, asset: str) -> None:
    """End the publication of ``asset``: drop what was kept aside, append the journal's records
    the registry lacks, remove the journal."""
    path = journal_path(root, asset)
    document = json.loads(path.read_text(encoding="utf-8"))
    forget_input_pointers(root, asset)
    settle(stage_path(root, asset))
    present = {_key(kind, r) for kind in (SNAPSHOT, CHECK) for r in read_records(root, kind)}
    for kind, record in document["records"]:
        if _key(kind, record) not in present:  # a recovery appends only what is missing
            append_record(root, kind, record)
    path.unlink()


def recover_publications(root: Path) -> list[str]:
    """Finish every publication a killed build left journaled; one line per action. A journal
    whose snapshot is not the one ``data/<asset>`` names is stale and only removed."""
    data, actions = root / STAGE_ROOT, []
    if not data.is_dir():
        return actions
    for partial in data.glob(".publishing-*.json.partial"):
        partial.unlink()
    for path in sorted(data.glob(".publishing-*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        asset, snapshot = document["asset"], document["snapshot_id"]
        if current_snapshot(root, stage_path(root, asset)) != snapshot:
            path.unlink()
            actions.append(f"dropped a stale publication journal of {asset}")
            continue
        complete(root, asset)
        actions.append(f"finished the publication of {asset} {snapshot} from its journal")
    return actions


def _key(kind: str, record: dict[str, Any]) -> tuple[str, ...]:
    """A record of one publication: the same snapshot published again is a new publication."""
    return (kind, str(record.get("publication")), record["asset"], str(record.get("check")))
