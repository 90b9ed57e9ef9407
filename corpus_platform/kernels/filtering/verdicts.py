"""Every verdict of the filter stage on one shard, kept as arrays.

A row is judged, in this order, by the personal-data kinds that drop it, the domain rule, the
heuristic filters that apply to it (:class:`~kernels.filtering.filters.FilterMatrix`) and
language identification. The stage needs, per row, the first failing verdict, the names of all
failing ones, the quality score (the mean headroom of all of them) and, per filter, a few rows
for review. Building a :class:`Verdict` for each of the ~30 filters of every row and reducing
them in Python cost 120 µs a document; here the reductions are column operations and
:class:`Verdict` objects are made only for removed rows and the rows sampled for review.
:meth:`ShardVerdicts.row` gives the full list of one row, which
``tests/kernels/filtering/test_verdicts.py`` reduces the plain way to check every result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from corpus_platform.kernels.filtering.filters import FILTERS, FilterMatrix, Verdict

FILTER_NAMES = [f.name for f in FILTERS]


def failed_before_language(pii: list[list[Verdict]], matrix: FilterMatrix) -> np.ndarray:
    """Rows that a personal-data kind, the domain rule or a heuristic filter fails: language
    identification does not run on them."""
    domain_failed = [d is not None and not d.passed for d in matrix.domains]
    pii_failed = [bool(p) for p in pii]
    return np.array(pii_failed, bool) | np.array(domain_failed, bool) | matrix.failed.any(axis=1)


@dataclass(frozen=True)
class ShardVerdicts:
    """The verdicts of one shard: ``pii`` (failing verdicts of the kinds that drop a row),
    the heuristic ``matrix`` with each row's domain verdict, and ``language`` (``None`` where
    identification did not run for a row)."""

    pii: list[list[Verdict]]
    matrix: FilterMatrix
    language: list[Verdict | None]

    def __len__(self) -> int:
        return len(self.pii)

    def row(self, i: int) -> list[Verdict]:
        """Every verdict of row ``i``, in order."""
        language = [self.language[i]] if self.language[i] is not None else []
        return self.pii[i] + self.matrix.verdicts(i) + language

    def first_failures(self) -> list[Verdict | None]:
        """The first failing verdict of every row (``None`` for a kept row)."""
        failed = self.matrix.failed
        first_column = np.where(failed.any(axis=1), failed.argmax(axis=1), -1).tolist()
        out: list[Verdict | None] = []
        for i, column in enumerate(first_column):
            domain, language = self.matrix.domains[i], self.language[i]
            if self.pii[i]:
                out.append(self.pii[i][0])
            elif domain is not None and not domain.passed:
                out.append(domain)
            elif column >= 0:
                out.append(self.matrix.verdict(i, column))
            elif language is not None and not language.passed:
                out.append(language)
            else:
                out.append(None)
        return out

    def failed_names(self, i: int) -> list[str]:
        """The names of every verdict row ``i`` failed, in order."""
        return [v.name for v in self.row(i) if not v.passed]

    def would_fail(self) -> Counter[str]:
        """How many rows each verdict fails (a row counts for every verdict it fails)."""
        counts: Counter[str] = Counter(v.name for row in self.pii for v in row)
        counts.update(d.name for d in self.matrix.domains if d is not None and not d.passed)
        for name, n in zip(FILTER_NAMES, self.matrix.failed.sum(axis=0).tolist(), strict=True):
            if n:
                counts[name] += n
        counts.update(v.name for v in self.language if v is not None and not v.passed)
        return counts

    def quality_scores(self) -> list[float]:
        """The quality score of every row: the mean headroom
        (:attr:`~kernels.filtering.filters.Verdict.headroom`) of the verdicts that judged it
        (1.0 when none did), rounded to 6 decimals; deduplication keeps, per cluster, the
        member with the highest score. The headrooms are added one after another in verdict
        order (a failing personal-data verdict or a filter that does not apply adds 0.0, which
        changes no sum), so the floats equal those of the plain per-row sum of
        ``tests/kernels/filtering/reference_filters.py``."""
        total = np.zeros(len(self))
        counts = np.array([len(p) for p in self.pii], dtype=np.int64)
        domains = self.matrix.domains
        total += [d.headroom if d is not None else 0.0 for d in domains]
        counts += np.array([d is not None for d in domains], dtype=np.int64)
        for column in self.matrix.headrooms().T:
            total += column
        counts += self.matrix.applies.sum(axis=1)
        total += [v.headroom if v is not None else 0.0 for v in self.language]
        counts += np.array([v is not None for v in self.language], dtype=np.int64)
        return [
            round(t / n, 6) if n else 1.0
            for t, n in zip(total.tolist(), counts.tolist(), strict=True)
        ]

    def buckets(self) -> dict[tuple[str, bool], np.ndarray]:
        """The rows judged by each (verdict name, passed) pair, ascending."""
        listed: dict[tuple[str, bool], list[int]] = {}
        for i, (pii, domain, language) in enumerate(
            zip(self.pii, self.matrix.domains, self.language, strict=True)
        ):
            for v in (*pii, domain, language):
                if v is not None:
                    listed.setdefault((v.name, v.passed), []).append(i)
        out = {key: np.array(rows, dtype=np.int64) for key, rows in listed.items()}
        for column, name in enumerate(FILTER_NAMES):
            applies, passed = self.matrix.applies[:, column], self.matrix.passed[:, column]
            for verdict_passed, mask in ((True, passed), (False, applies & ~passed)):
                if mask.any():
                    out[(name, verdict_passed)] = np.flatnonzero(mask)
        return out

    def verdict(self, i: int, name: str) -> Verdict:
        """Row ``i``'s verdict called ``name``."""
        if name in FILTER_NAMES:
            return self.matrix.verdict(i, FILTER_NAMES.index(name))
        return next(v for v in self.row(i) if v.name == name)
