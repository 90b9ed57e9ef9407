"""Group split: rows that share an entity or a similarity link land in one split.

Entities are the nodes of a union-find; every similar pair (at the split's similarity
threshold, lower than the dedup threshold) links the entities of its two rows. A component is
named by its smallest entity key; its bucket is ``stable_hash(seed, component) mod 10000`` and
the configured ratios map buckets to train / validation / test. ``mode: row`` hashes each row on
its own; it exists only to show the leakage checks firing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.config import SPLITS
from corpus_platform.kernels.hashing import BUCKETS, bucket_of
from corpus_platform.kernels.unionfind import UnionFind
from corpus_platform.store.datasets import part_path, read_shard, write_parquet


def entity_components(pairs: pa.Table) -> dict[str, str]:
    """Entity -> component name for every entity touched by a similar pair."""
    links = UnionFind()
    links.union_all(
        zip(pairs.column("entity_a").to_pylist(), pairs.column("entity_b").to_pylist(), strict=True)
    )
    return {member: root for root, members in links.groups().items() for member in members}


def bucket_bounds(ratios: dict[str, float]) -> list[tuple[str, int]]:
    """Upper bucket bound (exclusive) of each split, in SPLITS order."""
    bounds, cumulative = [], 0.0
    for name in SPLITS:
        cumulative += ratios[name]
        bounds.append((name, round(cumulative * BUCKETS)))
    bounds[-1] = (bounds[-1][0], BUCKETS)
    return bounds


def split_of(bucket: int, bounds: list[tuple[str, int]]) -> str:
    """The split whose bucket range holds ``bucket``."""
    return next(name for name, upper in bounds if bucket < upper)


def split_shard(
    shard: int,
    upstream: Path,
    staging: Path,
    components: dict[str, str],
    ratios: dict[str, float],
    seed: int,
    mode: str,
) -> dict[str, int]:
    """Assign one shard's rows and write ``<split>/part-N``; return rows per split."""
    table = read_shard(upstream, shard)
    keys = table.column("doc_id" if mode == "row" else "entity").to_pylist()
    component = [k if mode == "row" else components.get(k, k) for k in keys]
    buckets = [bucket_of(c, seed) for c in component]
    bounds = bucket_bounds(ratios)
    splits = [split_of(b, bounds) for b in buckets]
    table = table.append_column("component", pa.array(component, pa.string()))
    table = table.append_column("bucket", pa.array(buckets, pa.int32()))
    column = pa.array(splits, pa.string())
    for name in SPLITS:
        part = table.filter(pc.equal(column, name))
        write_parquet(part, part_path(staging / name, shard))
    return dict(Counter(splits))
