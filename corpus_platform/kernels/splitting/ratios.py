"""The split-ratio audit: achieved shares against the configured ratios, and when a giant
component is the reason they deviate, which one and what to do."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import iter_shards
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.splitting.components import PlacedComponent, largest_placed
from corpus_platform.kernels.splitting.split import bucket_bounds, split_of


@dataclass(frozen=True)
class RatioReport:
    """Rows (or components) per split, the achieved shares and the verdict."""

    unit: str
    sizes: dict[str, int]
    achieved: dict[str, float]
    worst: float
    tolerance: float
    largest: PlacedComponent | None
    cause: str
    row_shares: dict[str, float] = field(default_factory=dict)  # always, beside components'
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)  # reason -> bucket split

    def missing_held_out(self) -> str:
        """Where the held-out rows that are in no split went: dropped rows whose component's
        bucket is validation or test, by split and reason ("" when none)."""
        parts = []
        for name in SPLITS[1:]:
            reasons = {r: by[name] for r, by in sorted(self.dropped.items()) if by.get(name)}
            if reasons:
                detail = ", ".join(f"{r} {n}" for r, n in reasons.items())
                parts.append(f"{name} {sum(reasons.values())} ({detail})")
        return "held-out rows dropped: " + "; ".join(parts) if parts else ""

    @property
    def passed(self) -> bool:
        """True when every share lies within the tolerance of its ratio."""
        return self.worst <= self.tolerance

    def describe(self) -> str:
        """A one-line verdict, naming the largest component when it is the cause, with the row
        shares beside component shares and where dropped held-out rows went."""
        rows = ", ".join(f"{n} {self.row_shares[n]:.3f}" for n in SPLITS if n in self.row_shares)
        extra = f"; row shares {rows}" if self.unit != "row" and rows else ""
        missing = self.missing_held_out()
        return (
            f"largest deviation of {self.unit} shares {self.worst:.3f}, "
            f"tolerance {self.tolerance}{self.cause}{extra}" + (f"; {missing}" if missing else "")
        )


def component_shares(root: Path, num_shards: int, split: SplitConfig) -> Counter[str]:
    """Distinct components per split as their buckets assign them, dropped rows included."""
    bounds = bucket_bounds(split.ratios)
    seen: dict[str, str] = {}
    for folder in [*SPLITS, "dropped"]:
        for _, table in iter_shards(root / folder, num_shards, ["component", "bucket"]):
            pairs = zip(
                table.column("component").to_pylist(),
                table.column("bucket").to_pylist(),
                strict=True,
            )
            seen.update((c, split_of(b, bounds)) for c, b in pairs)
    return Counter(seen.values())


def component_cause(
    largest: PlacedComponent | None, achieved: dict[str, float], split: SplitConfig
) -> str:
    """Why the shares deviate, when the largest component is the reason: its share alone
    exceeds the tolerance, or it landed in the split that is furthest over its target."""
    if largest is None:
        return ""
    ratios, tolerance = split.ratios, split.tolerance
    over = max(SPLITS, key=lambda n: (achieved[n] - ratios[n], n))
    landed_over = largest.split == over and achieved[over] > ratios[over]
    if largest.share <= tolerance and not landed_over:
        return ""
    where = f"{largest.split}, the split furthest over its target" if landed_over else largest.split
    return (
        f"; cause: the largest component {largest.name!r} holds {largest.rows} of "
        f"{largest.total_rows} rows ({largest.share:.1%}) and is placed whole in {where}. Set "
        f"split.oversize: cut with split.max_component_share below {largest.share:.3f} (now "
        f"{split.max_component_share}) to cut it, or raise split.tolerance"
    )


def dropped_rows(root: Path, num_shards: int, split: SplitConfig) -> dict[str, dict[str, int]]:
    """Dropped rows per reason and per the split their component's bucket would have placed
    them in."""
    bounds = bucket_bounds(split.ratios)
    out: dict[str, Counter[str]] = defaultdict(Counter)
    if not (root / "dropped").is_dir():  # a split that dropped nothing may have no folder
        return {}
    for _, table in iter_shards(root / "dropped", num_shards, ["reason", "bucket"]):
        pairs = zip(
            table.column("reason").to_pylist(), table.column("bucket").to_pylist(), strict=True
        )
        for reason, bucket in pairs:
            out[reason][split_of(bucket, bounds)] += 1
    return {reason: dict(sorted(by.items())) for reason, by in sorted(out.items())}


def split_ratio_task(_: int, root: Path, num_shards: int, split: SplitConfig) -> RatioReport:
    """:func:`split_ratio_report` as an engine task: it reads every shard and counts the rows of
    every component (the largest one named), a count per component that grows with the corpus,
    so a worker holds it, not the process that runs the build."""
    return split_ratio_report(root, num_shards, split)


def split_ratio_report(root: Path, num_shards: int, split: SplitConfig) -> RatioReport:
    """Shares of rows, or in ``time_group`` mode (where windows drop rows by design) shares of
    components by bucket, against ``split.ratios``."""
    by_component = split.mode == "time_group"
    rows = Counter(
        {n: sum(len(t) for _, t in iter_shards(root / n, num_shards, ["doc_id"])) for n in SPLITS}
    )
    sizes = component_shares(root, num_shards, split) if by_component else rows
    total = sum(sizes.values()) or 1
    achieved = {name: sizes[name] / total for name in SPLITS}
    worst = max(abs(achieved[n] - split.ratios[n]) for n in SPLITS)
    grouped = split.mode in ("group", "time_group")
    largest = largest_placed(root, num_shards) if grouped else None
    cause = "" if worst <= split.tolerance else component_cause(largest, achieved, split)
    return RatioReport(
        "component" if by_component else "row",
        {n: sizes[n] for n in SPLITS},
        achieved,
        worst,
        split.tolerance,
        largest,
        cause,
        {n: rows[n] / (sum(rows.values()) or 1) for n in SPLITS},
        dropped_rows(root, num_shards, split),
    )
