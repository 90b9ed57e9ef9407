"""What every peer dedup script shares: its command line, the corpus it reads, the pairs it writes.

Standard library only: the peers run in their own benchmark environments, without the project.
The output contract that ``bench/dedup_benchmark.py`` reads: a JSONL file whose first line is
``{"seconds", "docs", "tool", "notes", "stages"}`` (and optionally ``"workers"``, the processes
or threads the tool actually used, when not ``--workers``), then one ``{"a", "b"}`` line
(``a < b``) per pair of documents the tool put in one duplicate cluster (or matched).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def parser(description: str) -> argparse.ArgumentParser:
    """The options every peer takes; a peer adds its own before parsing."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--input", type=Path, required=True, help="JSONL corpus: id, text per line")
    p.add_argument("--out", type=Path, required=True, help="JSONL: summary line, then pairs")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--ngram", type=int, default=5, help="word n-gram size")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--work", type=Path, required=True, help="scratch folder (wiped)")
    p.add_argument("--workers", type=int, default=2, help="parallel tasks")
    return p


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Ids and texts of the JSONL corpus, in file order; duplicate ids are an error."""
    ids: list[str] = []
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                ids.append(str(row["id"]))
                texts.append(row["text"])
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate ids in input; give every document its own id")
    return ids, texts


def write_result(
    out: Path,
    summary: dict[str, object],
    pairs: set[tuple[str, str]],
) -> None:
    """The summary line, then the sorted pairs; a one-line digest on stderr."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(summary) + "\n")
        for a, b in sorted(pairs):
            fh.write(json.dumps({"a": a, "b": b}) + "\n")
    seconds = float(summary["seconds"])  # type: ignore[arg-type]
    docs = int(summary["docs"])  # type: ignore[call-overload]
    print(
        f"{summary['tool']}: {docs} docs, {len(pairs)} pairs, {seconds:.2f} s "
        f"({docs / seconds:,.0f} docs/s) {summary['stages']}",
        file=sys.stderr,
    )
