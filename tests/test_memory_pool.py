"""Importing corpus_platform makes Arrow allocate from jemalloc unless the user chose a pool."""

import os
import subprocess
import sys

PROBE = "import corpus_platform, pyarrow; print(pyarrow.default_memory_pool().backend_name)"


def backend(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_jemalloc_by_default_and_the_users_choice_wins() -> None:
    assert backend() == "jemalloc"
    assert backend(ARROW_DEFAULT_MEMORY_POOL="system") == "system"
