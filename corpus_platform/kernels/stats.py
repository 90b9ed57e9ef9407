"""Statistics fitted on the train split only, merged from per-shard partials in shard order.

Per shard, each numeric feature gets exact moments (count, mean, M2, min, max); partials merge
with Chan et al.'s parallel formula in shard order, so the result does not depend on how many
workers computed them. The fit records the fingerprint of exactly the rows it saw.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.kernels.hashing import fingerprint
from corpus_platform.store.datasets import part_path, read_shard, write_parquet


@dataclass(frozen=True)
class Moments:
    """Count, mean, sum of squared deviations (M2), min and max of one feature."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf

    @classmethod
    def of(cls, values: np.ndarray) -> Moments:
        """Exact moments of the non-NaN ``values``."""
        values = values[~np.isnan(values)]
        if values.size == 0:
            return cls()
        mean = float(np.mean(values))
        return cls(
            count=int(values.size),
            mean=mean,
            m2=float(np.sum((values - mean) ** 2)),
            minimum=float(np.min(values)),
            maximum=float(np.max(values)),
        )

    def merge(self, other: Moments) -> Moments:
        """Chan's parallel combination of two partials."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        return Moments(
            count=count,
            mean=self.mean + delta * other.count / count,
            m2=self.m2 + other.m2 + delta * delta * self.count * other.count / count,
            minimum=min(self.minimum, other.minimum),
            maximum=max(self.maximum, other.maximum),
        )

    @property
    def std(self) -> float:
        """Population standard deviation (0 for fewer than two values)."""
        return math.sqrt(self.m2 / self.count) if self.count > 1 else 0.0


@dataclass(frozen=True)
class ShardPartial:
    """One shard's contribution to a fit."""

    shard: int
    rows: int
    ids_digest: str
    moments: dict[str, Moments]


def shard_partial(shard: int, folder: Path, features: tuple[str, ...]) -> ShardPartial:
    """Moments and a doc-id digest of one shard of the train split."""
    table = read_shard(folder, shard, ["doc_id", *features])
    ids = table.column("doc_id").to_pylist()
    moments = {
        name: Moments.of(table.column(name).to_numpy(zero_copy_only=False).astype(np.float64))
        for name in features
    }
    return ShardPartial(shard, len(ids), fingerprint(ids), moments)


def split_fingerprint(partials: list[ShardPartial]) -> str:
    """Fingerprint of a split: its shards' doc-id digests in shard order."""
    return fingerprint(p.ids_digest for p in sorted(partials, key=lambda p: p.shard))


def merge_partials(partials: list[ShardPartial], features: tuple[str, ...]) -> dict[str, Moments]:
    """Merge per-shard moments in shard order."""
    merged = {name: Moments() for name in features}
    for partial in sorted(partials, key=lambda p: p.shard):
        for name in features:
            merged[name] = merged[name].merge(partial.moments[name])
    return merged


def statistics_document(
    partials: list[ShardPartial], features: tuple[str, ...], split: str
) -> dict[str, Any]:
    """The fitted statistics as a JSON-ready document, with what they were fitted on."""
    merged = merge_partials(partials, features)
    return {
        "fitted_on": {
            "split": split,
            "rows": sum(p.rows for p in partials),
            "fingerprint": split_fingerprint(partials),
        },
        "features": {
            name: {**{k: v for k, v in asdict(m).items() if k != "m2"}, "std": m.std}
            for name, m in merged.items()
        },
    }


def normalize_shard(
    shard: int, folder: Path, staging: Path, features: dict[str, dict[str, float]]
) -> int:
    """Z-score one shard's features with frozen train statistics; return rows written."""
    table = read_shard(folder, shard)
    for name, stats in features.items():
        index = table.schema.get_field_index(name)
        std = stats["std"] or 1.0
        scaled = pc.divide(pc.subtract(table.column(name), stats["mean"]), std)
        table = table.set_column(index, pa.field(name, pa.float64()), scaled)
    write_parquet(table, part_path(staging, shard))
    return len(table)
