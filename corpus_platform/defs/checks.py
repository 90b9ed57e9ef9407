"""How every blocking check is declared and run: on the stage's candidate, before it is published.

A check is a function ``(corpus, candidate) -> CheckOutcome`` named as the check is named, with
its description as docstring; ``candidate`` is the folder the stage just wrote (not yet
``data/<asset>``). Each stage declares its checks once, as a :class:`StageChecks` list in its
family's ``checks.py``: the asset's ``check_specs``, the audit before publication
(:func:`audit`), the build summary and the tests all read that list. One failing never skips
another, and a check that raises counts as failed with its error as the verdict.

:func:`dagster_result` is the one adapter from a :class:`~corpus_platform.base.checks.
CheckOutcome` to Dagster: passed and failed become an ``AssetCheckResult``; a check that is not
applicable yields none, so the UI shows it as skipped (never as passed), and its verdict goes
into the materialization's metadata (``checks_not_applicable``).
"""

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.checks import CheckOutcome, CheckStatus
from corpus_platform.base.redact import redact, redact_text
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.store.provenance import stage_code_version

CheckFn = Callable[[CorpusProject, Path], CheckOutcome]


@dataclass(frozen=True)
class StageChecks:
    """The blocking checks of one stage, in the order they run and are shown.

    Attributes:
        asset: The stage they judge.
        checks: The check functions; each one's name is the check's name, its docstring the
            description shown in the UI.
    """

    asset: str
    checks: tuple[CheckFn, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The check names, in order."""
        return tuple(fn.__name__ for fn in self.checks)

    def specs(self) -> list[dg.AssetCheckSpec]:
        """The Dagster specs the asset declares, so the UI shows every check under it."""
        return [
            dg.AssetCheckSpec(fn.__name__, asset=self.asset, blocking=True, description=_doc(fn))
            for fn in self.checks
        ]

    def named(self, name: str) -> CheckFn:
        """The check called ``name``."""
        return next(fn for fn in self.checks if fn.__name__ == name)


@dataclass(frozen=True)
class CheckRun:
    """One check's outcome on a candidate, with the seconds it took."""

    asset: str
    name: str
    outcome: CheckOutcome
    seconds: float

    @property
    def status(self) -> CheckStatus:
        """Passed, failed or not applicable."""
        return self.outcome.status

    @property
    def passed(self) -> bool:
        """True when the check examined something and passed."""
        return self.status is CheckStatus.PASSED

    def metadata(self) -> dict[str, Any]:
        """The outcome's metadata, redacted, with the seconds."""
        return {**redact(self.outcome.metadata()), "seconds": self.seconds}


def stage_asset(
    checks: StageChecks,
    *,
    group_name: str,
    kinds: set[str],
    description: str,
    deps: Sequence[str] = (),
    partitions_def: dg.PartitionsDefinition | None = None,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """The decorator of a stage's asset: the asset ``checks.asset`` with the stage's checks.

    A single-asset ``multi_asset`` whose check results are optional outputs (``can_subset``), so
    that a check that is not applicable yields no result and shows as skipped rather than as
    passed; a failed blocking check still stops downstream work. Its code version is the digest
    of its stage family's source (:func:`~corpus_platform.store.provenance.stage_code_version`,
    the family read from the decorated function's module); its materializations report their
    snapshot id as data version, so Dagster's staleness follows content. A partitioned stage
    (``partitions_def``) runs all the partitions of a run in one step (a single-run backfill).
    """

    def decorate(fn: Callable[..., Any]) -> dg.AssetsDefinition:
        family = fn.__module__.split(".")[2]  # corpus_platform.defs.<family>.assets
        spec = dg.AssetSpec(
            checks.asset,
            deps=list(deps),
            group_name=group_name,
            kinds=kinds,
            description=description,
            code_version=stage_code_version(family),
            partitions_def=partitions_def,
        )
        return dg.multi_asset(
            name=checks.asset,
            specs=[spec],
            check_specs=checks.specs(),
            can_subset=True,
            backfill_policy=dg.BackfillPolicy.single_run() if partitions_def else None,
        )(fn)

    return decorate


def dagster_result(run: CheckRun) -> dg.AssetCheckResult | None:
    """The one adapter to Dagster: an ``AssetCheckResult`` for a passed or failed check (a
    warned one fails with severity WARN, which blocks nothing), nothing for a check that is not
    applicable (Dagster then shows it as skipped)."""
    if run.status is CheckStatus.NOT_APPLICABLE:
        return None
    return dg.AssetCheckResult(
        asset_key=run.asset,
        check_name=run.name,
        passed=run.status is CheckStatus.PASSED,
        severity=dg.AssetCheckSeverity.WARN
        if run.status is CheckStatus.WARNED
        else dg.AssetCheckSeverity.ERROR,
        metadata=run.metadata(),
    )


def run_check(fn: CheckFn, asset: str, corpus: CorpusProject, candidate: Path) -> CheckRun:
    """Run one check on ``candidate``; a check that raises has failed, its error the verdict."""
    started = time.perf_counter()
    try:
        outcome = fn(corpus, candidate)
    except Exception as error:
        verdict = redact_text(f"check raised {type(error).__name__}: {error}")
        outcome = CheckOutcome.judged(False, verdict)
    return CheckRun(asset, fn.__name__, outcome, round(time.perf_counter() - started, 3))


def audit(corpus: CorpusProject, stage: StageChecks, candidate: Path) -> list[CheckRun]:
    """Every check of ``stage`` run on its candidate, in the stage's order.

    Checks only read, so as many run side by side as the engine has workers: each submits its
    shard tasks to the same workers, and one check's last tasks and its own reduction in this
    process no longer leave workers waiting for the next check.
    """
    checks = stage.checks
    side_by_side = min(len(checks), corpus.load().engine.workers)

    def one(fn: CheckFn) -> CheckRun:
        return run_check(fn, stage.asset, corpus, candidate)

    if side_by_side <= 1:
        return [one(fn) for fn in checks]
    with ThreadPoolExecutor(side_by_side, thread_name_prefix=f"checks-{stage.asset}") as pool:
        return list(pool.map(one, checks))


def not_applicable(runs: Sequence[CheckRun]) -> dict[str, str]:
    """The verdicts of the checks that had nothing to check, by name."""
    return {r.name: r.outcome.verdict for r in runs if r.status is CheckStatus.NOT_APPLICABLE}


def plain_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values as plain Python values."""
    return {key: getattr(value, "value", value) for key, value in metadata.items()}


def _doc(fn: CheckFn) -> str:
    return " ".join((fn.__doc__ or "").split())
