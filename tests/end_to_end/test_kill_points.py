"""A build killed (SIGKILL) at each step boundary of a publication, for two stages: each time the
next build recovers. ``data/`` is then a chain that passed, every published snapshot is in the
registry with its checks, every object it names is in DVC's cache, nothing is left over, and the
snapshot ids equal an uninterrupted build's.

The boundaries are the failpoints of corpus_platform/base/failpoints.py: candidate written,
added (while its checks run, DVC's cache holds the candidate and a pointer sits beside it,
nothing pushed), pinned (pushed to the remote), checks passed, renamed into data/, pointed (its
pointer moved to data/), journaled, registered. 2 stages x 8 points = 16 kills.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from corpus_platform.base.failpoints import POINTS, VARIABLE
from corpus_platform.store.registry import CHECK, list_snapshots, read_records
from corpus_platform.store.snapshots import ObjectCheck, current_snapshot
from tests.conftest import build, make_project

UP_TO_SPLIT = ["raw_documents", "filtered_documents", "deduplicated_documents", "split_documents"]
BUILD = """
import sys
from pathlib import Path
import dagster as dg
from corpus_platform.runner import run_build
run_build(Path(sys.argv[1]), instance=dg.DagsterInstance.ephemeral(), assets=sys.argv[2:])
"""
LEFTOVERS = (".previous-*", ".staging-*", ".publishing-*", ".input-pointers-*")


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("stage", ["filtered_documents", "split_documents"])
def test_a_build_killed_at_a_publication_step_is_recovered_by_the_next(
    built, tmp_path: Path, stage: str, point: str
) -> None:
    root = make_project(tmp_path / "project")
    killed = subprocess.run(
        [sys.executable, "-c", BUILD, str(root), *UP_TO_SPLIT],
        env={**_environment(), VARIABLE: f"{stage}:{point}"},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]

    report = build(root, UP_TO_SPLIT)

    assert report.ok, report.render()
    expected = {s: built[1].materialized[s]["snapshot_id"] for s in UP_TO_SPLIT}
    assert {s: report.materialized[s]["snapshot_id"] for s in UP_TO_SPLIT} == expected
    data = root / "data"
    assert not [p.name for pattern in LEFTOVERS for p in data.glob(pattern)]
    recorded = {(e["asset"], e["snapshot_id"]) for e in list_snapshots(root)}
    checked = {(r["asset"], r["snapshot_id"]) for r in read_records(root, CHECK)}
    objects = ObjectCheck(root)
    for asset, snapshot in expected.items():
        assert current_snapshot(root, data / asset) == snapshot
        assert (asset, snapshot) in recorded and (asset, snapshot) in checked
        _, missing = objects.snapshot(snapshot)
        assert not missing, (asset, missing)


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != VARIABLE}
