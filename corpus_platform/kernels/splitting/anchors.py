"""Sticky group splits: published rows keep their split when new rows are appended.

Within one ``split.epoch`` a group split never moves a published row. Each component of the new
graph is *anchored* by the splits its published rows sit in (read from the published
``split_documents``):

| published rows of the component | its rows                                                    |
|---------------------------------|-------------------------------------------------------------|
| none (a new component)          | its seeded bucket, as in a build from scratch               |
| all in one split                | that split: new rows follow their entity, cluster or pair   |
| in two or more splits           | published rows stay where they are; new rows are dropped    |
|                                 | with reason ``bridge`` (they link what the split separated) |

The third case is what an append can bring: a new row that shares an entity with a train row
and text with a test row joins two components the published split placed apart. Dropping every
new row of such a component (not only the one that links) is the conservative choice: what is
left are the published rows with the links they had when their split passed its checks. A new
epoch (``split.epoch``) rebuilds every component from its bucket, as a build from scratch does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, read_shard

Anchors = dict[str, tuple[str, ...]]  # component -> the splits its published rows sit in


def published_rows(published: Path, shard: int) -> dict[str, str]:
    """doc_id -> split of the published rows of one logical shard (an empty mapping for a
    shard the published split does not have)."""
    rows: dict[str, str] = {}
    for name in SPLITS:
        if part_path(published / name, shard).exists():
            ids = read_shard(published / name, shard, ["doc_id"]).column("doc_id").to_pylist()
            rows.update(dict.fromkeys(ids, name))
    return rows


def shard_anchors(
    shard: int, published: Path, name_components: Callable[[pa.Table], list[str]]
) -> dict[str, list[str]]:
    """Component -> splits of the published rows of one shard, the components named by the new
    graph (``name_components`` maps a table with an ``entity`` column to component names)."""
    found: dict[str, set[str]] = {}
    for name in SPLITS:
        path = part_path(published / name, shard)
        if not path.exists():
            continue
        table = read_shard(published / name, shard, ["doc_id", "entity"])
        for component in set(name_components(table)):
            found.setdefault(component, set()).add(name)
    return {component: sorted(splits) for component, splits in found.items()}


def merge_anchors(parts: Iterable[dict[str, list[str]]]) -> Anchors:
    """The anchors of every component, merged from the shards' parts (in any order)."""
    merged: dict[str, set[str]] = {}
    for part in parts:
        for component, splits in part.items():
            merged.setdefault(component, set()).update(splits)
    order = {name: i for i, name in enumerate(SPLITS)}
    return {c: tuple(sorted(s, key=order.__getitem__)) for c, s in sorted(merged.items())}


def anchored(
    ids: list[str],
    components: list[str],
    placed: list[str],
    anchors: Anchors,
    previous: dict[str, str],
    bridge: str,
) -> list[str]:
    """Each row's split after anchoring (see the module's table); drop reasons stay."""
    out = []
    for doc_id, component, split in zip(ids, components, placed, strict=True):
        sides = anchors.get(component)
        if split not in SPLITS or sides is None:
            out.append(split)
        elif len(sides) == 1:
            out.append(sides[0])
        else:
            out.append(previous.get(doc_id, bridge))
    return out
