"""A stage's checks run side by side, as many as the engine has workers, results in order."""

import threading
from pathlib import Path

import pytest

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.defs import checks as checking
from corpus_platform.defs.resources import CorpusProject
from tests.conftest import make_project, set_config

ASSET = "split_documents"


def _meeting_checks(parties: int, names: list[str]) -> checking.StageChecks:
    """Checks that each wait for ``parties`` of them to be running at once (a barrier): run one
    after another, the first waits out its timeout and raises, which fails it."""
    barrier = threading.Barrier(parties, timeout=5)

    def meet(name: str):
        def check(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
            barrier.wait()
            return CheckOutcome.judged(name != "fails", name)

        check.__name__ = name
        return check

    return checking.StageChecks(ASSET, tuple(meet(name) for name in names))


@pytest.fixture
def project(tmp_path: Path) -> CorpusProject:
    root = make_project(tmp_path / "project")
    return CorpusProject(root=str(root))


def test_two_workers_run_two_checks_at_once_and_keep_their_order(project) -> None:
    set_config(project.root_path, engine={"kind": "local", "workers": 2})
    names = ["first", "fails", "third", "fourth"]
    results = checking.audit(project, _meeting_checks(2, names), project.root_path)
    assert [r.name for r in results] == names
    assert [r.passed for r in results] == [True, False, True, True]
    assert all(r.seconds < 5 for r in results)  # nobody waited out the barrier


def test_one_worker_runs_the_checks_one_after_another(project) -> None:
    results = checking.audit(project, _meeting_checks(2, ["first", "second"]), project.root_path)
    # the first waited alone until the barrier broke, which the second then found broken
    assert [r.passed for r in results] == [False, False]
    assert all("raised BrokenBarrierError" in r.metadata()["verdict"] for r in results)
    assert results[0].seconds >= 5
