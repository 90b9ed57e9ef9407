"""Statistics kernels on small hand-built shards: moments, partials, histograms, text
statistics (hand-made and Debian text)."""

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.shards import write_parquet
from corpus_platform.kernels.statistics.fit import (
    Moments,
    histogram_edges,
    merge_partials,
    shard_histograms,
    shard_partial,
    split_fingerprint,
    statistics_document,
    text_statistics,
)
from tests.realtext import real_texts
from tests.shardtools import rows_table


def test_merged_moments_equal_direct_computation() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(5, 3, 10_001)
    parts = np.array_split(values, 7)
    merged = Moments()
    for part in parts:
        merged = merged.merge(Moments.of(part))
    assert merged.count == values.size
    assert math.isclose(merged.mean, values.mean(), rel_tol=1e-12)
    assert math.isclose(merged.std, values.std(), rel_tol=1e-12)
    assert (merged.minimum, merged.maximum) == (values.min(), values.max())
    with_nan = Moments.of(np.array([1.0, np.nan, 3.0]))
    assert (with_nan.count, with_nan.mean) == (2, 2.0)


def test_partials_merge_in_shard_order_and_fingerprint_the_rows(tmp_path: Path) -> None:
    table = rows_table(100, 10)
    write_parquet(table.slice(0, 40), tmp_path / "t" / "part-00000.parquet")
    write_parquet(table.slice(40), tmp_path / "t" / "part-00001.parquet")
    partials = [shard_partial(s, tmp_path / "t", ("x",)) for s in (1, 0)]
    merged = merge_partials(partials, ("x",))["x"]
    assert math.isclose(merged.mean, np.mean(table.column("x").to_numpy()), rel_tol=1e-12)
    reordered = split_fingerprint(list(reversed(partials)))
    assert split_fingerprint(partials) == reordered
    write_parquet(table.slice(41), tmp_path / "t" / "part-00001.parquet")  # one row less
    changed = [shard_partial(s, tmp_path / "t", ("x",)) for s in (0, 1)]
    assert split_fingerprint(changed) != reordered


def test_histograms_and_text_statistics(tmp_path: Path) -> None:
    table = pa.table(
        {
            "doc_id": ["a", "b", "c", "d"],
            "x": [0.0, 1.0, 2.0, 10.0],
            "text": ["red blue", "red red green", None, "blue"],
        }
    )
    write_parquet(table.slice(0, 2), tmp_path / "t" / "part-00000.parquet")
    write_parquet(table.slice(2), tmp_path / "t" / "part-00001.parquet")
    partials = [shard_partial(s, tmp_path / "t", ("x",), with_text=True) for s in (0, 1)]
    merged = merge_partials(partials, ("x",))
    edges = {"x": histogram_edges(merged["x"], 5)}
    assert edges["x"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    counts = [shard_histograms(s, tmp_path / "t", edges)["x"] for s in (0, 1)]
    assert np.sum(counts, axis=0).tolist() == [2, 1, 0, 0, 1]
    doc = statistics_document(
        partials, ("x",), "train", {"x": (edges["x"], [2, 1, 0, 0, 1])}, 2, True
    )
    assert doc["text"]["document_frequency_top_k"] == [["blue", 2], ["red", 2]]
    assert doc["text"]["documents"] == 3 and doc["text"]["words"]["maximum"] == 3.0
    assert doc["fitted_on"] == {
        "split": "train",
        "rows": 4,
        "fingerprint": split_fingerprint(partials),
    }


def plain_text_statistics(texts: list[str | None]) -> tuple[list[int], list[int], Counter[str]]:
    """Characters, words and document frequencies by their plain definitions."""
    present = [t for t in texts if t is not None]
    frequencies: Counter[str] = Counter()
    for text in present:
        frequencies.update(set(text.lower().split()))
    return [len(t) for t in present], [len(t.split()) for t in present], frequencies


@pytest.mark.parametrize("source", ["hand", "debian"])
def test_text_statistics_follow_the_plain_definitions(tmp_path: Path, source: str) -> None:
    """Lower-casing and splitting by batch agree with ``str.lower().split()`` per text: ASCII
    texts beside ones whose lower case differs per code point (U+0130, a final capital sigma),
    Unicode and separator whitespace, empty texts and nulls, and Debian's own text."""
    texts: list[str | None] = (
        [
            "Red BLUE  red",
            "\u0130stanbul \u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3",
            "a\x1cb\u3000C\u00a0d \u2028E",
            "  leading and trailing\n",
            "",
            None,
            "caf\u00e9 CAF\u00c9 Stra\u00dfe",
        ]
        if source == "hand"
        else [*real_texts(300), None]
    )
    path = tmp_path / "part-00000.parquet"
    write_parquet(pa.table({"text": pa.array(texts, pa.string())}), path)
    chars, words, table = text_statistics(path)
    expected_chars, expected_words, expected = plain_text_statistics(texts)
    assert chars.tolist() == expected_chars and words.tolist() == expected_words
    got = dict(zip(table.column("key").to_pylist(), table.column("count").to_pylist(), strict=True))
    assert got == dict(expected) and len(got) == table.num_rows


def test_document_frequencies_count_each_text_once() -> None:
    """The compiled count against counting distinct codes text by text in Python."""
    from corpus_platform.kernels.statistics import compiled

    rng = np.random.default_rng(9)
    counts = rng.integers(0, 40, 300)
    codes = rng.integers(0, 50, int(counts.sum()))
    expected = np.zeros(60, np.int64)
    start = 0
    for count in counts.tolist():
        for code in set(codes[start : start + count].tolist()):
            expected[code] += 1
        start += count
    got = compiled.document_frequencies(codes, counts, 60)
    assert got.tolist() == expected.tolist()
