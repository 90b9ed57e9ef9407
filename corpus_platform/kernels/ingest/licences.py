"""Licences of rows: attached at ingest, counted per split and per mix.

A row's licence is its declared ``license`` value where set, else its source's licence from
``licenses.sources``, else :data:`UNKNOWN`. It is decided once, at ingest, and travels with the
row as the ``license`` column through every stage to the shards.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import part_path, read_parquet, read_schema
from corpus_platform.engine import Engine

UNKNOWN = "unknown"
LICENSE = "license"


def row_licences(
    declared: pa.Array | None, sources: pa.Array, per_source: dict[str, str]
) -> pa.Array:
    """The licence of each row: ``declared`` where non-empty, else the source's, else
    ``unknown``."""
    fallback = pa.array([per_source.get(s, UNKNOWN) for s in sources.to_pylist()], type=pa.string())
    if declared is None:
        return fallback
    trimmed = pc.utf8_trim_whitespace(pc.cast(declared, pa.string()))
    present = pc.and_(pc.is_valid(trimmed), pc.not_equal(trimmed, ""))
    return pc.if_else(pc.fill_null(present, False), trimmed, fallback)


def licence_counts(folder: Path, shard: int, weight: str | None = None) -> Counter[str]:
    """Rows per licence in one shard of ``folder`` (weighted by the ``weight`` column, e.g.
    ``times_drawn``); empty when the shard is missing or carries no ``license`` column."""
    path = part_path(folder, shard)
    if not path.exists() or LICENSE not in read_schema(path).names:
        return Counter()
    columns = [LICENSE, weight] if weight else [LICENSE]
    table = read_parquet(path, columns)
    if weight is None:
        counts = table.group_by(LICENSE, use_threads=False).aggregate([([], "count_all")])
        return Counter(dict(zip(*counts.to_pydict().values(), strict=True)))
    sums = table.group_by(LICENSE, use_threads=False).aggregate([(weight, "sum")])
    licences, totals = sums[LICENSE].to_pylist(), sums[f"{weight}_sum"].to_pylist()
    return Counter(dict(zip(licences, totals, strict=True)))


def licence_rollup(
    engine: Engine, folder: Path, num_shards: int, weight: str | None = None
) -> dict[str, int]:
    """Rows (or ``weight``) per licence over every shard of ``folder``, sorted by licence."""
    total: Counter[str] = Counter()
    for part in engine.map_shards(
        partial(licence_counts, folder, weight=weight), range(num_shards)
    ):
        total.update(part)
    return {licence: int(n) for licence, n in sorted(total.items())}


def denied_rows(
    folder: Path, shard: int, deny: tuple[str, ...], limit: int = 20
) -> tuple[dict[str, int], list[dict[str, object]]]:
    """Rows per denied licence in one shard of ``folder``, and the first ``limit`` offending
    rows by doc id (doc id, licence, raw file and row). A shard without a ``license`` column
    counts its rows as ``unknown``."""
    path = part_path(folder, shard)
    if not path.exists() or not deny:
        return {}, []
    columns = ["doc_id", LICENSE, "raw_file", "raw_row"]
    if LICENSE not in read_schema(path).names:
        table = read_parquet(path, ["doc_id", "raw_file", "raw_row"])
        table = table.add_column(1, LICENSE, pa.array([UNKNOWN] * len(table), pa.string()))
    else:
        table = read_parquet(path, columns)
    hits = table.filter(pc.is_in(table.column(LICENSE), pa.array(list(deny), pa.string())))
    per_licence = Counter(hits.column(LICENSE).to_pylist())
    return dict(sorted(per_licence.items())), hits.sort_by("doc_id").slice(0, limit).to_pylist()
