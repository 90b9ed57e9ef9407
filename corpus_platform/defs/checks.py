"""How every blocking check is declared and run: on the stage's candidate, before it is published.

A check is a function ``(corpus, candidate) -> AssetCheckResult`` registered for its stage with
:func:`corpus_check`; ``candidate`` is the folder the stage just wrote (not yet ``data/<asset>``).
The stage's asset declares the specs (:func:`check_specs`) so Dagster shows every check under
the asset, and its publish step runs them all with :func:`audit`: one failing never skips
another, and a check that raises counts as failed with its error as the verdict.
"""

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.names import STAGE_CHECKS
from corpus_platform.base.redact import redact, redact_text
from corpus_platform.defs.resources import CorpusProject

CheckFn = Callable[[CorpusProject, Path], dg.AssetCheckResult]


@dataclass(frozen=True)
class StageCheck:
    """One registered blocking check of a stage."""

    asset: str
    name: str
    fn: CheckFn
    description: str


_REGISTERED: dict[tuple[str, str], StageCheck] = {}


def plain_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values as plain Python values."""
    return {key: getattr(value, "value", value) for key, value in metadata.items()}


def corpus_check(*, asset: str, name: str) -> Callable[[CheckFn], CheckFn]:
    """Register a blocking check of ``asset`` (its name must be listed in ``STAGE_CHECKS``)."""
    if name not in STAGE_CHECKS.get(asset, ()):
        raise ValueError(f"check {name!r} of {asset!r} is not listed in names.STAGE_CHECKS")

    def register(fn: CheckFn) -> CheckFn:
        _REGISTERED[(asset, name)] = StageCheck(asset, name, fn, (fn.__doc__ or "").strip())
        return fn

    return register


def check_on_published(fn: CheckFn, corpus: CorpusProject) -> dg.AssetCheckResult:
    """Run a registered check on its stage's published folder (``data/<asset>``), as an audit
    of what is already there rather than of a new candidate."""
    check = next(c for c in _REGISTERED.values() if c.fn is fn)
    return _run_one(check, corpus, corpus.stage_dir(check.asset))


def registered_checks(asset: str) -> list[StageCheck]:
    """The check functions of ``asset`` in ``STAGE_CHECKS`` order; a listed name without one is
    an error (a check that silently did not run would read as passed)."""
    missing = [n for n in STAGE_CHECKS[asset] if (asset, n) not in _REGISTERED]
    if missing:
        raise RuntimeError(f"checks {missing} of {asset!r} are listed but not registered")
    return [_REGISTERED[(asset, name)] for name in STAGE_CHECKS[asset]]


def check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    """The Dagster specs of every blocking check of ``asset``, as the asset declares them (its
    checks module must be imported first, for their descriptions)."""
    return [
        dg.AssetCheckSpec(c.name, asset=asset, blocking=True, description=c.description)
        for c in registered_checks(asset)
    ]


def _run_one(check: StageCheck, corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    try:
        result = check.fn(corpus, candidate)
    except Exception as error:
        return dg.AssetCheckResult(
            check_name=check.name,
            passed=False,
            metadata={"verdict": redact_text(f"check raised {type(error).__name__}: {error}")},
        )
    return dg.AssetCheckResult(
        check_name=check.name, passed=result.passed, metadata=result.metadata
    )


def _audited(check: StageCheck, corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    started = time.perf_counter()
    result = _run_one(check, corpus, candidate)
    seconds = round(time.perf_counter() - started, 3)
    metadata = {**redact(plain_metadata(dict(result.metadata))), "seconds": seconds}
    return dg.AssetCheckResult(check_name=check.name, passed=result.passed, metadata=metadata)


def audit(corpus: CorpusProject, asset: str, candidate: Path) -> list[dg.AssetCheckResult]:
    """Every check of ``asset`` run on its candidate, results in ``STAGE_CHECKS`` order,
    redacted, with the seconds each took in its metadata.

    Checks only read, so as many run side by side as the engine has workers: each submits its
    shard tasks to the same workers, and one check's last tasks and its own reduction in this
    process no longer leave workers waiting for the next check.
    """
    checks = registered_checks(asset)
    side_by_side = min(len(checks), corpus.load().engine.workers)
    if side_by_side <= 1:
        return [_audited(check, corpus, candidate) for check in checks]
    with ThreadPoolExecutor(side_by_side, thread_name_prefix=f"checks-{asset}") as checking:
        return list(checking.map(lambda check: _audited(check, corpus, candidate), checks))
