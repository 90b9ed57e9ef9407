"""Benchmark datatrove's heuristic quality filters on a JSONL corpus.

Run with the separate benchmark venv (see the setup notes below), not the project's:

    .bench-venv/bin/python bench/datatrove_filters.py INPUT.jsonl OUTPUT.json

INPUT.jsonl holds one {"id": ..., "text": ...} object per line. All documents are
loaded into datatrove ``Document`` objects first; then GopherQualityFilter,
GopherRepetitionFilter and C4QualityFilter (default parameters) are chained through
their ``run()`` generators, exactly as a single-process datatrove pipeline chains
steps: a document dropped by one filter never reaches the next, C4QualityFilter's
line removal is seen by later steps, and datatrove's per-document stats bookkeeping
is included. No output or exclusion files are written. Only the filtering is timed
(time.perf_counter); the one-off lazy construction of the English word tokenizer
(a blank spaCy pipeline, no download) is done before the clock starts.

Setup (offline apart from PyPI):

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install "datatrove==0.10.1" regex spacy

``regex`` is needed by datatrove.utils.text, and ``spacy`` because datatrove 0.10.1
tokenizes English ("eng") with ``spacy.blank("en")`` + sentencizer, which ships with
the spacy wheel; nltk punkt, fasttext and hub models are never touched by these
three filters with their defaults (C4QualityFilter's default split_paragraph=True
splits lines on "\\n" and counts sentences with the same spaCy sentencizer).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

from datatrove.data import Document
from datatrove.pipeline.filters import C4QualityFilter, GopherQualityFilter, GopherRepetitionFilter
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.utils.text import split_into_sentences, split_into_words
from datatrove.utils.typeshelper import Languages


def load_docs(path: Path) -> list[Document]:
    """Read every JSONL line into a Document (id, text)."""
    docs: list[Document] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                docs.append(Document(text=row["text"], id=str(row["id"])))
    return docs


def removal_reasons(step: BaseFilter) -> Counter[str]:
    """Per-reason drop counts from a filter's own datatrove stats."""
    stats = step.stats.stats
    prefix = "dropped_"
    reasons = Counter(
        {k.removeprefix(prefix): int(v.total) for k, v in stats.items() if k.startswith(prefix)}
    )
    unlabelled = int(stats["dropped"].total) - sum(reasons.values()) if "dropped" in stats else 0
    if unlabelled:
        reasons[f"{type(step).__name__}:unlabelled"] += unlabelled
    return reasons


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: datatrove_filters.py INPUT.jsonl OUTPUT.json", file=sys.stderr)
        return 2
    docs = load_docs(Path(argv[1]))
    steps: list[BaseFilter] = [GopherQualityFilter(), GopherRepetitionFilter(), C4QualityFilter()]
    # Warm-up: build the lazily cached English tokenizer outside the timed region.
    split_into_words("Warm up the tokenizer.", Languages.english)
    split_into_sentences("Warm up. The sentencizer.", Languages.english)

    start = time.perf_counter()
    stream: Iterator[Document] = iter(docs)
    for step in steps:
        stream = step.run(stream)
    kept = sum(1 for _ in stream)
    seconds = time.perf_counter() - start

    removed_by: Counter[str] = Counter()
    for step in steps:
        removed_by.update(removal_reasons(step))
    result = {
        "docs": len(docs),
        "seconds": seconds,
        "docs_per_second": len(docs) / seconds if seconds > 0 else None,
        "kept": kept,
        "removed_by": dict(removed_by.most_common()),
        "datatrove_version": version("datatrove"),
        "filters": [type(s).__name__ for s in steps],
        "notes": (
            "No parameter changed: all three filters use datatrove's defaults. language='eng' "
            "maps to a blank spaCy 'en' tokenizer + sentencizer (ships in the spacy wheel, no "
            "download); C4QualityFilter's default split_paragraph=True splits lines on newlines, "
            "so no nltk punkt. Filters chained via BaseFilter.run() generators in one process, "
            "no exclusion writer; tokenizer built before timing."
        ),
    }
    Path(argv[2]).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("docs", "seconds", "docs_per_second", "kept")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
