"""The kernel behind the benchmark-overlap check: it finds a training row holding benchmark text."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.mixing.decontam import EvalNgrams, overlap_report

SHARDS = 2


def test_overlap_report_finds_a_row_holding_benchmark_text(tmp_path: Path) -> None:
    benchmark = "the quick brown fox jumps over the lazy dog near the quiet river bank today"
    texts = ["an unrelated sentence about something else entirely " * 3, f"intro {benchmark} end"]
    for shard in range(SHARDS):
        table = pa.table({"doc_id": [f"d{shard}"], "text": [texts[shard]]})
        write_parquet(table, part_path(tmp_path, shard))
    ngrams = EvalNgrams.of({"bench": [benchmark], "other": []}, 13)
    report = overlap_report(tmp_path, SHARDS, ngrams, 13)
    assert (report.rows, report.contaminated) == (2, 1)
    assert report.hits == {"bench": 1, "other": 0} and report.examples == ("d1: bench",)
