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


def promote(final: Path) -> None:
    """Replace ``final`` by its candidate (renames only: the old folder is moved aside first and
    removed last)."""
    staging, previous = candidate_path(final), final.parent / f".previous-{final.name}"
    if previous.exists():
        shutil.rmtree(previous)
    if final.exists():
        final.rename(previous)
    staging.rename(final)
    if previous.exists():
        shutil.rmtree(previous)


def recover_stage_folders(root: Path) -> list[str]:
    """Clean what an interrupted build left under ``data/``; return one line per action.

    A leftover candidate (``.staging-<asset>``) is removed. A ``.previous-<asset>`` is a
    published folder moved aside by :func:`promote`: it is put back when ``<asset>`` is missing
    (the build died between the two renames), else removed.
    """
    data, actions = root / STAGE_ROOT, []
    if not data.is_dir():
        return actions
    for leftover in sorted(data.glob(".staging-*")):
        shutil.rmtree(leftover)
        actions.append(f"removed the unfinished candidate {leftover.relative_to(root)}")
    for previous in sorted(data.glob(".previous-*")):
        final = data / previous.name.removeprefix(".previous-")
        if final.exists():
            shutil.rmtree(previous)
            actions.append(f"removed {previous.relative_to(root)} (already replaced)")
        else:
            previous.rename(final)
            actions.append(f"restored {final.relative_to(root)} from an interrupted publish")
    return actions
