"""The filter stage of one shard: PII, C4 line edits, heuristic filters, then language id.

Removed rows are kept aside with the first failing filter, its score and threshold, and every
filter they failed; kept rows carry their (possibly edited) text, a recomputed content hash and
the replacements made. A deterministic sample of passed and failed rows per filter is collected
for review in the UI.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import content_hash, unit_interval
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import part_path, read_shard, write_parquet
from corpus_platform.config import FilterConfig
from corpus_platform.kernels import langid
from corpus_platform.kernels.filters import (
    LANGUAGE,
    Verdict,
    judge_texts,
    quality_score,
    strip_boilerplate_lines,
)
from corpus_platform.kernels.pii import scrub_all

SAMPLES_PER_FILTER = 3
SNIPPET_CHARS = 160
C4_LINES = "c4_boilerplate_lines"


@dataclass(frozen=True)
class Sample:
    """One row shown for review: sort key, id, score and the start of its text."""

    key: float
    doc_id: str
    score: float
    snippet: str


@dataclass
class FilterSummary:
    """Counts and review samples of one shard."""

    shard: int
    rows_in: int = 0
    kept: int = 0
    removed_by: Counter[str] = field(default_factory=Counter)
    would_fail: Counter[str] = field(default_factory=Counter)
    replacements: Counter[str] = field(default_factory=Counter)
    samples: dict[tuple[str, bool], list[Sample]] = field(default_factory=dict)

    def wants(self, verdict: Verdict, key: float, doc_id: str) -> bool:
        """Whether a row with this sort key would enter the samples of ``verdict``'s bucket."""
        bucket = self.samples.get((verdict.name, verdict.passed))
        return bucket is None or len(bucket) < SAMPLES_PER_FILTER or (-key, doc_id) > bucket[0][:2]

    def offer(self, verdict: Verdict, sample: Sample) -> None:
        """Keep the ``SAMPLES_PER_FILTER`` rows with the smallest keys per (filter, passed)."""
        bucket = self.samples.setdefault((verdict.name, verdict.passed), [])
        heapq.heappush(bucket, (-sample.key, sample.doc_id, sample))
        if len(bucket) > SAMPLES_PER_FILTER:
            heapq.heappop(bucket)


REMOVED_FIELDS = [
    pa.field("reason", pa.string()),
    pa.field("score", pa.float64()),
    pa.field("threshold", pa.float64()),
    pa.field("failed_filters", pa.list_(pa.string())),
]


def _pii_verdicts(found: Counter[str], dropping: list[str]) -> list[Verdict]:
    return [Verdict(f"pii_{kind}", float(found[kind]), 0.0, False) for kind in dropping]


def _edit_texts(
    texts: list[str | None], sources: list[str], config: FilterConfig
) -> tuple[list[str | None], list[list[Verdict]], list[Counter[str]]]:
    """PII replacement and C4 line removal: (edited texts, PII drop verdicts, edits per row)."""
    edited: list[str | None] = []
    pii_failures: list[list[Verdict]] = []
    edits: list[Counter[str]] = []
    boilerplate_exempt = set(config.exempt.get(C4_LINES, ()))
    for result, source in zip(scrub_all(texts, config.pii), sources, strict=True):
        if result is None:
            edited.append(None)
            pii_failures.append([])
            edits.append(Counter())
            continue
        text, counts = result.text, Counter(result.replaced)
        if config.c4_remove_boilerplate_lines and source not in boilerplate_exempt:
            text, removed_lines = strip_boilerplate_lines(text)
            if removed_lines:
                counts[C4_LINES] += removed_lines
        edited.append(text)
        pii_failures.append(_pii_verdicts(result.found, result.dropping(config.pii)))
        edits.append(counts)
    return edited, pii_failures, edits


def filter_shard(
    shard: int, upstream: Path, staging: Path, config: FilterConfig, seed: int
) -> FilterSummary:
    """Filter one shard: kept rows to ``part-N``, removed rows with reasons to ``removed/``."""
    table = read_shard(upstream, shard)
    summary = FilterSummary(shard=shard, rows_in=len(table))
    sources = table.column("source").to_pylist()
    urls = table.column("url").to_pylist() if "url" in table.column_names else [None] * len(table)
    texts, pii_failures, edits = _edit_texts(table.column("text").to_pylist(), sources, config)
    judged = judge_texts(texts, sources, urls, config)
    verdicts = [pii + row for pii, row in zip(pii_failures, judged, strict=True)]
    replacements = [sorted(f"{kind}:{n}" for kind, n in row.items()) for row in edits]
    for row in edits:
        summary.replacements.update(row)
    _language_verdicts(texts, sources, verdicts, config)
    return _write(shard, table, staging, texts, verdicts, replacements, summary, seed)


def _language_verdicts(
    texts: list[str | None], sources: list[str], verdicts: list[list[Verdict]], config: FilterConfig
) -> None:
    """Run language identification last, in one batch, on rows every other filter passed."""
    if not config.languages:
        return
    exempt = set(config.exempt.get(LANGUAGE, ()))
    todo = [
        i
        for i, (text, source) in enumerate(zip(texts, sources, strict=True))
        if text is not None and source not in exempt and all(v.passed for v in verdicts[i])
    ]
    scores = langid.keep_confidence(
        [texts[i] for i in todo], config.languages, config.language_candidates
    )
    for i, score in zip(todo, scores, strict=True):
        verdicts[i].append(
            Verdict(
                LANGUAGE,
                score,
                config.min_language_confidence,
                score >= config.min_language_confidence,
                fails_above=False,
            )
        )


def _write(
    shard: int,
    table: pa.Table,
    staging: Path,
    texts: list[str | None],
    verdicts: list[list[Verdict]],
    replacements: list[list[str]],
    summary: FilterSummary,
    seed: int,
) -> FilterSummary:
    ids = table.column("doc_id").to_pylist()
    first: list[Verdict | None] = []
    for doc_id, text, row in zip(ids, texts, verdicts, strict=True):
        failed = [v for v in row if not v.passed]
        summary.would_fail.update(v.name for v in failed)
        first.append(failed[0] if failed else None)
        if failed:
            summary.removed_by[failed[0].name] += 1
        key = unit_interval(doc_id, seed, "review")
        snippet = None
        for v in row:
            if summary.wants(v, key, doc_id):
                snippet = snippet or redact_text((text or "")[:SNIPPET_CHARS])
                summary.offer(v, Sample(key, doc_id, v.score, snippet))
    keep = pa.array([f is None for f in first], pa.bool_())
    summary.kept = sum(f is None for f in first)
    index = table.schema.get_field_index("text")
    table = table.set_column(index, table.schema.field("text"), pa.array(texts, pa.string()))
    upstream_hashes = table.column("content_hash").to_pylist()
    hashes = pa.array(  # recomputed only where PII replacement or line removal edited the text
        [
            content_hash(t) if edited else h
            for t, edited, h in zip(texts, replacements, upstream_hashes, strict=True)
        ],
        pa.string(),
    )
    table = table.set_column(table.schema.get_field_index("content_hash"), "content_hash", hashes)
    table = table.append_column("replacements", pa.array(replacements, pa.list_(pa.string())))
    scores = [quality_score(row) for row in verdicts]
    table = table.append_column("quality_score", pa.array(scores, pa.float64()))
    write_parquet(table.filter(keep), part_path(staging, shard))
    removed = table
    for spec, values in zip(
        REMOVED_FIELDS,
        (
            [f.name if f else None for f in first],
            [f.score if f else None for f in first],
            [f.threshold if f else None for f in first],
            [[v.name for v in row if not v.passed] for row in verdicts],
        ),
        strict=True,
    ):
        removed = removed.append_column(spec, pa.array(values, spec.type))
    write_parquet(removed.filter(pc.invert(keep)), part_path(staging / "removed", shard))
    return summary
