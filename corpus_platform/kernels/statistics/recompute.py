"""An independent, streaming recomputation of the train statistics, for the check that the fit
used exactly the train split.

The fit merges per-shard Welford moments (Chan's formula). This audit takes another road, one
train shard per task: a first pass sums every feature exactly (``math.fsum``) for the mean, a
second sums the squared deviations from that mean for the standard deviation; minimum, maximum
and histogram counts (on the fitted edges) are reduced per shard, and document frequencies are
counted per shard (Python's lower, then a compiled walk with a token table of its own:
:func:`token_document_counts`) and added in shard order. Time is linear in the train rows;
memory holds one shard per worker plus the vocabulary of the document-frequency count.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.shards import iter_batches, part_path, read_shard
from corpus_platform.base.words import ascii_spaced, text_buffers
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.kernels.statistics.fit import column_values
from corpus_platform.kernels.statistics.topk import top_counts, write_count_table

# Texts counted by one call of the compiled count: a whole shard of the benchmarks' size (12,500
# documents), so its counts need no merging by token (an Arrow group-by took 0.75 CPU-s of a
# 100,000-document build at 4,096); the task holds its shard's texts once more, no more.
AUDIT_BATCH = 16_384


@dataclass(frozen=True)
class ShardAudit:
    """One train shard's exact sums, extremes, histogram counts and document frequencies."""

    rows: int
    counts: dict[str, int]
    totals: dict[str, float]
    minimum: dict[str, float]
    maximum: dict[str, float]
    histograms: dict[str, list[int]]
    documents: int
    frequencies: Counter[str]


def audit_shard(
    shard: int,
    train: Path,
    edges: dict[str, list[float]],
    with_text: bool,
    counts_dir: Path | None = None,
) -> ShardAudit:
    """The first pass over one train shard; with ``counts_dir`` its document frequencies are
    written there by token hash (:mod:`kernels.statistics.topk`) instead of returned."""
    table = read_shard(train, shard, list(edges))
    counts, totals, low, high, histograms = {}, {}, {}, {}, {}
    for name, bins in edges.items():
        values = present(column_values(table, name))
        counts[name] = int(values.size)
        totals[name] = math.fsum(values.tolist())
        low[name] = float(values.min()) if values.size else math.inf
        high[name] = float(values.max()) if values.size else -math.inf
        histograms[name] = np.histogram(values, bins=bins)[0].tolist()
    documents, parts = 0, []
    if with_text:
        for batch in iter_batches(part_path(train, shard), ["text"], AUDIT_BATCH):
            texts = [t for t in batch.column("text").to_pylist() if t is not None]
            documents += len(texts)
            parts.append(token_document_counts(texts))
    summed = _summed(parts)
    frequencies: Counter[str] = Counter()
    if counts_dir is not None:
        write_count_table(summed, counts_dir, shard)
    else:
        keys, values = summed.column("key").to_pylist(), summed.column("count").to_pylist()
        frequencies.update(dict(zip(keys, values, strict=True)))
    return ShardAudit(len(table), counts, totals, low, high, histograms, documents, frequencies)


def squared_deviations(shard: int, train: Path, means: dict[str, float]) -> dict[str, float]:
    """The second pass over one train shard: exact sums of squared deviations from ``means``."""
    table = read_shard(train, shard, list(means))
    out = {}
    for name, mean in means.items():
        deviations = present(column_values(table, name)) - mean
        out[name] = math.fsum((deviations * deviations).tolist())
    return out


def token_document_counts(texts: list[str]) -> pa.Table:
    """In how many of ``texts`` each token occurs (``key``, ``count``): tokens are the
    whitespace words of ``text.lower()`` (Python's lower, so Unicode case is Python's), counted
    by a compiled walk over the lowered texts' bytes with a token table of its own
    (:func:`corpus_platform.base.word_kernels.token_document_frequencies`), not the fit's Arrow
    split and dictionary."""
    from corpus_platform.base.word_kernels import token_document_frequencies  # numba: first use

    lowered = ascii_spaced(pa.array([t.lower() for t in texts], pa.large_string()))
    raw, offsets = text_buffers(lowered)
    starts, tokens, frequency = token_document_frequencies(raw, offsets)
    keys = pa.Array.from_buffers(
        pa.large_string(), len(frequency), [None, pa.py_buffer(starts), pa.py_buffer(tokens)]
    )
    return pa.table({"key": keys, "count": pa.array(frequency, pa.int64())})


def _summed(parts: list[pa.Table]) -> pa.Table:
    """The counts of several :func:`token_document_counts` tables added by token."""
    if not parts:
        return pa.table({"key": pa.array([], pa.large_string()), "count": pa.array([], pa.int64())})
    if len(parts) == 1:
        return parts[0]
    summed = (
        pa.concat_tables(parts).group_by("key", use_threads=False).aggregate([("count", "sum")])
    )
    return pa.table({"key": summed.column("key"), "count": summed.column("count_sum")})


def present(values: np.ndarray) -> np.ndarray:
    """``values`` without NaN (nulls)."""
    return values[~np.isnan(values)]


@dataclass(frozen=True)
class TrainAudit:
    """Everything recomputed from the train split."""

    rows: int
    features: dict[str, dict[str, object]]
    documents: int
    document_frequencies: Counter[str]


def recompute_train_statistics(
    train: Path,
    num_shards: int,
    edges: dict[str, list[float]],
    with_text: bool,
    engine: Engine | None = None,
    scratch: Path | None = None,
    fitted_top: list[list] | None = None,
    memory_mb: int = 1024,
) -> TrainAudit:
    """Recompute the fitted statistics from the train split in two streaming passes, each a map
    over shards on ``engine`` reduced in shard order.

    Args:
        train: The train split's folder.
        num_shards: Logical shards.
        edges: Per numeric feature, the fitted histogram's bin edges.
        with_text: Also count text documents and token document frequencies.
        engine: Where shard passes run (this process by default).
        scratch: When given, document frequencies are summed per token hash range there and
            only the recounted top-k and the counts of ``fitted_top``'s tokens come back (the
            tokens :func:`fit_mismatches` compares); otherwise every token's count.
        fitted_top: The fit's ``[token, count]`` top-k list (with ``scratch``).
        memory_mb: What one task of the document-frequency reduce may hold.
    """
    engine = engine or LocalEngine()
    shards = range(num_shards)
    counts_dir = scratch / "document-frequencies" if scratch is not None else None
    first = engine.map_shards(
        partial(
            audit_shard,
            train=train,
            edges=edges,
            with_text=with_text,
            counts_dir=counts_dir,
        ),
        shards,
    )
    counts = {name: sum(a.counts[name] for a in first) for name in edges}
    means = {
        name: math.fsum(a.totals[name] for a in first) / counts[name]
        for name in edges
        if counts[name]
    }
    second = engine.map_shards(partial(squared_deviations, train=train, means=means), shards)
    features: dict[str, dict[str, object]] = {}
    for name in edges:
        if not counts[name]:
            features[name] = {"count": 0}
            continue
        features[name] = {
            "count": counts[name],
            "mean": means[name],
            "std": math.sqrt(math.fsum(s[name] for s in second) / counts[name]),
            "minimum": min(a.minimum[name] for a in first),
            "maximum": max(a.maximum[name] for a in first),
            "histogram": np.sum([a.histograms[name] for a in first], axis=0).tolist(),
        }
    frequencies: Counter[str] = Counter()
    for audit in first:
        frequencies.update(audit.frequencies)
    if counts_dir is not None and with_text:
        top = fitted_top or []
        wanted = [t for t, _ in top]
        recounted, found = top_counts(counts_dir, len(top), wanted, engine, memory_mb)
        frequencies = Counter({**dict(recounted), **found})
    return TrainAudit(
        sum(a.rows for a in first), features, sum(a.documents for a in first), frequencies
    )


CLOSE = {"rel_tol": 1e-9, "abs_tol": 1e-9}


def _differences(name: str, fitted: dict, direct: dict[str, object]) -> list[str]:
    out = []
    for key, value in direct.items():
        stored = fitted["histogram"]["counts"] if key == "histogram" else fitted[key]
        same = (
            stored == value
            if key in ("histogram", "count")
            else math.isclose(stored, value, **CLOSE)
        )
        if not same:
            out.append(f"{name}.{key}: fitted {stored} != recomputed {value}")
    return out


def _frequency_mismatches(fitted: dict, audit: TrainAudit) -> list[str]:
    top = fitted["text"]["document_frequency_top_k"]
    recount = audit.document_frequencies
    wrong = [token for token, count in top if recount[token] != count]
    expected = sorted(recount.items(), key=lambda kv: (-kv[1], kv[0]))[: len(top)]
    out = []
    if wrong or [list(kv) for kv in expected] != top:
        out.append(f"document frequencies differ for {wrong[:5] or 'the top-K ranking'}")
    if fitted["text"]["documents"] != audit.documents:
        out.append(f"text documents: fitted {fitted['text']['documents']} != {audit.documents}")
    return out


def fit_mismatches(fitted: dict, audit: TrainAudit, feature_columns: list[str]) -> list[str]:
    """Every statistic of ``fitted`` (statistics.json) that the independent recomputation
    ``audit`` contradicts, one line each; empty when they agree."""
    mismatches = [
        difference
        for name in feature_columns
        for difference in _differences(name, fitted["features"][name], audit.features[name])
    ]
    if "text" in fitted:
        mismatches += _frequency_mismatches(fitted, audit)
    return mismatches
