"""The training mix: rows drawn from train by per-source proportions, deterministically.

Rows sharing a word n-gram with an evaluation set are dropped first when
``decontamination.action`` is ``drop`` (and kept, for the blocking check to catch, on ``flag``).

Each source gets a rate = target rows / available rows. A row is drawn ``floor(rate)`` times
plus once more when its seeded coin ``u(doc_id) < frac(rate)``; so rates above 1 upsample a
small source, rates below 1 subsample a large one, and nothing depends on row order.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.hashing import unit_interval
from corpus_platform.base.shards import iter_shards, part_path, read_shard, write_parquet
from corpus_platform.kernels.decontam import EvalNgrams, contaminating_sets_of


class MixError(CorpusError):
    """Proportions that the train split cannot satisfy."""


def source_counts(folder: Path, num_shards: int) -> dict[str, int]:
    """Rows per source in a sharded dataset."""
    counts: Counter[str] = Counter()
    for _, table in iter_shards(folder, num_shards, ["source"]):
        counts.update(table.column("source").to_pylist())
    return dict(sorted(counts.items()))


def plan_rates(
    available: dict[str, int], proportions: dict[str, float], total_rows: int | None
) -> dict[str, float]:
    """Draw rate per source. Without proportions every row is drawn once.

    Without ``total_rows`` the mix is the largest one that needs no upsampling.
    """
    if not proportions:
        return dict.fromkeys(available, 1.0)
    missing = sorted(s for s, p in proportions.items() if p > 0 and available.get(s, 0) == 0)
    if missing:
        raise MixError(
            f"mix.proportions names source(s) {missing} with no train rows; "
            f"available sources: {sorted(available)}"
        )
    wanted = {s: p for s, p in proportions.items() if p > 0}
    total = total_rows or math.floor(min(available[s] / p for s, p in wanted.items()))
    rates = {s: total * wanted.get(s, 0.0) / n for s, n in available.items()}
    return dict(sorted(rates.items()))


def times_drawn(doc_id: str, rate: float, seed: int) -> int:
    """How many times one row enters the mix at ``rate``."""
    whole = math.floor(rate)
    return whole + (1 if unit_interval(doc_id, seed, "mix") < rate - whole else 0)


def mix_shard(
    shard: int, folder: Path, staging: Path, rates: dict[str, float], seed: int
) -> dict[str, int]:
    """Write one shard of the mix with a ``times_drawn`` column; return draws per source."""
    table = read_shard(folder, shard)
    draws = [
        times_drawn(d, rates.get(s, 0.0), seed)
        for d, s in zip(
            table.column("doc_id").to_pylist(), table.column("source").to_pylist(), strict=True
        )
    ]
    table = table.append_column("times_drawn", pa.array(draws, pa.int32()))
    table = table.filter(pa.array([n > 0 for n in draws], pa.bool_()))
    write_parquet(table, part_path(staging, shard))
    drawn: Counter[str] = Counter()
    for source, n in zip(
        table.column("source").to_pylist(), table.column("times_drawn").to_pylist(), strict=True
    ):
        drawn[source] += n
    return dict(drawn)


def decontaminate_shard(
    shard: int,
    folder: Path,
    clean: Path,
    removed: Path,
    eval_ngrams: EvalNgrams,
    ngram: int,
    drop: bool,
) -> tuple[dict[str, int], dict[str, int]]:
    """Write one shard's rows free of evaluation n-grams to ``clean`` (all rows when not
    dropping) and the contaminated ones, with the sets they hit, to ``removed``.

    Returns:
        (rows per source written to ``clean``, contaminated rows per evaluation set).
    """
    table = read_shard(folder, shard)
    texts = (
        table.column("text").to_pylist() if "text" in table.column_names else [None] * len(table)
    )
    hits = contaminating_sets_of(texts, eval_ngrams, ngram)
    per_set: Counter[str] = Counter(name for h in hits for name in h)
    dirty = pa.array([bool(h) for h in hits], pa.bool_())
    if drop:
        flagged = table.append_column("eval_sets", pa.array(hits, pa.list_(pa.string())))
        write_parquet(flagged.filter(dirty), part_path(removed, shard))
        table = table.filter(pc.invert(dirty))
    write_parquet(table, part_path(clean, shard))
    return dict(Counter(table.column("source").to_pylist())), dict(per_set)
