"""Splits that keep every leak path on one side.

Group modes: entities are the nodes of a graph; every similar pair (at the split's
similarity threshold, lower than the dedup threshold) and every duplicate cluster links the
entities of its rows. The graph's components are found on the engine
(:mod:`kernels.splitting.component_graph`). A component is named by its smallest entity key;
its bucket is ``stable_hash(seed, component) mod 10000`` and the configured ratios map buckets
to train / validation / test.

| mode         | a row's split                                                              |
|--------------|----------------------------------------------------------------------------|
| `group`      | its component's bucket                                                     |
| `row`        | its own doc_id's bucket (leaks: exists only to watch the checks fire)      |
| `time`       | the window holding its (timestamp, doc_id) key; rows in a gap are dropped  |
| `time_group` | its component's bucket, kept only if its key lies in that split's window   |

Dropped rows go to ``dropped/`` with the reason, never silently. In the group modes a component
above ``split.max_component_share`` stops the split, or with ``split.oversize: cut`` is cut into
pieces (:mod:`kernels.splitting.cut`): rows bridging pieces that landed in different splits
are dropped with reason ``bridge``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.generations import TextSource, generation_path, with_texts
from corpus_platform.base.hashing import BUCKETS, bucket_of
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.config import AsofFeature
from corpus_platform.kernels.splitting.anchors import Anchors, anchored, published_rows
from corpus_platform.kernels.splitting.asof import asof_columns
from corpus_platform.kernels.splitting.temporal import EMBARGO, Cutoffs, micros

OUTSIDE_WINDOW = "outside_window"
BRIDGE = "bridge"


def read_labels(labels: Path, entities: pa.Array | pa.ChunkedArray) -> dict[str, str]:
    """Entity -> component for the linked ``entities``, from every partition of ``labels``
    (``node``, ``component`` files written by the split's connected components)."""
    wanted = pc.unique(entities)
    found: dict[str, str] = {}
    for path in sorted(labels.glob("part-*.parquet")):
        table = pq.read_table(path)
        table = table.filter(pc.is_in(table.column("node"), wanted))
        found.update(
            zip(
                table.column("node").to_pylist(), table.column("component").to_pylist(), strict=True
            )
        )
    return found


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


@dataclass(frozen=True)
class SplitPlan:
    """Everything a shard needs to place its rows."""

    mode: str
    ratios: dict[str, float]
    seed: int
    components: dict[str, str] = field(default_factory=dict)
    cutoffs: Cutoffs | None = None
    asof: tuple[AsofFeature, ...] = ()
    asof_scratch: Path | None = None
    bridges: frozenset[str] = frozenset()
    labels: Path | None = None  # entity -> component partitions (split_graph); else components
    anchors: Anchors | None = None  # group mode appended to a published split of its epoch
    published: Path | None = None  # that published split (its rows keep their splits)

    def place(self, table: pa.Table, shard: int = 0) -> tuple[list[str], list[int], list[str]]:
        """(component, bucket, split or drop reason) for every row of ``table`` (rows of logical
        shard ``shard``); rows in ``bridges`` are dropped with reason ``bridge``, and with
        ``anchors`` published rows keep their splits (:mod:`kernels.splitting.anchors`)."""
        component, buckets, placed = self._place(table)
        ids = table.column("doc_id").to_pylist()
        if self.bridges:
            placed = [BRIDGE if d in self.bridges else p for d, p in zip(ids, placed, strict=True)]
        if self.anchors is not None and self.published is not None:
            previous = published_rows(self.published, shard)
            placed = anchored(ids, component, placed, self.anchors, previous, BRIDGE)
        return component, buckets, placed

    def component_names(self, table: pa.Table) -> list[str]:
        """The component of every row of ``table`` (its doc_id in row mode)."""
        key_column = "doc_id" if self.mode == "row" else "entity"
        keys = table.column(key_column).to_pylist()
        named = self.components
        if self.labels is not None and self.mode != "row":
            named = {**read_labels(self.labels, table.column("entity")), **self.components}
        return [k if self.mode == "row" else named.get(k, k) for k in keys]

    def _place(self, table: pa.Table) -> tuple[list[str], list[int], list[str]]:
        component = self.component_names(table)
        buckets = [bucket_of(c, self.seed) for c in component]
        bounds = bucket_bounds(self.ratios)
        by_bucket = [split_of(b, bounds) for b in buckets]
        if self.cutoffs is None:
            return component, buckets, by_bucket
        times = micros(table, "split_documents").tolist()
        ids = table.column("doc_id").to_pylist()
        windows = [self.cutoffs.window_of(t, d) for t, d in zip(times, ids, strict=True)]
        if self.mode == "time":
            return ids, buckets, windows
        placed = [
            w if w == EMBARGO else (b if w == b else OUTSIDE_WINDOW)
            for w, b in zip(windows, by_bucket, strict=True)
        ]
        return component, buckets, placed


def split_shard(
    shard: int, upstream: Path, staging: Path, plan: SplitPlan, texts: TextSource | None = None
) -> dict[str, int]:
    """Place one shard's rows and write ``<split>/part-N`` and ``dropped/part-N``, each row with
    its text from ``texts`` (``upstream`` stores none: :class:`~corpus_platform.base.
    generations.TextSource`).

    Returns:
        Rows per split and per drop reason.
    """
    table = with_texts(read_shard(upstream, shard), shard, texts)
    if plan.asof:
        if plan.asof_scratch is None:
            raise ValueError("as-of features need the scratch folder they were computed in")
        table = asof_columns(shard, plan.asof_scratch, table, plan.asof)
    component, buckets, placed = plan.place(table, shard)
    table = table.append_column("component", pa.array(component, pa.string()))
    table = table.append_column("bucket", pa.array(buckets, pa.int32()))
    column = pa.array(placed, pa.string())
    for name in SPLITS:  # generation 0: a build from scratch
        part = table.filter(pc.equal(column, name))
        write_parquet(part, generation_path(staging / name, shard, 0))
    dropped_mask = pc.invert(pc.is_in(column, pa.array(list(SPLITS))))
    dropped = table.append_column("reason", column).filter(dropped_mask)
    write_parquet(dropped, generation_path(staging / "dropped", shard, 0))
    return dict(Counter(placed))
