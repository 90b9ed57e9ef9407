"""Parameters: the MinHash/LSH layout and the memory budgets of the dedup stage."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise

import numpy as np
from datasketch import MinHashLSH

from corpus_platform.base.hashing import (
    TextNormalization,
)
from corpus_platform.config import CorpusConfig

LSH_RECALL = 0.9999  # with verification: chance a pair at the pair threshold is a candidate
MAX_BUCKET_PAIRS = 64  # buckets larger than this are linked as a star around their first member
BAND_GROUPS = 8  # band keys are grouped an eighth of the bands at a time
BATCH_ROWS = 2048  # rows sketched (and streamed back) at a time


KEY_ROW_BYTES = 256  # an exact key row while grouping: id and key strings, hash table, lists
BAND_ROW_BYTES = 64  # a band key row while grouping: 18 bytes, the sort order and copies


def partitions_for(rows: int, row_bytes: int, memory_mb: int) -> int:
    """How many parts a grouping of ``rows`` must be cut into for one part to fit in half of
    ``memory_mb`` (the other half is for what the step keeps)."""
    return max(1, math.ceil(rows * row_bytes / ((memory_mb << 20) // 2)))


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """The chance that two rows of Jaccard ``similarity`` share at least one band key."""
    return 1.0 - (1.0 - similarity**rows) ** bands


@cache
def recall_bands(threshold: float, num_perm: int, recall: float = LSH_RECALL) -> tuple[int, int]:
    """(bands, rows per band) with the most rows per band (the fewest dissimilar candidates)
    whose chance of making a pair at ``threshold`` a candidate is at least ``recall``.

    Raises:
        ValueError: when even one row per band misses the recall (too few permutations).
    """
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if candidate_probability(threshold, bands, rows) >= recall:
            return bands, rows
    raise ValueError(
        f"dedup.num_perm {num_perm} cannot find pairs at Jaccard {threshold} with recall "
        f"{recall}; raise dedup.num_perm"
    )


@cache
def optimal_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """datasketch's (bands, rows) minimising false positives plus false negatives at
    ``threshold`` (computed once per setting: it integrates numerically)."""
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


@dataclass(frozen=True)
class DedupParams:
    """Everything a dedup run depends on."""

    num_perm: int
    shingle_size: int
    threshold: float
    pair_threshold: float
    seed: int
    mode: str = "drop"
    columns: tuple[str, ...] = ()
    normalization: TextNormalization = field(default_factory=TextNormalization)
    keep: str = "quality"
    verify: bool = True
    groups: int = BAND_GROUPS  # band groups: more for a corpus whose band keys exceed memory
    # a pair joins entities (and leaks) only when both texts have this many distinct n-grams
    # (split.min_link_shingles; :mod:`corpus_platform.kernels.splitting.content`)
    min_shingles: int = 0

    def for_rows(self, rows: int, memory_mb: int) -> DedupParams:
        """These parameters with enough band groups for ``rows`` rows' band keys to be grouped
        within ``memory_mb`` (results do not depend on the grouping)."""
        needed = partitions_for(rows * self.bands[0], BAND_ROW_BYTES, memory_mb)
        return replace(self, groups=max(BAND_GROUPS, needed))

    def __post_init__(self) -> None:
        if not 0.0 < self.pair_threshold <= self.threshold < 1.0:
            raise ValueError("need 0 < pair_threshold <= threshold < 1")

    @classmethod
    def from_config(cls, config: CorpusConfig) -> DedupParams:
        """The dedup settings of a corpus.yaml; pairs are kept down to the split's threshold."""
        dedup = config.dedup
        return cls(
            num_perm=dedup.num_perm,
            shingle_size=dedup.shingle_size,
            threshold=dedup.threshold,
            pair_threshold=config.split.similarity_threshold,
            seed=config.seed,
            mode=dedup.mode,
            columns=dedup.columns,
            normalization=TextNormalization(**dedup.normalization.model_dump()),
            keep=dedup.keep,
            verify=dedup.verify,
            min_shingles=config.split.min_link_shingles,
        )

    @property
    def bands(self) -> tuple[int, int]:
        """(bands, rows per band). With verification, the layout that makes a pair at
        ``pair_threshold`` a candidate with probability ``LSH_RECALL`` (verification removes the
        extra candidates); without, datasketch's optimum for ``pair_threshold``, since the
        MinHash estimate then decides alone."""
        if self.verify:
            return recall_bands(self.pair_threshold, self.num_perm)
        return optimal_bands(self.pair_threshold, self.num_perm)

    def band_groups(self) -> list[range]:
        """The bands split into ``groups`` contiguous groups, grouped one at a time."""
        bands = self.bands[0]
        edges = np.linspace(0, bands, min(self.groups, bands) + 1).round().astype(int)
        return [range(int(a), int(b)) for a, b in pairwise(edges)]
