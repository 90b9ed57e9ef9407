"""Leakage measurements behind the blocking checks: what crosses a split boundary."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.config import SPLITS
from corpus_platform.store.datasets import iter_shards

MAX_EXAMPLES = 10


@dataclass(frozen=True)
class CrossingReport:
    """How many keys of a kind appear in more than one split, and which."""

    kind: str
    total: int
    crossing: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True when nothing crosses."""
        return self.crossing == 0

    def describe(self) -> str:
        """A one-line verdict, e.g. ``entities in more than one split: 0 of 412``."""
        return f"{self.kind} in more than one split: {self.crossing} of {self.total}"


def splits_per_key(split_root: Path, num_shards: int, column: str) -> dict[str, set[str]]:
    """Key -> the set of splits it occurs in, reading one column one shard at a time."""
    seen: dict[str, set[str]] = defaultdict(set)
    for name in SPLITS:
        for _, table in iter_shards(split_root / name, num_shards, [column]):
            for key in pc.unique(table.column(column)).to_pylist():
                seen[key].add(name)
    return seen


def crossing_keys(split_root: Path, num_shards: int, column: str, kind: str) -> CrossingReport:
    """Report keys of ``column`` found in more than one split."""
    seen = splits_per_key(split_root, num_shards, column)
    crossing = sorted(k for k, splits in seen.items() if len(splits) > 1)
    return CrossingReport(kind, len(seen), len(crossing), tuple(crossing[:MAX_EXAMPLES]))


def crossing_pairs(split_root: Path, num_shards: int, pairs: pa.Table) -> CrossingReport:
    """Report similar pairs whose two rows (both still present) sit in different splits."""
    wanted = pa.array(
        sorted(set(pairs.column("doc_a").to_pylist()) | set(pairs.column("doc_b").to_pylist())),
        pa.string(),
    )
    where: dict[str, str] = {}
    for name in SPLITS:
        for _, table in iter_shards(split_root / name, num_shards, ["doc_id"]):
            found = pc.filter(table.column("doc_id"), pc.is_in(table.column("doc_id"), wanted))
            where.update(dict.fromkeys(found.to_pylist(), name))
    present = [
        (a, b)
        for a, b in zip(
            pairs.column("doc_a").to_pylist(), pairs.column("doc_b").to_pylist(), strict=True
        )
        if a in where and b in where
    ]
    crossing = [f"{a}~{b}" for a, b in present if where[a] != where[b]]
    return CrossingReport(
        "similar pairs", len(present), len(crossing), tuple(crossing[:MAX_EXAMPLES])
    )


@dataclass(frozen=True)
class MovesReport:
    """Rows whose split changed against the previous snapshot."""

    compared: int
    moved: int
    into_train: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True unless a held-out row moved into train."""
        return self.into_train == 0

    def describe(self) -> str:
        """A one-line verdict."""
        return (
            f"rows that changed split since the previous snapshot: {self.moved} of "
            f"{self.compared}; held-out rows moved into train: {self.into_train}"
        )


def _assignments(root: Path, shards: range | list[int]) -> dict[str, str]:
    where: dict[str, str] = {}
    for name in SPLITS:
        for shard in shards:
            path = root / name / f"part-{shard:05d}.parquet"
            if path.is_file():
                where.update(
                    dict.fromkeys(
                        pq.read_table(path, columns=["doc_id"]).column(0).to_pylist(), name
                    )
                )
    return where


def split_moves(
    previous: Path, current: Path, num_shards: int, previous_shards: int
) -> MovesReport:
    """Compare assignments shard by shard (all at once if the shard count changed)."""
    groups = (
        [[s] for s in range(num_shards)]
        if previous_shards == num_shards
        else [list(range(max(num_shards, previous_shards)))]
    )
    compared = moved = into_train = 0
    examples: list[str] = []
    for shards in groups:
        before, after = _assignments(previous, shards), _assignments(current, shards)
        for doc_id, old in before.items():
            new = after.get(doc_id)
            if new is None:
                continue
            compared += 1
            if new != old:
                moved += 1
                if new == "train":
                    into_train += 1
                    if len(examples) < MAX_EXAMPLES:
                        examples.append(f"{doc_id}: {old} -> train")
    return MovesReport(compared, moved, into_train, tuple(examples))
