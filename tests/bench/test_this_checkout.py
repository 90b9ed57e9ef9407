"""bench/this_checkout.py: a benchmark's every process imports the checkout its script is in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a benchmark script does first, then where it and a process it starts find the package.
PROBE = (
    "import sys, subprocess; sys.path.insert(0, sys.argv[1]); import this_checkout; "
    "import corpus_platform; print(corpus_platform.__file__); print(sys.path[0]); "
    "print(subprocess.run([sys.executable, '-c', 'import os, corpus_platform; "
    'print(corpus_platform.__file__); print(os.environ["PYTHONPATH"].split(os.pathsep)[0])\'], '
    "capture_output=True, text=True).stdout.strip())"
)


def _probe(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(REPO / "bench")],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_script_and_its_children_import_this_checkout(tmp_path: Path) -> None:
    done = _probe(tmp_path)
    assert done.returncode == 0, done.stderr
    mine, first, child, child_first = done.stdout.splitlines()
    assert Path(first) == REPO  # ahead of the editable install, wherever that points
    assert Path(child_first) == REPO  # PYTHONPATH: the fork server and the DVC helper
    assert Path(mine) == Path(child) == REPO / "corpus_platform" / "__init__.py"


def test_a_current_folder_holding_another_checkout_is_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus_platform").mkdir()
    (tmp_path / "corpus_platform" / "__init__.py").write_text("", encoding="utf-8")
    done = _probe(tmp_path)
    assert done.returncode != 0
    assert f"run the benchmark from {REPO}" in done.stderr
    assert f"current folder {tmp_path} holds another checkout" in done.stderr
