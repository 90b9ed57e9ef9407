"""A build's Dagster process allocates Arrow memory from jemalloc unless the user chose a pool;
importing the package alone changes nothing."""

import os
import subprocess
import sys

PROBE = (
    "import corpus_platform.definitions, pyarrow; from corpus_platform.engine.allocators import "
    "use_driver_pool; print(pyarrow.default_memory_pool().backend_name); use_driver_pool(); "
    "print(pyarrow.default_memory_pool().backend_name)"
)


def backends(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_jemalloc_when_a_build_starts_and_the_users_choice_wins() -> None:
    on_import, in_a_build = backends(ARROW_DEFAULT_MEMORY_POOL="mimalloc")
    assert on_import == in_a_build == "mimalloc"
    assert backends(ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]
    assert backends()[1] == "jemalloc"
