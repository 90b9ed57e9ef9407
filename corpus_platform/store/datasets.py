"""Stage folders: ``data/<asset>``, written as a candidate and renamed into place.

A stage's candidate (``data/.staging-<asset>``) is written shard by shard (see
:mod:`corpus_platform.base.shards`), audited, and published by :func:`promote` (renames only);
:func:`recover_stage_folders` repairs what an interrupted build left.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
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


@contextmanager
def candidate_folder(final: Path) -> Iterator[Path]:
    """Yield an empty candidate folder for ``final`` (a leftover one is removed first).

    On any exception the candidate is removed; on success it stays for the audit, and
    :func:`promote` makes it ``final``. ``final`` is never touched here.
    """
    staging = candidate_path(final)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


# Not ".dvc": DVC would read the copy as a second pointer to the same folder and refuse to pin.
POINTER_COPY = ".dvc-copy"


def _aside(final: Path) -> tuple[Path, Path]:
    """Where publishing keeps the previous folder and a copy of its pointer until it is done."""
    return (
        final.parent / f".previous-{final.name}",
        final.parent / f".previous-{final.name}{POINTER_COPY}",
    )


def promote(final: Path) -> None:
    """Make the candidate ``final`` (renames only). The previous folder and a copy of its
    ``.dvc`` pointer are kept aside until :func:`settle` (the new folder is pinned) or
    :func:`roll_back` (pinning failed) ends the publication."""
    staging, (previous, pointer_copy) = candidate_path(final), _aside(final)
    for leftover in (previous, pointer_copy):
        remove_path(leftover)
    pointer = final.parent / f"{final.name}.dvc"
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
    previous, pointer_copy = _aside(final)
    pointer = final.parent / f"{final.name}.dvc"
    remove_path(final)
    if previous.exists():
        previous.rename(final)
    if pointer_copy.exists():
        pointer_copy.replace(pointer)
    else:
        pointer.unlink(missing_ok=True)


def remove_path(path: Path) -> None:
    """Remove a folder or a file; nothing when it is not there."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def recover_stage_folders(root: Path) -> list[str]:
    """Repair what an interrupted build left under ``data/``; return one line per action.

    A leftover candidate (``.staging-<asset>``) is removed. A ``.previous-<asset>`` folder or
    pointer copy means a publication that never settled (the build died between the renames and
    the end of pinning): it is rolled back, so ``data/<asset>`` and its pointer are again the
    last published snapshot.
    """
    data, actions = root / STAGE_ROOT, []
    if not data.is_dir():
        return actions
    for leftover in sorted(data.glob(".staging-*")):
        shutil.rmtree(leftover)
        actions.append(f"removed the unfinished candidate {leftover.relative_to(root)}")
    unsettled = {
        p.name.removeprefix(".previous-").removesuffix(POINTER_COPY)
        for p in data.glob(".previous-*")
    }
    for name in sorted(unsettled):
        roll_back(data / name)
        actions.append(f"restored {STAGE_ROOT}/{name} and its pointer from an unfinished publish")
    return actions
