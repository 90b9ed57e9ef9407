"""DVC commands forked from the zygote behave as in a new process: same output and exit codes,
the caller's environment and working directory, no state kept between requests, and a dead
zygote is replaced."""

from __future__ import annotations

import os
from pathlib import Path

from corpus_platform.store import dvc_process
from corpus_platform.store.dvc_process import _in_new_process, run_dvc


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert run_dvc(root, [["init", "--no-scm", "-q"]], dict(os.environ)).returncode == 0
    return root


def test_forked_commands_answer_as_a_new_process_does(tmp_path: Path) -> None:
    root = _project(tmp_path)
    env = dict(os.environ)
    commands = [["config", "core.autostage", "true"], ["config", "core.autostage"]]
    forked, fresh = run_dvc(root, commands, env), _in_new_process(root, commands, env)
    assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout) == (0, "true\n")
    failing = [["config", "core.autostage", "false"], ["add", "no-such-file"], ["version"]]
    forked, fresh = run_dvc(root, failing, env), _in_new_process(root, failing, env)
    assert forked.returncode == fresh.returncode != 0
    assert "no-such-file" in forked.stderr and "dvc add no-such-file" in forked.stderr
    assert run_dvc(root, [["config", "core.autostage"]], env).stdout == "false\n"  # ran in root


def test_each_request_gets_the_callers_environment(tmp_path: Path) -> None:
    root = _project(tmp_path)
    # DVC's --global config lives under DVC_GLOBAL_CONFIG_DIR when that is set
    first = {**os.environ, "DVC_GLOBAL_CONFIG_DIR": str(tmp_path / "one")}
    second = {**os.environ, "DVC_GLOBAL_CONFIG_DIR": str(tmp_path / "two")}
    assert run_dvc(root, [["config", "--global", "core.autostage", "true"]], first).returncode == 0
    assert (tmp_path / "one" / "config").is_file()
    answer = run_dvc(root, [["config", "--global", "core.autostage"]], second)
    assert answer.returncode != 0 and not (tmp_path / "two" / "config").exists()


def test_a_dead_zygote_is_replaced(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert run_dvc(root, [["version"]], dict(os.environ)).returncode == 0
    zygote = dvc_process._ZYGOTE_PROCESS.process
    assert zygote is not None
    zygote.kill()
    zygote.wait()
    again = run_dvc(root, [["config", "core.autostage", "true"]], dict(os.environ))
    assert again.returncode == 0
    assert run_dvc(root, [["version"]], dict(os.environ)).returncode == 0
    replacement = dvc_process._ZYGOTE_PROCESS.process
    assert replacement is not None and replacement.pid != zygote.pid
