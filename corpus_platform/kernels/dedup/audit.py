"""The dedup check's kernel."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import (
    iter_shards,
)


def kept_duplicate_pairs(
    pairs: pa.Table, folder: Path, num_shards: int, threshold: float, mode: str
) -> tuple[int, list[str]]:
    """Audit a published dedup stage against its own similar-pairs table.

    Returns the number of pairs at or above ``threshold`` and up to ten offenders
    ``a~b``: pairs whose two rows are both in the published rows (drop mode) or both there
    under different cluster ids (annotate mode).
    """
    close = pairs.filter(pc.greater_equal(pairs.column("similarity"), threshold))
    ids_a, ids_b = close.column("doc_a").to_pylist(), close.column("doc_b").to_pylist()
    wanted = pa.array(sorted({*ids_a, *ids_b}), pa.string())
    cluster_of: dict[str, str] = {}
    for _, table in iter_shards(folder, num_shards, ["doc_id", "cluster_id"]):
        table = table.filter(pc.is_in(table.column("doc_id"), wanted))
        cluster_of.update(
            zip(*(table.column(c).to_pylist() for c in ("doc_id", "cluster_id")), strict=True)
        )
    offenders = [
        f"{a}~{b}"
        for a, b in zip(ids_a, ids_b, strict=True)
        if a in cluster_of
        and b in cluster_of
        and (mode == "drop" or cluster_of[a] != cluster_of[b])
    ]
    return len(close), offenders
