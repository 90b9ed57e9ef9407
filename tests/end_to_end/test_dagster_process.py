"""What the Dagster process of a build never loads, with the engine's worker processes."""

import subprocess
import sys
from pathlib import Path

from tests.conftest import make_project

BUILD = (
    "import sys; from pathlib import Path; import dagster as dg;"
    "from corpus_platform.runner import run_build;"
    "report = run_build(Path(sys.argv[1]), instance=dg.DagsterInstance.ephemeral());"
    "print('SUCCESS', report.success, sorted(report.materialized));"
    "print('NUMBA', 'numba' in sys.modules)"
)


def test_the_compiled_kernels_load_in_workers_never_in_the_dagster_process(tmp_path: Path) -> None:
    """Every numba kernel (word hashes, hash sets, signatures, document frequencies) runs in
    an engine task: importing numba alone adds over 100 MB to a process's resident memory, and
    the Dagster process's memory is what must not grow (the recall sample, the split's
    neighbour links and the evaluation n-grams were once hashed there)."""
    root = make_project(tmp_path / "project", engine={"kind": "local", "workers": 2})
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(root)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SUCCESS True" in done.stdout and "training_shards" in done.stdout, done.stdout
    assert "NUMBA False" in done.stdout
