"""The filter stage's findings per raw batch, kept beside the batch's files.

A batch's files are filtered once; what filtering them found (rows in and kept, removals per
filter, would-fail counts, replacements and the review samples) is written to
``_batches/<batch key>.json`` in the stage folder, so a later build that takes the batch's files
as they are takes its findings too, and the stage's totals and samples equal a build that
filtered every batch again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from corpus_platform.base.shards import read_json, write_json
from corpus_platform.kernels.filtering.stage import SAMPLES_PER_FILTER, FilterSummary, Sample

BATCHES = "_batches"


def summary_path(folder: Path, batch: str) -> Path:
    """Where the findings of batch ``batch`` are kept in a stage folder."""
    return folder / BATCHES / f"{batch}.json"


def merged(summaries: Iterable[FilterSummary], batch: str | None = None) -> FilterSummary:
    """One summary of many (the shards of a batch): counts added, samples offered again."""
    total = FilterSummary(shard=-1, batch=batch)
    for summary in summaries:
        total.rows_in += summary.rows_in
        total.kept += summary.kept
        total.removed_by.update(summary.removed_by)
        total.would_fail.update(summary.would_fail)
        total.replacements.update(summary.replacements)
        for (name, passed), heap in summary.samples.items():
            for _, _, sample in heap:
                bucket = total.samples.setdefault((name, passed), [])
                bucket.append((-sample.key, sample.doc_id, sample))
    for bucket in total.samples.values():  # keep what offering them one by one would keep
        bucket.sort(key=lambda entry: (entry[2].key, entry[2].doc_id))
        del bucket[SAMPLES_PER_FILTER:]
    return total


def to_record(summary: FilterSummary, raw_sha256: str) -> dict[str, Any]:
    """A batch's findings as JSON, with the SHA-256 of the raw file they were made from."""
    samples = [
        {"filter": name, "passed": passed, "key": s.key, "doc_id": s.doc_id,
         "score": s.score, "snippet": s.snippet}
        for (name, passed), heap in sorted(summary.samples.items())
        for s in sorted((entry[2] for entry in heap), key=lambda s: (s.key, s.doc_id))
    ]  # fmt: skip
    return {
        "raw_sha256": raw_sha256,
        "rows_in": summary.rows_in,
        "kept": summary.kept,
        "removed_by": dict(sorted(summary.removed_by.items())),
        "would_fail": dict(sorted(summary.would_fail.items())),
        "replacements": dict(sorted(summary.replacements.items())),
        "samples": samples,
    }


def from_record(record: Mapping[str, Any], batch: str) -> FilterSummary:
    """The :class:`FilterSummary` a kept batch's record holds."""
    summary = FilterSummary(
        shard=-1,
        batch=batch,
        rows_in=record["rows_in"],
        kept=record["kept"],
        removed_by=Counter(record["removed_by"]),
        would_fail=Counter(record["would_fail"]),
        replacements=Counter(record["replacements"]),
    )
    for s in record["samples"]:
        sample = Sample(s["key"], s["doc_id"], s["score"], s["snippet"])
        bucket = summary.samples.setdefault((s["filter"], s["passed"]), [])
        bucket.append((-sample.key, sample.doc_id, sample))
    return summary


def write_summary(folder: Path, summary: FilterSummary, raw_sha256: str) -> None:
    """Keep a batch's findings in the stage folder."""
    write_json(to_record(summary, raw_sha256), summary_path(folder, summary.batch or ""))


def read_summary(folder: Path, batch: str) -> dict[str, Any]:
    """A kept batch's findings as recorded."""
    return read_json(summary_path(folder, batch))
