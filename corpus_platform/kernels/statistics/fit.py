"""Statistics fitted on the train split only, merged from per-shard partials in shard order.

Per shard, each numeric feature gets exact moments (count, mean, M2, min, max); partials merge
with Chan et al.'s parallel formula in shard order, so the result does not depend on how many
workers computed them. A second pass counts fixed-bin histograms between the merged min and
max. Text gets length moments (characters, words) and document frequencies, of which the top K
are kept. The fit records the fingerprint of exactly the rows it saw.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import TEXT, generation_path, read_generations
from corpus_platform.base.hashing import fingerprint
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import (
    iter_batches,
    part_path,
    read_schema,
    read_shard,
    write_parquet,
)
from corpus_platform.base.words import Words, text_buffers
from corpus_platform.kernels.statistics.topk import write_count_table

TEXT_BATCH = 4096  # texts tokenized at a time: a batch's words, not a shard's, are in memory


@dataclass(frozen=True)
class Moments:
    """Count, mean, sum of squared deviations (M2), min and max of one feature."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf

    @classmethod
    def of(cls, values: np.ndarray) -> Moments:
        """Exact moments of the non-NaN ``values``."""
        values = values[~np.isnan(values)]
        if values.size == 0:
            return cls()
        mean = float(np.mean(values))
        return cls(
            count=int(values.size),
            mean=mean,
            m2=float(np.sum((values - mean) ** 2)),
            minimum=float(np.min(values)),
            maximum=float(np.max(values)),
        )

    def merge(self, other: Moments) -> Moments:
        """Chan's parallel combination of two partials."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        return Moments(
            count=count,
            mean=self.mean + delta * other.count / count,
            m2=self.m2 + other.m2 + delta * delta * self.count * other.count / count,
            minimum=min(self.minimum, other.minimum),
            maximum=max(self.maximum, other.maximum),
        )

    @property
    def std(self) -> float:
        """Population standard deviation (0 for fewer than two values)."""
        return math.sqrt(self.m2 / self.count) if self.count > 1 else 0.0


@dataclass(frozen=True)
class ShardPartial:
    """One shard's contribution to a fit."""

    shard: int
    rows: int
    ids_digest: str
    moments: dict[str, Moments]
    text_chars: Moments = Moments()
    text_words: Moments = Moments()
    doc_freq: dict[str, int] = field(default_factory=dict)


def column_values(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls."""
    return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)


def lowered(texts: pa.Array) -> pa.Array:
    """``str.lower()`` of every text (no nulls): Arrow's ASCII kernel for the texts whose bytes
    are all ASCII (where the two agree exactly), Python's own for the others (Arrow's UTF-8
    kernel maps case one code point at a time: U+0130 and a word-final capital sigma lower
    differently)."""
    texts = texts.cast(pa.large_string())
    raw, offsets = text_buffers(texts)
    wide = np.diff(np.searchsorted(np.flatnonzero(raw >= 0x80), offsets)) > 0
    out = pc.ascii_lower(texts)
    if not wide.any():
        return out
    others = [t.lower() for t in texts.filter(pa.array(wide)).to_pylist()]
    return pc.replace_with_mask(out, pa.array(wide), pa.array(others, pa.large_string()))


def token_statistics(texts: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Each text's whitespace word count, the batch's distinct lower-cased whitespace tokens
    and in how many texts each occurs (texts without nulls): Arrow splits where ``str.split()``
    does (leading and trailing empty strings dropped), tokens are dictionary-encoded, and
    the texts holding each token are counted in compiled code
    (:func:`.compiled.document_frequencies`)."""
    from corpus_platform.kernels.statistics import compiled  # numba: on first use only

    words = Words.of(lowered(texts))
    frequency = compiled.document_frequencies(words.codes, words.counts, len(words.dictionary))
    return words.counts, words.dictionary, frequency


def shard_partial(
    shard: int,
    folder: Path,
    features: tuple[str, ...],
    with_text: bool = False,
    counts_dir: Path | None = None,
) -> ShardPartial:
    """Moments, text statistics and a doc-id digest of one shard of the train split. With
    ``counts_dir`` the document frequencies are written there, sorted by token hash
    (:mod:`corpus_platform.kernels.statistics.topk`), instead of returned."""
    table = read_shard(folder, shard, ["doc_id", *features])
    ids = table.column("doc_id").to_pylist()
    moments = {name: Moments.of(column_values(table, name)) for name in features}
    if not with_text:
        return ShardPartial(shard, len(ids), fingerprint(ids), moments)
    chars, words, table = text_statistics(part_path(folder, shard))
    frequencies: dict[str, int] = {}
    if counts_dir is not None:
        write_count_table(table, counts_dir, shard)
    else:
        keys, counts = (table.column(c).to_pylist() for c in ("key", "count"))
        frequencies = dict(zip(keys, counts, strict=True))
    return ShardPartial(
        shard,
        len(ids),
        fingerprint(ids),
        moments,
        text_chars=Moments.of(chars),
        text_words=Moments.of(words),
        doc_freq=frequencies,
    )


def text_statistics(path: Path) -> tuple[np.ndarray, np.ndarray, pa.Table]:
    """Characters and words of every non-null text of a shard file, in row order, and document
    frequencies (a table of ``key`` and ``count``, in first-seen order), read ``TEXT_BATCH`` rows
    at a time so memory follows the batch, not the shard (each text is in one batch, so
    per-batch document frequencies add up exactly)."""
    chars: list[np.ndarray] = []
    words: list[np.ndarray] = []
    tokens: list[pa.Array] = []
    counts: list[np.ndarray] = []
    for batch in iter_batches(path, ["text"], TEXT_BATCH):
        present = pc.drop_null(batch.column("text")).combine_chunks()
        counted, dictionary, frequency = token_statistics(present)
        chars.append(pc.utf8_length(present).to_numpy().astype(np.float64))
        words.append(counted.astype(np.float64))
        tokens.append(dictionary.cast(pa.large_string()))
        counts.append(frequency.astype(np.int64))
    empty = np.zeros(0, dtype=np.float64)
    frequencies = pa.table(
        {
            "key": pa.concat_arrays(tokens) if tokens else pa.array([], pa.large_string()),
            "count": np.concatenate(counts) if counts else np.zeros(0, np.int64),
        }
    )
    summed = frequencies.group_by("key", use_threads=False).aggregate([("count", "sum")])
    return (
        np.concatenate(chars) if chars else empty,
        np.concatenate(words) if words else empty,
        summed.rename_columns(["key", "count"]),
    )


def histogram_edges(moments: Moments, bins: int) -> list[float]:
    """Fixed bin edges between the fitted min and max (one unit wide if they are equal)."""
    if moments.count == 0:
        return []
    low, high = moments.minimum, moments.maximum
    if high <= low:
        high = low + 1.0
    return np.linspace(low, high, bins + 1).tolist()


def shard_histograms(
    shard: int, folder: Path, edges: dict[str, list[float]]
) -> dict[str, list[int]]:
    """Counts of one shard's values in the fixed bins of every feature."""
    table = read_shard(folder, shard, list(edges))
    out = {}
    for name, bins in edges.items():
        values = column_values(table, name)
        values = values[~np.isnan(values)]
        out[name] = np.histogram(values, bins=bins)[0].tolist() if bins else []
    return out


def split_fingerprint(partials: list[ShardPartial]) -> str:
    """Fingerprint of a split: its shards' doc-id digests in shard order."""
    return fingerprint(p.ids_digest for p in sorted(partials, key=lambda p: p.shard))


def merge_partials(partials: list[ShardPartial], features: tuple[str, ...]) -> dict[str, Moments]:
    """Merge per-shard moments in shard order."""
    merged = {name: Moments() for name in features}
    for partial in sorted(partials, key=lambda p: p.shard):
        for name in features:
            merged[name] = merged[name].merge(partial.moments[name])
    return merged


def _moments_dict(m: Moments) -> dict[str, float]:
    return {**{k: v for k, v in asdict(m).items() if k != "m2"}, "std": m.std}


def statistics_document(
    partials: list[ShardPartial],
    features: tuple[str, ...],
    split: str,
    histograms: dict[str, tuple[list[float], list[int]]],
    top_k: int,
    with_text: bool,
    top_tokens: list[tuple[str, int]] | None = None,
) -> dict[str, Any]:
    """The fitted statistics as a JSON-ready document, with what they were fitted on;
    ``top_tokens`` the document-frequency top-k when it was reduced apart from the partials."""
    ordered = sorted(partials, key=lambda p: p.shard)
    merged = merge_partials(ordered, features)
    document: dict[str, Any] = {
        "fitted_on": {
            "split": split,
            "rows": sum(p.rows for p in ordered),
            "fingerprint": split_fingerprint(ordered),
        },
        "features": {
            name: {
                **_moments_dict(m),
                "histogram": {"edges": histograms[name][0], "counts": histograms[name][1]},
            }
            for name, m in merged.items()
        },
    }
    if with_text:
        chars, words, freq = Moments(), Moments(), Counter()
        for p in ordered:
            chars, words = chars.merge(p.text_chars), words.merge(p.text_words)
            freq.update(p.doc_freq)
        top = (
            sorted(freq.items(), key=lambda item: (-item[1], item[0]))[:top_k]
            if top_tokens is None
            else top_tokens[:top_k]
        )
        document["text"] = {
            "documents": chars.count,
            "chars": _moments_dict(chars),
            "words": _moments_dict(words),
            "document_frequency_top_k": [[token, count] for token, count in top],
        }
    return document


def normalize_shard(
    shard: int,
    folder: Path,
    staging: Path,
    features: dict[str, dict[str, float]],
    generations: tuple[int, ...] | None = None,
    generation: int = 0,
) -> int:
    """Z-score one shard's features with frozen train statistics, as generation ``generation``
    of ``staging``; return rows written. ``generations``: only the rows of those generations of
    ``folder`` (an append), every row for None. The text is not written again: a reader takes
    it from ``folder``, row for row (:func:`~corpus_platform.base.generations.with_texts`)."""
    columns = [c for c in read_schema(part_path(folder, shard)).names if c != TEXT]
    table = read_generations(folder, shard, generations, columns)
    for name, stats in features.items():
        index = table.schema.get_field_index(name)
        std = stats["std"] or 1.0
        scaled = pc.divide(pc.subtract(table.column(name), stats["mean"]), std)
        table = table.set_column(index, pa.field(name, pa.float64()), scaled)
    write_parquet(table, generation_path(staging, shard, generation))
    return len(table)


def frozen_scaling_errors(
    split_root: Path, normalized_root: Path, features: dict[str, dict], num_shards: int
) -> tuple[Counter[str], list[str]]:
    """Rows checked per split, and every shard whose normalized features are not
    ``(x - train mean) / train std`` of the split's rows (``features``: statistics.json's)."""
    checked: Counter[str] = Counter()
    bad: list[str] = []
    for name in SPLITS:
        for shard in range(num_shards):
            raw = read_shard(split_root / name, shard, ["doc_id", *features])
            done = read_shard(normalized_root / name, shard, ["doc_id", *features])
            if raw.column("doc_id") != done.column("doc_id"):
                bad.append(f"{name} shard {shard}: rows differ from split_documents")
                continue
            for feature, stats in features.items():
                expected = (column_values(raw, feature) - stats["mean"]) / (stats["std"] or 1.0)
                if not np.allclose(
                    column_values(done, feature), expected, rtol=1e-12, atol=1e-12, equal_nan=True
                ):
                    bad.append(
                        f"{name} shard {shard}: {feature} not scaled by the frozen train statistics"
                    )
            checked[name] += len(raw)
    return checked, bad
