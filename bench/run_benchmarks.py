"""`make bench`: time every stage on a generated corpus and compare the filters with datatrove.

Run in the benchmark environment (.bench-venv: the project plus datatrove), never in tests:

    .bench-venv/bin/python bench/run_benchmarks.py --docs 100000 --out BENCHMARKS.md

1. Generates ``--docs`` English-like documents of about 1 KB (the sample corpus's writer, with
   authors, timestamps, features and a url) into a scratch project under ``.bench/``.
2. Heuristic filters head to head, one process each, same documents, texts loaded before the
   clock starts: the project's filters (every Gopher quality and repetition rule, C4 rules, URL,
   code, blocklist and domain; PII and language excluded) against datatrove's
   GopherQualityFilter + GopherRepetitionFilter + C4QualityFilter (bench/datatrove_filters.py).
3. Language identification (lingua) throughput on its own.
4. The whole graph through Dagster with ``engine.workers`` processes; each stage's duration
   comes from Dagster's step events; peak memory from getrusage.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import yaml

from corpus_platform.config import parse_config
from corpus_platform.defs.names import STAGES
from corpus_platform.kernels import langid
from corpus_platform.kernels.filters import judge_text
from corpus_platform.runner import run_build
from corpus_platform.sample import _Writer

REPO = Path(__file__).resolve().parents[1]


def machine() -> str:
    """CPU model, cores and memory of this machine."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB RAM, Python {platform.python_version()}"
    )


def generate(project: Path, docs: int, seed: int) -> list[dict]:
    """Write ``docs`` raw rows (10 jsonl files) and return them."""
    w = _Writer(seed)
    rows = []
    for i in range(docs):
        source = ("web", "wiki", "web", "code")[i % 4]
        entity = f"{source}-author-{w.rng.randrange(max(10, docs // 20)):05d}"
        text = w.code() if source == "code" else w.prose(170, 230)
        rows.append(w.row(source, entity, text).record())
    raw = project / "data" / "raw"
    raw.mkdir(parents=True)
    for part in range(10):
        chunk = rows[part::10]
        (raw / f"part-{part:02d}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in chunk), encoding="utf-8"
        )
    return rows


def our_filters(texts: list[tuple[str, str]], config_path: Path) -> dict:
    """Docs/s of the project's heuristic filters over (text, source) pairs, one process."""
    config = parse_config(yaml.safe_load(config_path.read_text())).filters
    start = time.perf_counter()
    kept = sum(
        all(v.passed for v in judge_text(text, config, source, None)) for text, source in texts
    )
    seconds = time.perf_counter() - start
    return {
        "docs": len(texts),
        "seconds": seconds,
        "docs_per_second": len(texts) / seconds,
        "kept": kept,
    }


def datatrove_filters(texts: list[tuple[str, str]], work: Path) -> dict:
    """Docs/s of datatrove's Gopher quality + Gopher repetition + C4 filters, one process."""
    path = work / "texts.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, (t, _) in enumerate(texts)),
        encoding="utf-8",
    )
    out = work / "datatrove.json"
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "datatrove_filters.py"), str(path), str(out)],
        check=True,
    )
    return json.loads(out.read_text())


def lingua_throughput(texts: list[str], config_path: Path) -> dict:
    """Docs/s of batched lingua language identification."""
    config = parse_config(yaml.safe_load(config_path.read_text())).filters
    langid.keep_confidence(texts[:10], config.languages or ("en",), config.language_candidates)
    start = time.perf_counter()
    langid.keep_confidence(texts, config.languages or ("en",), config.language_candidates)
    seconds = time.perf_counter() - start
    return {"docs": len(texts), "seconds": seconds, "docs_per_second": len(texts) / seconds}


def pipeline(project: Path, workers: int) -> dict:
    """Build every stage through Dagster; durations per step and peak memory."""
    config = yaml.safe_load((REPO / "corpus.yaml").read_text())
    config["engine"] = {"kind": "local", "workers": workers}
    config["decontamination"] = {"eval_sets": {}}
    config["split"]["tolerance"] = 0.05
    (project / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    start = time.perf_counter()
    report = run_build(project, instance=dg.DagsterInstance.ephemeral())
    total = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"report": report, "total": total, "rss_self_mb": own, "rss_worker_mb": children}


def render(
    args: argparse.Namespace,
    ours: dict,
    theirs: dict,
    lingua: dict,
    built: dict,
    generated_s: float,
) -> str:
    """BENCHMARKS.md."""
    report = built["report"]
    rows_in = report.materialized.get("raw_documents", {}).get("rows", args.docs)
    rules = len(judge_text("x", parse_config({}).filters))
    speedup = ours["docs_per_second"] / theirs["docs_per_second"]
    command = f".bench-venv/bin/python bench/run_benchmarks.py --docs {args.docs} "
    command += f"--workers {args.workers}"
    verdict = (
        "every stage built, every check passed"
        if report.ok
        else "FAILED: " + "; ".join(report.failures)
    )
    lines = [
        "# Benchmarks",
        "",
        f"Command: `make bench` (= `{command}`), run {datetime.now(UTC):%Y-%m-%d}.",
        f"Machine: {machine()}.",
        f"Corpus: {args.docs:,} generated documents of about 1 KB (English-like prose, a quarter "
        f"code), generated in {generated_s:.1f} s.",
        "",
        "## Heuristic filters against datatrove (one process each, same documents)",
        "",
        "| implementation | filters | docs/s | kept |",
        "|---|---|---:|---:|",
        f"| corpus_platform | {rules} heuristic rules: Gopher quality + repetition, C4, URL, code, "
        f"blocklist, domain | {ours['docs_per_second']:,.0f} | {ours['kept']:,} |",
        f"| datatrove {theirs['datatrove_version']} | GopherQuality + GopherRepetition + C4Quality "
        f"(defaults) | {theirs['docs_per_second']:,.0f} | {theirs['kept']:,} |",
        "",
        f"Speed-up: **{speedup:.1f}x**. The kept counts differ because the project exempts the "
        "code documents from the prose rules (`filters.exempt` in corpus.yaml) and datatrove has "
        "no such setting, so it removes them.",
        "",
        f"datatrove's setup: {theirs.get('notes', '')}",
        "",
        "## Language identification (lingua-language-detector, batched, all cores)",
        "",
        f"{lingua['docs']:,} documents in {lingua['seconds']:.1f} s: "
        f"**{lingua['docs_per_second']:,.0f} docs/s**.",
        "",
        f"## Every stage through Dagster ({args.workers} worker processes)",
        "",
        "| stage | seconds | docs/s (rows in) |",
        "|---|---:|---:|",
    ]
    for stage in STAGES:
        seconds = report.seconds.get(stage)
        lines.append(
            f"| {stage} | {seconds:.1f} | {rows_in / seconds:,.0f} |"
            if seconds
            else f"| {stage} | not built | |"
        )
    checks = sum(v for k, v in report.seconds.items() if k not in STAGES)
    lines += [
        f"| (all checks) | {checks:.1f} | |",
        f"| **total wall time** | {built['total']:.1f} | {rows_in / built['total']:,.0f} |",
        "",
        f"Build result: {verdict}.",
        f"Peak resident memory: {built['rss_self_mb']:,.0f} MB in the driver process, "
        f"{built['rss_worker_mb']:,.0f} MB in the largest child process.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--work", type=Path, default=REPO / ".bench")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    project = args.work / "project"
    start = time.perf_counter()
    rows = generate(project, args.docs, args.seed)
    generated_s = time.perf_counter() - start
    texts = [(r["body"], r["src"]) for r in rows]
    ours = our_filters(texts, REPO / "corpus.yaml")
    theirs = datatrove_filters(texts, args.work)
    lingua = lingua_throughput([t for t, s in texts if s != "code"][:20_000], REPO / "corpus.yaml")
    del rows, texts
    built = pipeline(project, args.workers)
    args.out.write_text(render(args, ours, theirs, lingua, built, generated_s), encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))
    return 0 if built["report"].ok else 1


if __name__ == "__main__":
    sys.exit(main())
