"""The streaming recomputation of the train statistics equals numpy over all rows at once."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from corpus_platform.base.shards import write_sharded
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.statistics.fit import TEXT_BATCH
from corpus_platform.kernels.statistics.recompute import (
    recompute_train_statistics,
    token_document_counts,
)
from tests.realtext import real_texts


def test_streaming_recomputation_equals_numpy_on_everything(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    clicks = rng.normal(1e6, 3.0, n)  # a large mean: a one-pass sum of squares would cancel
    clicks[rng.choice(n, 50, replace=False)] = np.nan
    texts = [None if i % 7 == 0 else f"Word{i % 13} the THE shared" for i in range(n)]
    table = pa.table(
        {
            "doc_id": [f"d{i:05d}" for i in range(n)],
            "clicks": clicks,
            "empty": pa.nulls(n, pa.float64()),
            "text": texts,
        }
    )
    write_sharded(table, tmp_path, 4)
    edges = {"clicks": np.linspace(1e6 - 10, 1e6 + 10, 6).tolist(), "empty": [0.0, 1.0]}

    audit = recompute_train_statistics(tmp_path, 4, edges, with_text=True)

    values = clicks[~np.isnan(clicks)]
    got = audit.features["clicks"]
    assert got["count"] == values.size and audit.rows == n
    assert math.isclose(got["mean"], float(values.mean()), rel_tol=1e-12)
    assert math.isclose(got["std"], float(values.std()), rel_tol=1e-9)
    assert (got["minimum"], got["maximum"]) == (values.min(), values.max())
    assert got["histogram"] == np.histogram(values, bins=edges["clicks"])[0].tolist()
    assert audit.features["empty"] == {"count": 0}
    present = [t for t in texts if t is not None]
    assert audit.documents == len(present)
    assert audit.document_frequencies["the"] == len(present)  # counted once per document
    assert audit.document_frequencies["word3"] == sum("Word3 " in t for t in present)


def test_worker_count_does_not_change_the_recomputation(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    table = pa.table(
        {
            "doc_id": [f"d{i}" for i in range(500)],
            "x": rng.normal(0, 1, 500),
            "text": [f"t{i % 9} common" for i in range(500)],
        }
    )
    write_sharded(table, tmp_path, 5)
    edges = {"x": [-5.0, 0.0, 5.0]}
    serial = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(1))
    parallel = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(2))
    assert serial == parallel


def _plain_counts(texts: list[str]) -> Counter[str]:
    """Document frequencies the plain way: one Python set of ``text.lower().split()`` a text."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(text.lower().split()))
    return counts


def test_token_document_counts_are_python_set_counts_on_real_and_unicode_text() -> None:
    """The audit's compiled count against a set per text: Debian text, Unicode case (U+0130,
    final sigma, German sharp s), Unicode whitespace, empty texts and a long token."""
    rng = random.Random(4)
    texts = real_texts(300)
    texts += [
        "\u0130stanbul ISTANBUL istanbul",
        "\u039f\u0394\u039f\u03a3 \u03bf\u03b4\u03bf\u03c2",
    ]
    texts += ["STRASSE stra\u00dfe"]
    texts += ["a\u2003b\u00a0c a", "", "   ", "x" * 500 + " y", "\x1cz\x1fz"]
    vocabulary = ["Alpha", "alpha", "BETA", "g\u00e9", "G\u00c9"]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(30)) for _ in range(200)]
    table = token_document_counts(texts)
    keys, counts = table.column("key").to_pylist(), table.column("count").to_pylist()
    assert len(set(keys)) == len(keys)
    assert dict(zip(keys, counts, strict=True)) == _plain_counts(texts)


def test_a_shard_read_in_several_batches_counts_as_one(tmp_path: Path) -> None:
    """The audit adds its batches' counts by token: a shard of more texts than ``TEXT_BATCH``
    counts as a set per text over the whole shard would."""
    rng = random.Random(6)
    texts = [
        " ".join(rng.choice(["a", "B", "c", "d\u00e9", "E"]) for _ in range(5)) for _ in range(9000)
    ]
    table = pa.table({"doc_id": [f"d{i:05d}" for i in range(len(texts))], "text": texts})
    write_sharded(table, tmp_path, 1)
    audit = recompute_train_statistics(tmp_path, 1, {}, with_text=True)
    assert audit.documents == len(texts) > 2 * TEXT_BATCH
    assert audit.document_frequencies == _plain_counts(texts)
