"""The dedup check's kernel."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import iter_shards, read_parquet

MAX_OFFENDERS = 10  # offenders named in the check's metadata


def kept_duplicate_pairs(
    _: int, pairs_file: Path, folder: Path, num_shards: int, threshold: float, mode: str
) -> tuple[int, int, list[str]]:
    """Audit a published dedup stage against its own similar-pairs table (``pairs_file``); an
    engine task, so the pairs, which grow with the corpus, are read by a worker.

    Returns the number of pairs at or above ``threshold``, the number of offenders, pairs whose
    two rows are both in the published rows (drop mode) or both there under different cluster
    ids (annotate mode), and the first ten of them as ``a~b``, in the table's order.
    """
    pairs = read_parquet(pairs_file, ["doc_a", "doc_b", "similarity"])
    close = pairs.filter(pc.greater_equal(pairs.column("similarity"), threshold))
    wanted = pc.unique(pa.chunked_array([close["doc_a"], close["doc_b"]], pa.string()))
    rows = pa.concat_tables(
        [
            table.filter(pc.is_in(table.column("doc_id"), wanted))
            for _, table in iter_shards(folder, num_shards, ["doc_id", "cluster_id"])
        ]
    )
    at = [pc.index_in(close.column(c), value_set=rows.column("doc_id")) for c in ("doc_a", "doc_b")]
    offending = pc.and_(pc.is_valid(at[0]), pc.is_valid(at[1]))
    if mode != "drop":
        first, second = (pc.take(rows.column("cluster_id"), i) for i in at)
        same = pc.or_(
            pc.fill_null(pc.equal(first, second), False),
            pc.and_(pc.is_null(first), pc.is_null(second)),
        )
        offending = pc.and_(offending, pc.invert(same))
    offenders = close.filter(offending)
    named = offenders.slice(0, MAX_OFFENDERS)
    examples = [
        f"{a}~{b}"
        for a, b in zip(named["doc_a"].to_pylist(), named["doc_b"].to_pylist(), strict=True)
    ]
    return len(close), len(offenders), examples
