"""Stage folders: ``data/<asset>``, written as a candidate and renamed into place.

A stage's candidate (``data/.staging-<asset>``) is written shard by shard (see
:mod:`corpus_platform.base.shards`), audited, and published by :func:`promote` (renames only);
:func:`recover_stage_folders` repairs what an interrupted build left.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

STAGE_ROOT = "data"


def stage_path(root: Path, asset: str) -> Path:
    """The published folder of a stage in the project at ``root``: ``data/<asset>``."""
    return root / STAGE_ROOT / asset


def candidate_path(final: Path) -> Path:
    """Where the candidate of the stage folder ``final`` is written: ``.staging-<name>`` beside
    it, on the same filesystem, so publishing it is a rename."""
    return final.parent / f".staging-{final.name}"


def candidate_pointer(final: Path) -> Path:
    """The ``.dvc`` pointer DVC writes beside the candidate of ``final`` when it is pinned while
    its checks run; publishing moves it to ``final``'s pointer, a rejection removes it."""
    return final.parent / f".staging-{final.name}.dvc"


@contextmanager
def candidate_folder(final: Path) -> Iterator[Path]:
    """Yield an empty candidate folder for ``final`` (a leftover one is removed first).

    On any exception the candidate is removed; on success it stays for the audit, and
    :func:`promote` makes it ``final``. ``final`` is never touched here.
    """
    staging = candidate_path(final)
    remove_path(staging)
    remove_path(candidate_pointer(final))
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


# Not ".dvc": DVC would read the copy as a second pointer to the same folder and refuse to pin.
FIRST_MARKER = ".first"  # a first publication of a stage, not settled yet
POINTER_COPY = ".dvc-copy"


def _aside(final: Path) -> tuple[Path, Path, Path]:
    """Where publishing keeps the previous folder and a copy of its pointer until it is done, and
    the marker of a first publication (nothing to keep aside, but an unsettled one to undo)."""
    return (
        final.parent / f".previous-{final.name}",
        final.parent / f".previous-{final.name}{POINTER_COPY}",
        final.parent / f".previous-{final.name}{FIRST_MARKER}",
    )


def promote(final: Path) -> None:
    """Make the candidate ``final`` (renames only). The previous folder and a copy of its
    ``.dvc`` pointer are kept aside until :func:`settle` (the new folder is pinned) or
    :func:`roll_back` (pinning failed) ends the publication."""
    staging, (previous, pointer_copy, first) = candidate_path(final), _aside(final)
    for leftover in (previous, pointer_copy, first):
        remove_path(leftover)
    pointer = final.parent / f"{final.name}.dvc"
    if not pointer.is_file() and not final.exists():
        first.touch()  # recovery must know to undo a first publication too
    if pointer.is_file():
        shutil.copy2(pointer, pointer_copy)
    if final.exists():
        final.rename(previous)
    staging.rename(final)


def settle(final: Path) -> None:
    """The new ``final`` is pinned: drop what :func:`promote` kept aside."""
    for leftover in _aside(final):
        remove_path(leftover)


def roll_back(final: Path) -> None:
    """Undo :func:`promote`: the previous folder and pointer come back, exactly as they were (no
    folder and no pointer when there was none)."""
    previous, pointer_copy, first = _aside(final)
    pointer = final.parent / f"{final.name}.dvc"
    remove_path(final)
    if previous.exists():
        previous.rename(final)
    if pointer_copy.exists():
        pointer_copy.replace(pointer)
    else:
        pointer.unlink(missing_ok=True)
    first.unlink(missing_ok=True)


def _input_pointers_record(root: Path, asset: str) -> Path:
    return root / STAGE_ROOT / f".input-pointers-{asset}.json"


def keep_input_pointers(root: Path, asset: str, inputs: Iterable[Path]) -> None:
    """Before the publication of ``asset`` pins its inputs (raw files, evaluation sets), record
    their ``.dvc`` pointers as they are (``data/.input-pointers-<asset>.json``; no pointer is
    recorded as none), so that :func:`restore_input_pointers` can put them back when the
    publication fails, and :func:`recover_stage_folders` when the build dies before it ends."""
    saved = {}
    for path in inputs:
        pointer, top = (path.parent / f"{path.name}.dvc").resolve(), root.resolve()
        where = pointer.relative_to(top).as_posix() if pointer.is_relative_to(top) else str(pointer)
        saved[where] = pointer.read_text(encoding="utf-8") if pointer.is_file() else None
    if not saved:  # a stage without inputs
        return
    record = _input_pointers_record(root, asset)
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_name(record.name + ".partial")
    partial.write_text(json.dumps(saved, sort_keys=True, indent=1), encoding="utf-8")
    partial.replace(record)


def restore_input_pointers(root: Path, asset: str) -> bool:
    """Put the inputs' pointers of ``asset`` back as :func:`keep_input_pointers` recorded them
    (a pointer recorded as none is removed) and drop the record; False when there is none."""
    record = _input_pointers_record(root, asset)
    if not record.is_file():
        return False
    for where, text in json.loads(record.read_text(encoding="utf-8")).items():
        pointer = root / where  # an absolute path stays itself
        if text is None:
            pointer.unlink(missing_ok=True)
        elif not pointer.is_file() or pointer.read_text(encoding="utf-8") != text:
            pointer.write_text(text, encoding="utf-8")
    record.unlink()
    return True


def forget_input_pointers(root: Path, asset: str) -> None:
    """The publication of ``asset`` ended: its inputs' pointers stay as they are now."""
    _input_pointers_record(root, asset).unlink(missing_ok=True)


def remove_path(path: Path) -> None:
    """Remove a folder or a file; nothing when it is not there."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def recover_stage_folders(root: Path) -> list[str]:
    """Repair what an interrupted build left under ``data/``; return one line per action.

    A leftover candidate (``.staging-<asset>``) is removed, with the pointer DVC wrote for it
    when it was pinned before the build died. A ``.previous-<asset>`` folder or
    pointer copy means a publication that never settled (the build died between the renames and
    the end of pinning): it is rolled back, so ``data/<asset>`` and its pointer are again the
    last published snapshot. A ``.input-pointers-<asset>.json`` record means the build died
    while ``asset`` was pinning its inputs or being checked: their pointers are put back.
    """
    data, actions = root / STAGE_ROOT, []
    if not data.is_dir():
        return actions
    for record in sorted(data.glob(".input-pointers-*.json")):
        asset = record.name.removeprefix(".input-pointers-").removesuffix(".json")
        restore_input_pointers(root, asset)
        actions.append(f"restored the pointers of {asset}'s inputs from an unfinished publish")
    for partial in data.glob(".input-pointers-*.json.partial"):
        partial.unlink()
    for leftover in sorted(p for p in data.glob(".staging-*") if p.is_dir()):
        shutil.rmtree(leftover)
        actions.append(f"removed the unfinished candidate {leftover.relative_to(root)}")
    for pointer in data.glob(".staging-*.dvc"):  # a pinned candidate's, its folder gone
        pointer.unlink()
    for partial in data.glob("*.dvc.partial"):  # a pointer being moved into place
        partial.unlink()
    unsettled = {
        p.name.removeprefix(".previous-").removesuffix(POINTER_COPY).removesuffix(FIRST_MARKER)
        for p in data.glob(".previous-*")
    }
    for name in sorted(unsettled):
        roll_back(data / name)
        actions.append(f"restored {STAGE_ROOT}/{name} and its pointer from an unfinished publish")
    return actions
