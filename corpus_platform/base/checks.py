"""What a blocking check concludes, in one typed result every layer can read (Dagster-free).

A check passes, fails, or is not applicable: it had nothing to check (the temporal order of a
split that promises none, the overlap with evaluation sets when none is configured). A check
that is not applicable never blocks and is never reported as passed: the Dagster layer shows it
as skipped, the build summary and the registry as ``not applicable``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class CheckStatus(StrEnum):
    """The outcomes of a check."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not applicable"
    WARNED = "warned"  # over a warning threshold: shown as a warning, never blocking


@dataclass(frozen=True)
class CheckOutcome:
    """One check's result: its status, a one-line verdict with the numbers, the offending rows
    or files (a few examples), and any further details to show beside them.

    Attributes:
        status: Passed, failed, not applicable or warned (failed a warning threshold only).
        verdict: What was measured, e.g. ``entities in two splits: 0 of 812``.
        offenders: Up to a few examples of what failed (ids, files, pairs).
        details: Further numbers and tables, JSON-ready, shown with the result.
    """

    status: CheckStatus
    verdict: str
    offenders: tuple[Any, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def judged(
        cls,
        passed: bool,
        verdict: str,
        offenders: Iterable[Any] = (),
        details: Mapping[str, Any] | None = None,
    ) -> CheckOutcome:
        """A check that examined something: passed or failed."""
        status = CheckStatus.PASSED if passed else CheckStatus.FAILED
        return cls(status, verdict, tuple(offenders), dict(details or {}))

    @classmethod
    def from_metadata(cls, passed: bool, metadata: Mapping[str, Any]) -> CheckOutcome:
        """A judged outcome from a metadata mapping whose ``verdict`` and ``offenders`` keys
        fill those fields; every other key is a detail."""
        details = dict(metadata)
        verdict = str(details.pop("verdict", ""))
        offenders = details.pop("offenders", ())
        return cls.judged(passed, verdict, offenders, details)

    @classmethod
    def warned(
        cls, verdict: str, offenders: Iterable[Any] = (), details: Mapping[str, Any] | None = None
    ) -> CheckOutcome:
        """A check over a warning threshold but within its blocking one: shown as a warning
        in the UI and the summary, never stopping publication."""
        return cls(CheckStatus.WARNED, verdict, tuple(offenders), dict(details or {}))

    @classmethod
    def not_applicable(cls, why: str, details: Mapping[str, Any] | None = None) -> CheckOutcome:
        """A check with nothing to check; ``why`` says what it would need."""
        return cls(CheckStatus.NOT_APPLICABLE, why, (), dict(details or {}))

    @property
    def blocks(self) -> bool:
        """True when the outcome stops publication (only a failure does)."""
        return self.status is CheckStatus.FAILED

    def metadata(self) -> dict[str, Any]:
        """Everything as one flat, JSON-ready mapping (status, verdict, offenders, details)."""
        out: dict[str, Any] = {"status": str(self.status), "verdict": self.verdict}
        if self.offenders:
            out["offenders"] = list(self.offenders)
        return {**out, **self.details}
