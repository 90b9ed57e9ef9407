"""The split-ratio audit: achieved shares against the configured ratios, and when a giant
component is the reason they deviate, which one and what to do."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
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

    @property
    def passed(self) -> bool:
        """True when every share lies within the tolerance of its ratio."""
        return self.worst <= self.tolerance

    def describe(self) -> str:
        """A one-line verdict, naming the largest component when it is the cause."""
        return (
            f"largest deviation of {self.unit} shares {self.worst:.3f}, "
            f"tolerance {self.tolerance}{self.cause}"
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


def split_ratio_report(root: Path, num_shards: int, split: SplitConfig) -> RatioReport:
    """Shares of rows, or in ``time_group`` mode (where windows drop rows by design) shares of
    components by bucket, against ``split.ratios``."""
    by_component = split.mode == "time_group"
    if by_component:
        sizes = component_shares(root, num_shards, split)
    else:
        sizes = Counter(
            {
                n: sum(len(t) for _, t in iter_shards(root / n, num_shards, ["doc_id"]))
                for n in SPLITS
            }
        )
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
    )
