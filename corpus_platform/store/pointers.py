"""A pinned folder's DVC pointer, moved when the folder is renamed.

A stage's candidate is pinned where it is written (``data/.staging-<asset>``, beside its
checks) and renamed into ``data/<asset>`` once it passed: its pointer then moves with it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from corpus_platform.store.remotes import SnapshotError
from corpus_platform.store.snapshots import pointer_path


def move_pointer(staged: Path, final: Path) -> str:
    """Move the pointer DVC wrote for the folder ``staged`` to the pointer of ``final``, the
    same folder renamed: only its ``path`` changes (a folder's DVC hash depends on the paths of
    its files relative to it, never on its own name), so the pointer is the one `dvc add` of
    ``final`` would write. Atomic: the old pointer of ``final`` is replaced in one rename.
    Returns the snapshot id.

    Raises:
        SnapshotError: ``staged`` has no pointer, or one that does not name it.
    """
    source, target = pointer_path(staged), pointer_path(final)
    if not source.is_file():
        raise SnapshotError(f"{source}: no DVC pointer; the folder was not pinned")
    text = source.read_text(encoding="utf-8")
    outs = yaml.safe_load(text).get("outs") or [{}]
    line = f"  path: {staged.name}\n"
    if len(outs) != 1 or outs[0].get("path") != staged.name or text.count(line) != 1:
        raise SnapshotError(f"{source}: not the pointer of one folder {staged.name!r}:\n{text}")
    moved = text.replace(line, f"  path: {final.name}\n")
    partial = target.with_name(target.name + ".partial")
    partial.write_text(moved, encoding="utf-8")
    partial.replace(target)
    source.unlink()
    return str(outs[0]["md5"])
