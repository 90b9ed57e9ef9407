"""Statistics epochs: a fit is kept while ``statistics.epoch`` and the settings that shape it
stay, so rows appended later are normalized with the statistics every earlier row got.

A fit records the rows it was fitted on (``fitted_on/``, one file per logical shard, in the
shard's row order: doc id and feature values). That list lets the stage keep a fit only while
those rows still hold the values it saw (an as-of feature changes when an earlier row of the
same entity arrives late), lets the check recompute a kept fit from exactly its rows (all of
which must still be train rows) and lets the drift check compare only the train rows added since
the fit with the fitted histograms, by population stability index (PSI).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import part_path, read_shard, write_parquet
from corpus_platform.kernels.statistics.fit import column_values

FITTED_IDS = "fitted_on"  # folder beside statistics.json: the doc ids of the fit, per shard
PSI_FLOOR = 1e-4  # the share given to an empty bin, so PSI stays finite


def write_fitted_ids(shard: int, train: Path, out: Path, features: tuple[str, ...] = ()) -> int:
    """Write the doc ids and ``features`` of one train shard as the fit's rows; return how
    many."""
    rows = read_shard(train, shard, ["doc_id", *features])
    write_parquet(rows, part_path(out, shard))
    return len(rows)


def changed_fitted_rows(shard: int, train: Path, fitted: Path, features: tuple[str, ...]) -> int:
    """How many of one shard's fitted rows are no longer in ``train`` with the feature values
    the fit saw (NaN equal to NaN)."""
    path = part_path(fitted, shard)
    if not path.exists():
        return 0
    seen = read_shard(fitted, shard)
    missing = [name for name in features if name not in seen.column_names]
    if missing:  # a fit recorded without these values cannot be vouched for
        return len(seen)
    now = read_shard(train, shard, ["doc_id", *features])
    now = now.filter(pc.is_in(now.column("doc_id"), seen.column("doc_id")))
    current = {row["doc_id"]: tuple(row[name] for name in features) for row in now.to_pylist()}
    changed = 0
    for row in seen.select(["doc_id", *features]).to_pylist():
        values = current.get(row["doc_id"])
        before = tuple(row[name] for name in features)
        changed += values is None or any(
            not _same(a, b) for a, b in zip(values, before, strict=True)
        )
    return changed


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def _fitted(fitted: Path, shard: int) -> pa.Array:
    path = part_path(fitted, shard)
    if not path.exists():
        return pa.array([], pa.string())
    return read_shard(fitted, shard, ["doc_id"]).column("doc_id").combine_chunks()


def fit_view_shard(shard: int, train: Path, fitted: Path, out: Path) -> tuple[int, int]:
    """Write the current train rows of one shard that the fit used (``out/part-<shard>``, in
    the shard's row order); return (rows written, fitted ids no longer in train)."""
    ids = _fitted(fitted, shard)
    table = read_shard(train, shard)
    kept = table.filter(pc.is_in(table.column("doc_id"), ids))
    write_parquet(kept, part_path(out, shard))
    return len(kept), len(ids) - len(kept)


def new_row_histograms(
    shard: int, train: Path, fitted: Path, edges: dict[str, list[float]]
) -> tuple[int, dict[str, list[int]]]:
    """The train rows of one shard added since the fit, and their counts per feature in the
    fitted bins with one bin below and one above (values outside the fitted range)."""
    table = read_shard(train, shard, ["doc_id", *edges])
    new = table.filter(pc.invert(pc.is_in(table.column("doc_id"), _fitted(fitted, shard))))
    counts = {}
    for name, bins in edges.items():
        values = column_values(new, name)
        values = values[~np.isnan(values)]
        outer = [-math.inf, *bins, math.inf] if bins else [-math.inf, math.inf]
        counts[name] = np.histogram(values, bins=outer)[0].tolist()
    return len(new), counts


def psi(expected: list[int], actual: list[int]) -> float:
    """Population stability index of ``actual`` against ``expected`` counts over the same
    bins: sum of (a - e) * ln(a / e) over bin shares, an empty bin counted as ``PSI_FLOOR``.
    0 when either side has no values."""
    e_total, a_total = sum(expected), sum(actual)
    if not e_total or not a_total:
        return 0.0
    e = np.maximum(np.asarray(expected, dtype=np.float64) / e_total, PSI_FLOOR)
    a = np.maximum(np.asarray(actual, dtype=np.float64) / a_total, PSI_FLOOR)
    return float(np.sum((a - e) * np.log(a / e)))


def with_outer_bins(counts: list[int]) -> list[int]:
    """Fitted histogram counts with the empty below- and above-range bins added."""
    return [0, *counts, 0]
