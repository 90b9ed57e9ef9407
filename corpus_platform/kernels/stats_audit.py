"""An independent, streaming recomputation of the train statistics, for the check that the fit
used exactly the train split.

The fit merges per-shard Welford moments (Chan's formula). This audit takes another road, one
train shard in memory at a time: a first pass sums every feature exactly (``math.fsum``) for the
mean, a second sums the squared deviations from that mean for the standard deviation;
minimum, maximum and histogram counts (on the fitted edges) are reduced per shard, and document
frequencies are counted per shard and added. Time is linear in the train rows; memory holds one
shard plus the vocabulary of the document-frequency count.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus_platform.kernels.stats import column_values, document_frequencies
from corpus_platform.store.datasets import iter_shards


@dataclass
class FeatureAudit:
    """Statistics of one numeric feature, recomputed."""

    count: int = 0
    total: list[float] = field(default_factory=list)
    squares: list[float] = field(default_factory=list)
    minimum: float = math.inf
    maximum: float = -math.inf
    histogram: np.ndarray | None = None

    def as_dict(self) -> dict[str, object]:
        """The fields the fitted statistics document stores (``count`` only when empty)."""
        if not self.count:
            return {"count": 0}
        return {
            "count": self.count,
            "mean": math.fsum(self.total) / self.count,
            "std": math.sqrt(math.fsum(self.squares) / self.count),
            "minimum": self.minimum,
            "maximum": self.maximum,
            "histogram": [] if self.histogram is None else self.histogram.tolist(),
        }


@dataclass(frozen=True)
class TrainAudit:
    """Everything recomputed from the train split."""

    rows: int
    features: dict[str, dict[str, object]]
    documents: int
    document_frequencies: Counter[str]


def recompute_train_statistics(
    train: Path, num_shards: int, edges: dict[str, list[float]], with_text: bool
) -> TrainAudit:
    """Recompute the fitted statistics from the train split in two streaming passes.

    Args:
        train: The train split's folder.
        num_shards: Logical shards.
        edges: Per numeric feature, the fitted histogram's bin edges.
        with_text: Also count text documents and token document frequencies.
    """
    audits = {name: FeatureAudit() for name in edges}
    rows = documents = 0
    frequencies: Counter[str] = Counter()
    columns = [*edges, *(["text"] if with_text else [])]
    for _, table in iter_shards(train, num_shards, columns):
        rows += len(table)
        for name, audit in audits.items():
            values = column_values(table, name)
            values = values[~np.isnan(values)]
            if not values.size:
                continue
            audit.count += int(values.size)
            audit.total.append(math.fsum(values.tolist()))
            audit.minimum = min(audit.minimum, float(values.min()))
            audit.maximum = max(audit.maximum, float(values.max()))
            counts = np.histogram(values, bins=edges[name])[0]
            audit.histogram = counts if audit.histogram is None else audit.histogram + counts
        if with_text:
            texts = [t for t in table.column("text").to_pylist() if t is not None]
            documents += len(texts)
            frequencies.update(document_frequencies(texts))
    for audit in audits.values():
        audit.total = [math.fsum(audit.total)]
    if audits:
        for _, table in iter_shards(train, num_shards, list(edges)):
            for name, audit in audits.items():
                if not audit.count:
                    continue
                values = column_values(table, name)
                mean = audit.total[0] / audit.count
                deviations = values[~np.isnan(values)] - mean
                audit.squares.append(math.fsum((deviations * deviations).tolist()))
    return TrainAudit(
        rows, {name: a.as_dict() for name, a in audits.items()}, documents, frequencies
    )
