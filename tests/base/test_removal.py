"""Scratch folders set aside and deleted beside the work (corpus_platform.base.removal)."""

import os
import subprocess
import sys
from pathlib import Path

from corpus_platform.base.removal import ASIDE, remove_aside, sweep, wait_for_removals


def filled(folder: Path) -> Path:
    (folder / "deep" / "er").mkdir(parents=True)
    for i in range(20):
        (folder / "deep" / "er" / f"f{i}.bin").write_bytes(os.urandom(4096))
    return folder


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_folder_set_aside_frees_its_name_at_once_and_is_deleted(tmp_path: Path) -> None:
    scratch = filled(tmp_path / "dedup")
    remove_aside(scratch)
    assert not scratch.exists()  # the name is free before the deletion ends
    scratch.mkdir()  # and can be used again at once
    wait_for_removals()
    assert [p.name for p in tmp_path.iterdir()] == ["dedup"]
    assert not any(scratch.iterdir())


def test_a_missing_folder_is_nothing_to_do(tmp_path: Path) -> None:
    remove_aside(tmp_path / "never")
    wait_for_removals()
    assert list(tmp_path.iterdir()) == []


def test_what_a_dead_process_set_aside_is_deleted_and_a_live_ones_is_left(
    tmp_path: Path,
) -> None:
    dead = filled(tmp_path / f"{ASIDE}{dead_pid()}-0-split")
    mine = filled(tmp_path / f"{ASIDE}{os.getpid()}-99-mix")  # being deleted by this process
    sweep(tmp_path)
    wait_for_removals()
    assert not dead.exists()
    assert mine.exists()
    filled(tmp_path / f"{ASIDE}{dead_pid()}-1-filter")
    remove_aside(filled(tmp_path / "shards"))
    wait_for_removals()
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name]
