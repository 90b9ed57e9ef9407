"""The training mix: rows drawn from train by per-source proportions, deterministically.

Rows sharing a word n-gram with an evaluation set are dropped first when
``decontamination.action`` is ``drop`` (and kept, for the blocking check to catch, on ``flag``).

Each source gets a rate = target / available, in documents or tokens (``mix.unit``; planned by
:mod:`corpus_platform.kernels.mixing.plan`). A row is drawn ``floor(rate)`` times plus once more
when its seeded coin ``u(doc_id) < frac(rate)``; so rates above 1 upsample a small source, rates
below 1 subsample a large one, and nothing depends on row order. With ``mix.unit: tokens`` every
row carries its token count in a ``tokens`` column (:mod:`corpus_platform.kernels.mixing.tokens`).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import (
    TextSource,
    columns_but_text,
    generation_path,
    read_generations,
    read_with_texts,
    with_texts,
)
from corpus_platform.base.hashing import unit_interval
from corpus_platform.base.shards import (
    SCRATCH_OPTIONS,
    part_path,
    read_parquet,
    write_parquet,
)
from corpus_platform.kernels.mixing.decontam import EvalNgrams, contaminating_sets_of
from corpus_platform.kernels.mixing.plan import MixError
from corpus_platform.kernels.mixing.tokens import TokenCounter

TOKENS = "tokens"  # the column of a row's token count (mix.unit: tokens)
ROW = "_row"  # scratch only: a clean row's position among its shard's rows


def times_drawn(doc_id: str, rate: float, seed: int) -> int:
    """How many times one row enters the mix at ``rate``."""
    whole = math.floor(rate)
    return whole + (1 if unit_interval(doc_id, seed, "mix") < rate - whole else 0)


def draw_shard(
    shard: int,
    folder: Path,
    staging: Path,
    rates: dict[str, float],
    seed: int,
    generation: int = 0,
    kept: Path | None = None,
    generations: tuple[int, ...] | None = None,
) -> tuple[dict[str, int], dict[str, int]]:
    """Write one shard of the mix with a ``times_drawn`` column, as generation ``generation``:
    the rows of ``folder`` (of its ``generations``), or only those :func:`decontaminate_shard`
    kept (its scratch folder ``kept``: their positions, and their token counts as a ``tokens``
    column). The rows are written without their text, which stays in ``split_documents`` (the
    mix's readers take it from there: :class:`~corpus_platform.base.generations.TextSource`).

    Returns:
        (draws per source, drawn tokens per source: ``times_drawn x tokens``, empty when the
        rows have no ``tokens`` column).
    """
    columns = columns_but_text(part_path(folder, shard))
    table = read_generations(folder, shard, generations, columns)
    if kept is not None:
        chosen = read_parquet(part_path(kept, shard))
        table = table.take(chosen.column(ROW))
        if TOKENS in chosen.column_names:
            table = table.append_column(TOKENS, chosen.column(TOKENS))
    draws = [
        times_drawn(d, rates.get(s, 0.0), seed)
        for d, s in zip(
            table.column("doc_id").to_pylist(), table.column("source").to_pylist(), strict=True
        )
    ]
    table = table.append_column("times_drawn", pa.array(draws, pa.int32()))
    table = table.filter(pa.array([n > 0 for n in draws], pa.bool_()))
    write_parquet(table, generation_path(staging, shard, generation))
    sources, times = table.column("source").to_pylist(), table.column("times_drawn").to_pylist()
    drawn: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    counts = table.column(TOKENS).to_pylist() if TOKENS in table.column_names else None
    for i, (source, n) in enumerate(zip(sources, times, strict=True)):
        drawn[source] += n
        if counts is not None:
            tokens[source] += n * counts[i]
    return dict(drawn), dict(tokens)


def misdrawn_rows(
    shard: int,
    folder: Path,
    rates: dict[str, float],
    seed: int,
    generations: tuple[int, ...] | None = None,
) -> tuple[int, int, list[str]]:
    """Rows of one shard of a mix (of the generations ``generations``) whose ``times_drawn`` is
    not what ``rates`` give them: (rows checked, rows wrong, up to ten of them as
    ``doc_id: stored != expected``)."""
    table = read_generations(folder, shard, generations, ["doc_id", "source", "times_drawn"])
    wrong = [
        f"{d}: {n} != {times_drawn(d, rates.get(s, 0.0), seed)}"
        for d, s, n in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)
        if n != times_drawn(d, rates.get(s, 0.0), seed)
    ]
    return len(table), len(wrong), wrong[:10]


def decontaminate_shard(
    shard: int,
    folder: Path,
    clean: Path,
    removed: Path,
    eval_ngrams: EvalNgrams,
    ngram: int,
    drop: bool,
    counter: TokenCounter | None = None,
    generations: tuple[int, ...] | None = None,
    generation: int = 0,
    texts: TextSource | None = None,
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Find one shard's rows free of evaluation n-grams (all rows when not dropping) and write
    their positions among the shard's rows to ``clean`` (:func:`draw_shard` reads the rows
    again and takes them: no copy of their text in scratch), the contaminated rows, with the
    sets they hit, to ``removed`` (as generation ``generation``). With a ``counter`` the clean
    rows' token counts go with their positions (the mix's ``tokens`` column). ``generations``:
    only the rows of those generations of ``folder`` (an append); ``texts``: where their text
    is when ``folder`` stores none (normalized_splits).

    Returns:
        (rows per source written to ``clean``, contaminated rows per evaluation set, tokens per
        source written to ``clean``: empty without a counter).
    """
    table = with_texts(read_generations(folder, shard, generations), shard, texts)
    table = table.append_column(ROW, pa.array(np.arange(len(table), dtype=np.int64)))
    hits = contaminating_sets_of(_texts(table), eval_ngrams, ngram)
    per_set: Counter[str] = Counter(name for h in hits for name in h)
    dirty = pa.array([bool(h) for h in hits], pa.bool_())
    if drop:
        flagged = table.drop_columns([ROW])
        flagged = flagged.append_column("eval_sets", pa.array(hits, pa.list_(pa.string())))
        write_parquet(flagged.filter(dirty), generation_path(removed, shard, generation))
        table = table.filter(pc.invert(dirty))
    tokens: Counter[str] = Counter()
    if counter is not None:
        if TOKENS in table.column_names:
            raise MixError(
                f"{part_path(folder, shard)}: train rows already have a column {TOKENS!r}; "
                "rename it upstream (mix.unit: tokens writes its own)"
            )
        counts = (
            counter.count_column(table.column("text")).tolist()
            if "text" in table.column_names
            else [0] * len(table)
        )  # on the texts' bytes; the proportions check recounts with str.split
        table = table.append_column(TOKENS, pa.array(counts, pa.int64()))
        for source, n in zip(table.column("source").to_pylist(), counts, strict=True):
            tokens[source] += n
    chosen = table.select([ROW, TOKENS] if counter is not None else [ROW])
    write_parquet(chosen, part_path(clean, shard), **SCRATCH_OPTIONS)  # the draw's choice
    return dict(Counter(table.column("source").to_pylist())), dict(per_set), dict(tokens)


def source_units(
    shard: int,
    folder: Path,
    counter: TokenCounter | None,
    generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> dict[str, int]:
    """Rows per source of one shard, or (with a ``counter``) tokens per source, counted from
    the text; a missing shard counts nothing (a ``contaminated/`` folder that was not written).
    ``generations``: only the rows of those generations; ``texts``: where the text is when
    ``folder`` stores none."""
    if not part_path(folder, shard).exists():
        return {}
    table = read_generations(folder, shard, generations, ["source"] if counter is None else None)
    if counter is not None:
        table = with_texts(table, shard, texts)
    sources = table.column("source").to_pylist()
    units = [1] * len(sources) if counter is None else counter.count(_texts(table))
    total: Counter[str] = Counter()
    for source, n in zip(sources, units, strict=True):
        total[source] += n
    return dict(total)


def drawn_units(
    shard: int,
    folder: Path,
    counter: TokenCounter | None,
    generations: tuple[int, ...] | None = None,
    texts: TextSource | None = None,
) -> tuple[dict[str, int], int]:
    """Draws per source of one shard of a mix, weighted by each row's tokens recounted from its
    text with ``counter`` (unweighted without one), and how many rows' ``tokens`` column
    disagrees with the recount (0 without a counter). ``generations``: those generations only;
    ``texts``: where the rows' texts are (the mix stores none)."""
    if counter is None:
        table = read_generations(folder, shard, generations, ["source", "times_drawn"])
    else:
        table = read_with_texts(folder, shard, texts, generations)
    sources, times = table.column("source").to_pylist(), table.column("times_drawn").to_pylist()
    weights = [1] * len(sources) if counter is None else counter.count(_texts(table))
    wrong = 0
    if counter is not None:
        stored = table.column(TOKENS).to_pylist() if TOKENS in table.column_names else None
        wrong = (
            len(weights)
            if stored is None
            else sum(a != b for a, b in zip(stored, weights, strict=True))
        )
    total: Counter[str] = Counter()
    for source, n, weight in zip(sources, times, weights, strict=True):
        total[source] += n * weight
    return dict(total), wrong


def _texts(table: pa.Table) -> list[str | None]:
    if "text" in table.column_names:
        return table.column("text").to_pylist()
    return [None] * len(table)
