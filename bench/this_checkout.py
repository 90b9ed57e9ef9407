"""Imported first by the benchmarks that build a project, so that every process of a build runs
the corpus_platform of this checkout (the folder above ``bench/``), whatever checkout the
virtual environment's editable install points at.

The processes find the package three ways: the build's Dagster process by ``sys.path`` (a
script's ``sys.path`` starts with its own folder, ``bench/``, so the editable install decides);
the DVC helper (``python -m``) and the engine's fork server (``python -c``, whose preload
imports the workers' modules) by the current folder first, then ``PYTHONPATH``. So this checkout
goes first on ``sys.path`` and on ``PYTHONPATH``, and a current folder that holds another
checkout is refused: its code would run in the workers while this one's ran in the Dagster
process, and the figures would be of neither.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def other_checkout(folder: Path) -> bool:
    """Whether ``folder`` holds a corpus_platform package that is not this checkout's."""
    return (folder / "corpus_platform" / "__init__.py").is_file() and folder.resolve() != REPO


if other_checkout(Path.cwd()):
    raise SystemExit(
        f"run the benchmark from {REPO} (or a folder without a corpus_platform package): the "
        f"current folder {Path.cwd()} holds another checkout, whose code the engine's workers "
        "would import"
    )
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
)
