"""Temporal splits: cutoffs at the ratio quantiles of rows ordered by (timestamp, doc_id).

Rows are ordered by the key ``(timestamp, doc_id)``, so ties on timestamp are broken by id and
every cutoff is exact. Cutoffs are found without sorting the corpus: one pass for the time range,
one for a fixed-bin histogram, and one that collects only the keys inside the bin holding the
quantile. An optional gap (embargo) drops rows whose timestamp is within ``gap`` before the next
window's start; they are logged, not silently lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import iter_shards

HISTOGRAM_BINS = 4096
EMBARGO = "embargo"
MICROS_PER_DAY = 86_400 * 1_000_000

TimeKey = tuple[int, str]


class TemporalError(CorpusError):
    """Rows that a time split cannot place (no timestamp)."""


@dataclass(frozen=True)
class Cutoffs:
    """Start keys of the validation and test windows, and the embargo gap in microseconds."""

    validation: TimeKey
    test: TimeKey
    gap: int

    def window_of(self, micros: int, doc_id: str) -> str:
        """The split whose window holds this row, or ``embargo`` if it falls in a gap."""
        key = (micros, doc_id)
        if key < self.validation:
            return "train" if self.gap == 0 or micros < self.validation[0] - self.gap else EMBARGO
        if key < self.test:
            return "validation" if self.gap == 0 or micros < self.test[0] - self.gap else EMBARGO
        return "test"

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Cutoffs:
        """The cutoffs a manifest recorded (:meth:`as_dict`)."""
        validation, test = data["validation_start"], data["test_start"]
        assert isinstance(validation, list) and isinstance(test, list)
        return cls(
            (int(validation[0]), str(validation[1])),
            (int(test[0]), str(test[1])),
            int(data["gap_micros"]),  # type: ignore[call-overload]
        )

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for manifests and metadata."""
        return {
            "validation_start": list(self.validation),
            "test_start": list(self.test),
            "gap_micros": self.gap,
        }


def micros(table: pa.Table, where: str) -> np.ndarray:
    """Timestamps as int64 microseconds; raise naming a row that has none."""
    column = table.column("timestamp")
    if column.null_count:
        missing = pc.filter(table.column("doc_id"), pc.is_null(column))[0].as_py()
        raise TemporalError(
            f"{where}: {column.null_count} row(s) have no timestamp (first: doc_id {missing!r}); "
            "a time split needs one on every row: fill them in or use split.mode group"
        )
    return column.combine_chunks().cast(pa.int64()).to_numpy(zero_copy_only=False)


def _rank_key(folder: Path, num_shards: int, rank: int, low: int, high: int) -> TimeKey:
    edges = np.linspace(low, high + 1, HISTOGRAM_BINS + 1)
    counts = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    for shard, table in iter_shards(folder, num_shards, ["doc_id", "timestamp"]):
        values = micros(table, f"{folder} shard {shard}")
        counts += np.histogram(values, bins=edges)[0]
    cumulative = np.cumsum(counts)
    target = int(np.searchsorted(cumulative, rank, side="right"))
    before = int(cumulative[target - 1]) if target else 0
    lo, hi = edges[target], edges[target + 1]
    keys: list[TimeKey] = []
    for _, table in iter_shards(folder, num_shards, ["doc_id", "timestamp"]):
        values = micros(table, str(folder))
        inside = (values >= lo) & (values < hi)
        ids = pc.filter(table.column("doc_id"), pa.array(inside)).to_pylist()
        keys.extend(zip(values[inside].tolist(), ids, strict=True))
    keys.sort()
    return keys[rank - before]


def quantile_cutoffs(
    folder: Path, num_shards: int, ratios: dict[str, float], gap_days: float
) -> Cutoffs:
    """Cutoff keys so that train / validation / test hold the configured shares of rows."""
    total, low, high = 0, None, None
    for shard, table in iter_shards(folder, num_shards, ["doc_id", "timestamp"]):
        values = micros(table, f"{folder} shard {shard}")
        if values.size:
            total += values.size
            low = int(values.min()) if low is None else min(low, int(values.min()))
            high = int(values.max()) if high is None else max(high, int(values.max()))
    if total == 0 or low is None or high is None:
        raise TemporalError(f"{folder}: no rows to split by time")
    ranks = [
        min(total - 1, round(total * ratios[SPLITS[0]])),
        min(total - 1, round(total * (ratios[SPLITS[0]] + ratios[SPLITS[1]]))),
    ]
    validation, test = (_rank_key(folder, num_shards, r, low, high) for r in ranks)
    return Cutoffs(validation=validation, test=test, gap=round(gap_days * MICROS_PER_DAY))


@dataclass(frozen=True)
class OrderReport:
    """Whether each earlier split ends (plus the gap) before each later split starts."""

    violations: tuple[str, ...]
    bounds: dict[str, tuple[TimeKey, TimeKey] | None]

    @property
    def passed(self) -> bool:
        """True when time never runs backwards across splits."""
        return not self.violations


def split_time_bounds(
    split_root: Path, num_shards: int
) -> dict[str, tuple[TimeKey, TimeKey] | None]:
    """(smallest, largest) (timestamp, doc_id) key of every split; None for an empty split."""
    bounds: dict[str, tuple[TimeKey, TimeKey] | None] = {}
    for name in SPLITS:
        low: TimeKey | None = None
        high: TimeKey | None = None
        for shard, table in iter_shards(split_root / name, num_shards, ["doc_id", "timestamp"]):
            if not len(table):
                continue
            keys = list(
                zip(
                    micros(table, f"{name} shard {shard}").tolist(),
                    table.column("doc_id").to_pylist(),
                    strict=True,
                )
            )
            low = min(keys) if low is None else min(low, min(keys))
            high = max(keys) if high is None else max(high, max(keys))
        bounds[name] = (low, high) if low is not None and high is not None else None
    return bounds


def check_order(split_root: Path, num_shards: int, gap: int) -> OrderReport:
    """Every earlier split's last key precedes every later split's first key, by ``gap``."""
    bounds = split_time_bounds(split_root, num_shards)
    violations = []
    for i, earlier in enumerate(SPLITS):
        for later in SPLITS[i + 1 :]:
            a, b = bounds[earlier], bounds[later]
            if a is None or b is None:
                continue
            last, first = a[1], b[0]
            ordered = last < first if gap == 0 else last[0] + gap < first[0]
            if not ordered:
                violations.append(
                    f"{earlier} ends at {last} but {later} starts at {first} (gap {gap} us)"
                )
    return OrderReport(tuple(violations), bounds)
