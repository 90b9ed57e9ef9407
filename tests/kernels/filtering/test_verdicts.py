"""The filter stage's array reductions (first failure, failed names, counts, quality score,
review samples) equal the plain reductions of each row's list of verdicts, on generated prose,
real /usr/share text, personal data, denied domains, exempt sources and language verdicts."""

from __future__ import annotations

import heapq
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.hashing import content_hash, unit_interval
from corpus_platform.config import parse_config
from corpus_platform.kernels.filtering.filters import (
    LANGUAGE,
    Verdict,
    judge_matrix,
    judge_text,
)
from corpus_platform.kernels.filtering.stage import SAMPLES_PER_FILTER, filter_shard
from corpus_platform.kernels.filtering.verdicts import ShardVerdicts, failed_before_language
from tests.kernels.filtering.reference_filters import quality_score
from tests.realtext import real_texts

SEED = 5


def _corpus() -> tuple[list[str | None], list[str], list[str | None]]:
    rng = random.Random(3)
    words = ["the", "of", "and", "data", "model", "with", "to", "be", "have", "river", "stone"]
    texts: list[str | None] = []
    for _ in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 400)))
        if rng.random() < 0.1:
            text += " {{markup}} lorem ipsum"
        if rng.random() < 0.1:
            text = "\n".join([text[:80]] * rng.randint(1, 6))
        texts.append(text)
    texts += [*real_texts(150), None, None, ""]
    sources = [rng.choice(["web", "code", "wiki"]) for _ in texts]
    urls = [
        rng.choice([None, "https://spam-farm.example.net/x", "https://ok.example.org"])
        for _ in texts
    ]
    return texts, sources, urls


def _language(texts: list[str | None], failed: list[bool]) -> list[Verdict | None]:
    rng = random.Random(9)
    return [
        None if text is None or dropped else Verdict(LANGUAGE, rng.random(), 0.65, False, False)
        for text, dropped in zip(texts, failed, strict=True)
    ]


def _verdicts() -> tuple[ShardVerdicts, list[str | None]]:
    texts, sources, urls = _corpus()
    config = parse_config({"filters": {"domains": {"deny": ["spam-farm.example.net"]}}}).filters
    matrix = judge_matrix(texts, sources, urls, config)
    rng = random.Random(4)
    pii = [[Verdict("pii_ssn", 1.0, 0.0, False)] if rng.random() < 0.05 else [] for _ in texts]
    language = _language(texts, failed_before_language(pii, matrix).tolist())
    for i in range(len(language)):  # some pass
        v = language[i]
        if v is not None and v.score >= 0.65:
            language[i] = v._replace(passed=True)
    return ShardVerdicts(pii, matrix, language), texts


def test_reductions_equal_those_of_each_rows_verdict_list() -> None:
    verdicts, _ = _verdicts()
    rows = [verdicts.row(i) for i in range(len(verdicts))]
    first = [next((v for v in row if not v.passed), None) for row in rows]
    assert verdicts.first_failures() == first
    assert any(f is not None and f.name == "domain" for f in first)
    assert any(f is not None and f.name == LANGUAGE for f in first)
    assert any(f is not None and f.name == "pii_ssn" for f in first)
    assert [verdicts.failed_names(i) for i in range(len(rows))] == [
        [v.name for v in row if not v.passed] for row in rows
    ]
    assert verdicts.would_fail() == Counter(v.name for row in rows for v in row if not v.passed)
    assert verdicts.quality_scores() == [quality_score(row) for row in rows]
    assert len(set(verdicts.quality_scores())) > 50  # not a constant


def test_matrix_rows_equal_the_single_row_judge() -> None:
    texts, sources, urls = _corpus()
    config = parse_config({}).filters
    matrix = judge_matrix(texts, sources, urls, config)
    for i in range(0, len(texts), 7):
        assert matrix.verdicts(i) == judge_text(texts[i], config, sources[i], urls[i])
    assert matrix.verdicts(len(texts) - 2) == []  # a row without text has no text filter


def test_review_samples_equal_a_heap_fed_row_by_row(tmp_path: Path) -> None:
    """filter_shard's samples against the original rule: every row offers every verdict to a
    heap of the SAMPLES_PER_FILTER smallest review keys per (filter, passed)."""
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
    pq.write_table(table, tmp_path / "part-00000.parquet")
    config = parse_config({"filters": {"languages": [], "pii": {"ssn": "drop"}}}).filters
    summary = filter_shard(0, tmp_path, tmp_path / "out", config, SEED)
    expected: dict[tuple[str, bool], list[tuple[float, str]]] = {}
    for doc_id, text, source, url in zip(ids, texts, sources, urls, strict=True):
        key = unit_interval(doc_id, SEED, "review")
        for v in judge_text(text, config, source, url):
            heap = expected.setdefault((v.name, v.passed), [])
            heapq.heappush(heap, (-key, doc_id))
            if len(heap) > SAMPLES_PER_FILTER:
                heapq.heappop(heap)
    got = {
        bucket: sorted((entry[0], entry[1]) for entry in heap)
        for bucket, heap in summary.samples.items()
    }
    assert got == {bucket: sorted(heap) for bucket, heap in expected.items()}
    assert summary.kept + sum(summary.removed_by.values()) == len(texts)
    removed = pq.read_table(tmp_path / "out" / "removed" / "part-00000.parquet").to_pylist()
    for row in removed:
        verdicts = judge_text(row["text"], config, row["source"], row["url"])
        assert row["failed_filters"] == [v.name for v in verdicts if not v.passed]
        assert row["reason"] == row["failed_filters"][0]
