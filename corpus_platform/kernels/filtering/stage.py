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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.arrays import one_array
from corpus_platform.base.hashing import content_hash, unit_interval
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import batch_part_path, part_path, read_parquet, write_parquet
from corpus_platform.base.unedited import stored_texts
from corpus_platform.config import FilterConfig
from corpus_platform.kernels.filtering import langid
from corpus_platform.kernels.filtering.filters import (
    LANGUAGE,
    Verdict,
    judge_matrix,
    might_hold_boilerplate,
    strip_boilerplate_lines,
)
from corpus_platform.kernels.filtering.pii import scrub_all
from corpus_platform.kernels.filtering.verdicts import ShardVerdicts, failed_before_language

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
    batch: str | None = None
    kept: int = 0
    removed_by: Counter[str] = field(default_factory=Counter)
    would_fail: Counter[str] = field(default_factory=Counter)
    replacements: Counter[str] = field(default_factory=Counter)
    samples: dict[tuple[str, bool], list[Sample]] = field(default_factory=dict)

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
    column: pa.ChunkedArray, sources: list[str], config: FilterConfig
) -> tuple[list[str | None], list[list[Verdict]], list[Counter[str]]]:
    """PII replacement and C4 line removal: (edited texts, PII drop verdicts, edits per row).
    A text's lines are searched for boilerplate only where a replacement changed it or the
    batch's one pass (:func:`might_hold_boilerplate`) matched its raw text."""
    texts = column.to_pylist()
    edited: list[str | None] = []
    pii_failures: list[list[Verdict]] = []
    edits: list[Counter[str]] = []
    boilerplate_exempt = set(config.exempt.get(C4_LINES, ()))
    maybe = might_hold_boilerplate(one_array(column)).tolist()
    results = scrub_all(texts, config.pii)
    for result, source, flagged in zip(results, sources, maybe, strict=True):
        if result is None:
            edited.append(None)
            pii_failures.append([])
            edits.append(Counter())
            continue
        text, counts = result.text, Counter(result.replaced)
        search = flagged or bool(result.replaced)
        if search and config.c4_remove_boilerplate_lines and source not in boilerplate_exempt:
            text, removed_lines = strip_boilerplate_lines(text)
            if removed_lines:
                counts[C4_LINES] += removed_lines
        edited.append(text)
        pii_failures.append(_pii_verdicts(result.found, result.dropping(config.pii)))
        edits.append(counts)
    return edited, pii_failures, edits


def filter_shard(
    shard: int,
    upstream: Path,
    staging: Path,
    config: FilterConfig,
    seed: int,
    batch: str | None = None,
) -> FilterSummary:
    """Filter one shard, or one raw batch's file of it (``batch``): kept rows to ``part-N``
    (``part-N/<batch>``), removed rows with reasons to the same place under ``removed/``."""
    source = (
        part_path(upstream, shard) if batch is None else batch_part_path(upstream, shard, batch)
    )
    table = read_parquet(source)
    summary = FilterSummary(shard=shard, rows_in=len(table), batch=batch)
    sources = table.column("source").to_pylist()
    urls = table.column("url").to_pylist() if "url" in table.column_names else [None] * len(table)
    texts, pii_failures, edits = _edit_texts(table.column("text"), sources, config)
    matrix = judge_matrix(texts, sources, urls, config)
    failed = failed_before_language(pii_failures, matrix)
    language = _language_verdicts(texts, sources, failed, config)
    verdicts = ShardVerdicts(pii_failures, matrix, language)
    replacements = [sorted(f"{kind}:{n}" for kind, n in row.items()) for row in edits]
    for row in edits:
        summary.replacements.update(row)
    return _write(table, staging, texts, verdicts, replacements, summary, seed, upstream.name)


def filter_batch_task(
    index: int, tasks: tuple[tuple[int, str], ...], **kwargs: object
) -> FilterSummary:
    """Filter the ``index``-th (shard, batch) file of ``tasks``: an engine task, defined here
    and not beside the asset, so that a worker unpickling it imports no Dagster."""
    shard, batch = tasks[index]
    return filter_shard(shard, batch=batch, **kwargs)  # type: ignore[arg-type]


def _language_verdicts(
    texts: list[str | None], sources: list[str], failed: np.ndarray, config: FilterConfig
) -> list[Verdict | None]:
    """Run language identification last, in one batch, on rows every other filter passed
    (``failed``: the rows some other verdict fails)."""
    out: list[Verdict | None] = [None] * len(texts)
    if not config.languages:
        return out
    exempt = set(config.exempt.get(LANGUAGE, ()))
    todo = [
        i
        for i, (text, source, dropped) in enumerate(
            zip(texts, sources, failed.tolist(), strict=True)
        )
        if text is not None and source not in exempt and not dropped
    ]
    scores = langid.keep_confidence(
        [texts[i] for i in todo],
        config.languages,
        config.language_candidates,
        config.language_backend,
        config.language_max_chars,
    )
    for i, score in zip(todo, scores, strict=True):
        out[i] = Verdict(
            LANGUAGE,
            score,
            config.min_language_confidence,
            score >= config.min_language_confidence,
            fails_above=False,
        )
    return out


def _offer_samples(
    summary: FilterSummary,
    verdicts: ShardVerdicts,
    ids: list[str],
    texts: list[str | None],
    seed: int,
) -> None:
    """Offer each (verdict, passed) bucket the rows with the smallest review keys (ties: the
    larger doc id, as the bucket's heap keeps them)."""
    keys = np.array([unit_interval(doc_id, seed, "review") for doc_id in ids])
    by_id_descending = np.argsort(np.array(ids, dtype=object))[::-1] if ids else np.empty(0, int)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[by_id_descending] = np.arange(len(ids))
    snippets: dict[int, str] = {}
    for (name, _), rows in verdicts.buckets().items():
        chosen = rows[np.lexsort((rank[rows], keys[rows]))[:SAMPLES_PER_FILTER]]
        for i in chosen.tolist():
            if i not in snippets:
                snippets[i] = redact_text((texts[i] or "")[:SNIPPET_CHARS])
            verdict = verdicts.verdict(i, name)
            summary.offer(verdict, Sample(float(keys[i]), ids[i], verdict.score, snippets[i]))


def _write(
    table: pa.Table,
    staging: Path,
    texts: list[str | None],
    verdicts: ShardVerdicts,
    replacements: list[list[str]],
    summary: FilterSummary,
    seed: int,
    upstream: str,
) -> FilterSummary:
    """Write the kept rows (a text only where the filters edited it, the others' in the
    ``upstream`` stage: :mod:`~corpus_platform.base.unedited`) and the removed rows (every
    text)."""
    ids = table.column("doc_id").to_pylist()
    first = verdicts.first_failures()
    summary.would_fail.update(verdicts.would_fail())
    summary.removed_by.update(f.name for f in first if f is not None)
    _offer_samples(summary, verdicts, ids, texts, seed)
    keep = pa.array([f is None for f in first], pa.bool_())
    summary.kept = sum(f is None for f in first)
    index = table.schema.get_field_index("text")
    changed = [bool(row) for row in replacements]
    field, stored = stored_texts(texts, changed, table.schema.field("text"), upstream)
    upstream_texts = table.column("text")
    table = table.set_column(index, field, stored)
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
    table = table.append_column("quality_score", pa.array(verdicts.quality_scores(), pa.float64()))
    write_parquet(table.filter(keep), _out(staging, summary.shard, summary.batch))
    removed = table
    for spec, values in zip(
        REMOVED_FIELDS,
        (
            [f.name if f else None for f in first],
            [f.score if f else None for f in first],
            [f.threshold if f else None for f in first],
            [verdicts.failed_names(i) if f else [] for i, f in enumerate(first)],
        ),
        strict=True,
    ):
        removed = removed.append_column(spec, pa.array(values, spec.type))
    drop = pc.invert(keep)
    removed = removed.filter(drop)  # every removed row with its whole text, unmarked
    whole = pc.coalesce(removed.column(index), upstream_texts.filter(drop))
    write_parquet(
        removed.set_column(index, "text", whole),
        _out(staging / "removed", summary.shard, summary.batch),
    )
    return summary


def _out(folder: Path, shard: int, batch: str | None) -> Path:
    """A shard's file, or one raw batch's file of it."""
    return part_path(folder, shard) if batch is None else batch_part_path(folder, shard, batch)
