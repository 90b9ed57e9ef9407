"""Filtering batch by batch: the findings of each raw batch, kept as JSON and merged, equal those
of filtering the whole shard at once; an empty batch is filtered too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.hashing import content_hash
from corpus_platform.base.shards import batch_part_path, read_parquet, write_parquet
from corpus_platform.config import parse_config
from corpus_platform.kernels.filtering.batch_summaries import (
    from_record,
    merged,
    read_summary,
    write_summary,
)
from corpus_platform.kernels.filtering.stage import FilterSummary, filter_shard
from tests.kernels.filtering.test_verdicts import SEED, _corpus


def _samples(summary: FilterSummary) -> dict:
    return {
        bucket: sorted((s.key, s.doc_id, s.score, s.snippet) for _, _, s in heap)
        for bucket, heap in summary.samples.items()
    }


def test_batch_findings_merged_through_json_equal_the_whole_shards(tmp_path: Path) -> None:
    texts, sources, urls = _corpus()
    ids = [f"doc-{i:04d}" for i in range(len(texts))]
    table = pa.table(
        {
            "doc_id": ids,
            "text": texts,
            "source": sources,
            "url": urls,
            "content_hash": [content_hash(t) for t in texts],
        }
    )
    whole, batched = tmp_path / "whole", tmp_path / "batched"
    whole.mkdir()
    pq.write_table(table, whole / "part-00000.parquet")
    half = len(table) // 2
    parts = {"a": table.slice(0, half), "b": table.slice(half), "empty": table.slice(0, 0)}
    for key, part in parts.items():
        write_parquet(part, batch_part_path(batched, 0, key))
    config = parse_config({"filters": {"languages": [], "pii": {"ssn": "drop"}}}).filters
    expected = filter_shard(0, whole, tmp_path / "out-whole", config, SEED)

    out = tmp_path / "out-batched"
    for key in parts:
        found = merged([filter_shard(0, batched, out, config, SEED, batch=key)], key)
        write_summary(out, found, raw_sha256="0" * 64)
    kept = [from_record(read_summary(out, key), key) for key in parts]
    total = merged(kept)
    assert kept[2].rows_in == 0 and kept[2].kept == 0
    assert (total.rows_in, total.kept) == (expected.rows_in, expected.kept)
    assert total.removed_by == expected.removed_by
    assert total.would_fail == expected.would_fail
    assert total.replacements == expected.replacements
    assert _samples(total) == _samples(expected)
    rows = read_parquet(out / "part-00000.parquet")  # the shard folder reads as one shard
    assert (
        rows.to_pylist() == read_parquet(tmp_path / "out-whole" / "part-00000.parquet").to_pylist()
    )
