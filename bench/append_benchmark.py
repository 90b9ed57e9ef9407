r"""Append without moving: what an append of new raw files costs against the base build.

    .bench-venv/bin/python bench/append_benchmark.py --docs 100000 --append 10000 \
        --out BENCHMARKS.md

1. Base: the first ``--docs`` documents of a web-like crawl (``bench/webcorpus.py``, seed
   ``--seed``; the generator is a prefix-stable stream, so the first N of a longer crawl are the
   N-document crawl) in ``--files`` raw jsonl files of consecutive documents (every raw file is
   a batch), configured as ``run_benchmarks.py`` does (engine local with ``--workers``,
   ``num_shards`` for at most ``--shard-docs`` documents per shard at the base size, kept for
   every build: a changed ``num_shards`` rebuilds everything). Built in a fresh process through
   Dagster, stages raw_documents to split_documents only; seconds per stage from Dagster's step
   events, the load average (``os.getloadavg``) at the start and end of every build.
2. Append A: the next ``--append`` documents of the same crawl (its copies are exact or edited
   copies of recent documents, some of them published) in one new raw file; the same build.
3. Append B, on a copy of the base project made before append A: ``--append`` documents that
   are only copies of published documents (a quarter byte-identical, the rest with single words
   replaced at least 6 words apart, aiming at a word 5-gram Jaccard drawn from 0.5 to 1.0; the
   Jaccard is measured) in one new raw file; the same build.
4. Dedup quality: a third project with every raw file, built from scratch up to
   deduplicated_documents. The clusters of each (``deduplicated_documents/clusters``) are
   scored as ``dedup_benchmark.py`` scores them (pairs inside the clusters against the
   clusters of the generator's exact-Jaccard truth at ``dedup.threshold``), on the documents
   the filters kept (a filtered document cannot be clustered by either build).

Writes the "bench-append" section of ``--out`` between ``<!-- bench-append:begin -->`` and
``<!-- bench-append:end -->`` (appended when absent). The projects live under ``--work`` and are
deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import dagster as dg
import numpy as np
import yaml
from dedup_benchmark import scores
from run_benchmarks import TRAINING_SHARD_BYTES, machine, shards_for, write_eval_set
from webcorpus import SHINGLE, CorpusSpec, GroundTruth, WebCorpus, jaccard, shingle_set, vocabulary

from corpus_platform.base.checks import CheckStatus
from corpus_platform.base.names import STAGES
from corpus_platform.base.shards import read_shard
from corpus_platform.engine import shutdown_pools
from corpus_platform.runner import run_build

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench-append:begin -->", "<!-- bench-append:end -->"
BUILT = list(STAGES[:4])  # raw_documents .. split_documents
EXACT_SHARE = 0.25  # of append B's copies: byte-identical
HIGH_LOAD = 1.0  # 1-minute load average at a build's start taken as other work running
BUILDS = ("base", "append A", "append B")
Pair = tuple[str, str]


def raw_name(index: int) -> str:
    """The raw file (batch) ``index`` of the crawl: ``crawl-000.jsonl``, ..."""
    return f"crawl-{index:03d}.jsonl"


def edit_copy(text: str, target: float, rng: np.random.Generator) -> str:
    r"""A copy of ``text`` with single words replaced at least 6 words apart, as many as make
    its word 5-gram Jaccard with ``text`` about ``target`` (each replacement removes 5 of the
    5-grams); punctuation, capitals and whitespace stay."""
    parts = re.split(r"(\s+)", text)  # words at even indices
    n = len(parts[0::2])
    count = round((n - SHINGLE + 1) * (1 - target) / (SHINGLE * (1 + target)))
    count = min(max(1, count), max(1, n // 6))
    slots = rng.choice(max(1, n // 6), size=count, replace=False) * 6 + int(rng.integers(6))
    words = vocabulary(CorpusSpec().vocabulary)
    for slot, rank in zip(slots.tolist(), words.ranks(rng.random(count)).tolist(), strict=True):
        if slot >= n:
            continue
        old = parts[2 * slot]
        new = words.words[rank]
        new = words.words[(rank + 1) % words.size] if new == old.lower() else new
        parts[2 * slot] = re.sub(
            r"\w+", new.capitalize() if old[:1].isupper() else new, old, count=1
        )
    return "".join(parts)


def write_crawl(work: Path, docs: int, append: int, files: int, seed: int) -> dict:
    """Stream ``docs + append`` documents with their truth: the first ``docs`` into ``files``
    raw files under ``work/base``, the rest into ``work/append-a``; then ``append`` copies of
    random base documents into ``work/append-b``. Returns the truth and what was written."""
    for folder in ("base", "append-a", "append-b"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 8])
    chosen = rng.choice(docs, size=append)  # parents of append B (a page can be copied twice)
    wanted = set(chosen.tolist())
    parents: dict[int, dict] = {}
    per_file = -(-docs // files)
    corpus = WebCorpus(seed)
    handles = [(work / "base" / raw_name(i)).open("w", encoding="utf-8") for i in range(files)]
    handles.append((work / "append-a" / raw_name(files)).open("w", encoding="utf-8"))
    text_bytes = 0
    try:
        for index, doc in enumerate(corpus.documents(docs + append)):
            record = doc.record()
            text_bytes += len(doc.text.encode("utf-8")) if index < docs else 0
            handles[index // per_file if index < docs else files].write(
                json.dumps(record, ensure_ascii=False) + "\n"
            )
            if index in wanted:
                parents[index] = record
    finally:
        for handle in handles:
            handle.close()
    similarity = []
    with (work / "append-b" / raw_name(files)).open("w", encoding="utf-8") as out:
        for i, parent in enumerate(chosen.tolist()):
            doc_id = f"doc-{docs + i:08d}"
            copy = {**parents[parent], "id": doc_id, "author": f"mirror-{i:08d}"}
            copy["url"] = f"https://mirror-{i:08d}.example.org/{copy['src']}/{doc_id}"
            if rng.random() >= EXACT_SHARE:
                copy["body"] = edit_copy(copy["body"], 0.5 + 0.5 * rng.random(), rng)
                old, new = shingle_set(parents[parent]["body"]), shingle_set(copy["body"])
                similarity.append(jaccard(old, new))
            out.write(json.dumps(copy, ensure_ascii=False) + "\n")
    return {
        "truth": corpus.truth,
        "megabytes": text_bytes / 1e6,
        "edited": similarity,
        "exact": append - len(similarity),
    }


def write_project(project: Path, raw: list[Path], docs: int, args: argparse.Namespace) -> int:
    """A project whose raw folder holds copies of ``raw``, with the repository's corpus.yaml
    adjusted as run_benchmarks.py does for ``docs`` documents; returns ``num_shards``."""
    shutil.rmtree(project, ignore_errors=True)
    (project / "data" / "raw").mkdir(parents=True)
    for path in raw:
        shutil.copy2(path, project / "data" / "raw" / path.name)
    write_eval_set(project / "data" / "eval" / "benchmark.jsonl", args.seed)
    config = yaml.safe_load((REPO / "corpus.yaml").read_text())
    config["engine"] = {**config.get("engine", {}), "kind": "local", "workers": args.workers}
    config["num_shards"] = shards_for(docs, config["num_shards"], args.shard_docs)
    config["shards"] = {**config.get("shards", {}), "max_bytes": TRAINING_SHARD_BYTES}
    (project / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return config["num_shards"]


def _build_child(project: Path, assets: list[str], out: Path) -> None:
    """Runs in a fresh process: build ``assets`` of ``project``; write seconds and counts."""
    start = time.perf_counter()
    report = run_build(project, instance=dg.DagsterInstance.ephemeral(), assets=assets)
    total = time.perf_counter() - start
    shutdown_pools()  # a multiprocessing child's exit would wait for its pool's workers
    keys = ("rows_in", "rows", "batches_read", "batches_filtered", "batches_kept")
    result = {
        "ok": report.ok,
        "failures": report.failures
        + [f"{c.asset}.{c.name}" for c in report.checks if c.status is CheckStatus.FAILED],
        "total": total,
        "seconds": report.seconds,
        "counts": {s: {k: m[k] for k in keys if k in m} for s, m in report.materialized.items()},
    }
    out.write_text(json.dumps(result), encoding="utf-8")


def timed_build(project: Path, assets: list[str]) -> dict:
    """Build ``assets`` of ``project`` in a fresh process; its result with the load averages
    at its start and end."""
    out = project.parent / f"{project.name}-build.json"
    out.unlink(missing_ok=True)
    load_start = os.getloadavg()
    child = multiprocessing.get_context("spawn").Process(
        target=_build_child, args=(project, assets, out)
    )
    child.start()
    child.join()
    if not out.is_file():
        raise RuntimeError(f"the build of {project} died (exit code {child.exitcode})")
    result = json.loads(out.read_text(encoding="utf-8"))
    print(f"{project.name}: {result['total']:.1f} s, ok {result['ok']}", flush=True)
    return {**result, "load": [list(load_start), list(os.getloadavg())]}


def dedup_quality(project: Path, shards: int, truth: GroundTruth, threshold: float) -> dict:
    """Precision, recall and F1 of the project's published clusters against the truth's
    clusters at ``threshold``, both on the documents the filters kept."""
    stage = project / "data"
    kept: set[str] = set()
    for s in range(shards):
        kept.update(read_shard(stage / "filtered_documents", s, ["doc_id"])["doc_id"].to_pylist())
    members: dict[str, list[str]] = defaultdict(list)
    for s in range(shards):
        table = read_shard(stage / "deduplicated_documents" / "clusters", s)
        for cluster, doc in zip(
            table["cluster_id"].to_pylist(), table["doc_id"].to_pylist(), strict=True
        ):
            members[cluster].append(doc)
    found = {p for group in members.values() for p in combinations(sorted(group), 2)}
    on_kept = GroundTruth([p for p in truth.pairs if p[0] in kept and p[1] in kept])
    expected = on_kept.cluster_pairs(threshold)
    precision, recall, f1 = scores(found, expected)
    return {"precision": precision, "recall": recall, "f1": f1, "kept": sorted(kept)}


def ratio(part: float | None, whole: float | None) -> str:
    """``part / whole`` as a percentage, or a dash when either is missing."""
    return f"{part / whole:.0%}" if part and whole else "-"


def stage_rows(builds: dict[str, dict]) -> list[str]:
    """The per-stage seconds table: base, append A and B with their share of the base."""
    lines = [
        "| stage | base s | append A s | A / base | append B s | B / base |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    sums = {name: sum(b["seconds"].get(s, 0.0) for s in BUILT) for name, b in builds.items()}
    rows = [(s, {n: b["seconds"].get(s) for n, b in builds.items()}) for s in BUILT]
    rows.append(("**the four stages, summed**", sums))
    process = {n: b["total"] for n, b in builds.items()}
    rows.append(("whole build process (Dagster start included)", process))
    for label, took in rows:
        a, b = took.get("append A"), took.get("append B")
        lines.append(
            f"| {label} | {took['base']:,.1f} | {a:,.1f} | {ratio(a, took['base'])} | "
            f"{b:,.1f} | {ratio(b, took['base'])} |"
        )
    return lines


def number(value: int | None) -> str:
    """A count with thousands separators, or ``?`` when the build did not record it."""
    return "?" if value is None else f"{value:,}"


def batch_rows(builds: dict[str, dict]) -> list[str]:
    """Batches (raw files) read or filtered against kept as published, and rows in and out."""
    lines = ["| stage | what | " + " | ".join(BUILDS) + " |", "|---|---|---:|---:|---:|"]
    spec = [
        ("raw_documents", "batches read / kept as published", ("batches_read", "batches_kept")),
        ("filtered_documents", "batches filtered / kept", ("batches_filtered", "batches_kept")),
        ("filtered_documents", "rows in / out", ("rows_in", "rows")),
        ("deduplicated_documents", "rows in / out (every row)", ("rows_in", "rows")),
        ("split_documents", "rows out (every row)", ("rows",)),
    ]
    for stage, what, keys in spec:
        cells = [
            " / ".join(number(builds[n]["counts"].get(stage, {}).get(k)) for k in keys)
            for n in BUILDS
        ]
        lines.append(f"| {stage} | {what} | " + " | ".join(cells) + " |")
    return lines


def render(run: dict) -> str:
    """The "bench-append" section from a run's plain results (no build, no file access)."""
    builds, quality, args = run["builds"], run["quality"], run["args"]
    sums = {n: sum(b["seconds"].get(s, 0.0) for s in BUILT) for n, b in builds.items()}
    share = sums["append A"] / sums["base"]
    every = {**builds, "scratch": run["scratch"]}
    loads = [f"{n}: {b['load'][0][0]:.2f} -> {b['load'][1][0]:.2f}" for n, b in every.items()]
    high = [n for n, b in every.items() if b["load"][0][0] >= HIGH_LOAD]
    edited = run["edited"]
    failures = [f"{n}: {f}" for n, b in builds.items() for f in b["failures"]]
    gap = quality["append"]["f1"] - quality["scratch"]["f1"]
    verdict = (
        "gives the same F1 as a build from scratch."
        if abs(gap) < 5e-5
        else f"differs from a build from scratch by {gap:+.4f} F1."
    )
    command = (
        f".bench-venv/bin/python bench/append_benchmark.py --docs {args['docs']} "
        f"--append {args['append']} --out {args['out']}"
    )
    return "\n".join(
        [
            BEGIN,
            "## Append without moving: an append against the base build",
            "",
            f"Command: `{command}` (run by `make bench`), {run['date']}.",
            f"Machine: {run['machine']}.",
            f"Crawl: `bench/webcorpus.py`, seed {args['seed']}; base {args['docs']:,} documents "
            f"({run['megabytes']:,.0f} MB of text) in {args['files']} raw jsonl files of "
            f"consecutive documents (each file a batch); corpus.yaml as in the sections above "
            f"(engine local, {args['workers']} workers, {run['shards']} shards, sized for the "
            "base and kept). Every build runs raw_documents to split_documents in a fresh "
            "process on an ephemeral Dagster instance. Append A: the next "
            f"{args['append']:,} documents of the crawl in one new file. Append B (on a copy of "
            f"the base project): {args['append']:,} copies of published documents in one new "
            f"file, {run['exact']:,} byte-identical and {len(edited):,} with words replaced "
            f"(measured word 5-gram Jaccard {min(edited, default=0):.2f} to "
            f"{max(edited, default=0):.2f}, mean {np.mean(edited or [0]):.2f}; "
            f"{sum(j >= run['threshold'] for j in edited):,} at or above the threshold).",
            "",
            *stage_rows(builds),
            "",
            *batch_rows(builds),
            "",
            f"Dedup quality (threshold {run['threshold']}, pairs inside clusters against the "
            "truth's clusters, on the documents the filters kept; as `dedup_benchmark.py`): "
            f"base + append A F1 **{quality['append']['f1']:.4f}** (precision "
            f"{quality['append']['precision']:.4f}, recall {quality['append']['recall']:.4f}); "
            f"one build of all {args['docs'] + args['append']:,} from scratch (to "
            f"deduplicated_documents, {run['scratch']['total']:,.1f} s) F1 "
            f"**{quality['scratch']['f1']:.4f}** (precision "
            f"{quality['scratch']['precision']:.4f}, recall "
            f"{quality['scratch']['recall']:.4f}); filters kept the same documents in both: "
            f"{'yes' if quality['same_kept'] else 'NO'}.",
            "",
            "Index bytes per document: not persisted yet (dedup recomputes every signature on "
            "every build; raw and filtered reuse the published per-batch files, dedup and split "
            "process every row).",
            "",
            "Load average (1 minute) at the start -> end of each build: "
            + "; ".join(loads)
            + "."
            + (
                f" Other work was running on this {os.cpu_count()}-core machine (load at or "
                f"above {HIGH_LOAD} at the start of: {', '.join(high)}): these seconds are "
                "pessimistic."
                if high
                else ""
            ),
            "",
            f"Result: append A took **{share:.0%}** of the base build's time for the same four "
            f"stages (goal: at most 20%: {'met' if share <= 0.2 else 'not met'}); append B "
            f"{sums['append B'] / sums['base']:.0%}. Dedup after the append {verdict}"
            + (" Failures: " + "; ".join(failures) + "." if failures else ""),
            END,
        ]
    )


def put_section(current: str, text: str) -> str:
    """``current`` with its bench-append section replaced by ``text``, or ``text`` appended
    after everything when it has none; nothing else changes."""
    if BEGIN in current and END in current:
        start, stop = current.index(BEGIN), current.index(END) + len(END)
        return current[:start] + text + current[stop:]
    return (current.rstrip("\n") + "\n\n" if current.strip() else "") + text + "\n"


def main() -> int:
    """Write the crawl, build base, append A, append B and the scratch build, write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents of the base")
    parser.add_argument("--append", type=int, default=10_000, help="documents of each append")
    parser.add_argument("--files", type=int, default=10, help="raw files of the base")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3, help="corpus seed")
    parser.add_argument("--shard-docs", type=int, default=12_500)
    parser.add_argument("--work", type=Path, default=Path("/work/tmp/append-bench"))
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--keep", action="store_true", help="keep the projects")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    start = time.perf_counter()
    crawl = write_crawl(args.work / "raw", args.docs, args.append, args.files, args.seed)
    print(f"crawl written in {time.perf_counter() - start:.0f} s", flush=True)
    base_raw = sorted((args.work / "raw" / "base").iterdir())
    file_a, file_b = (
        args.work / "raw" / f / raw_name(args.files) for f in ("append-a", "append-b")
    )
    base, copy, scratch = (args.work / n for n in ("base", "append-b-project", "scratch"))
    shards = write_project(base, base_raw, args.docs, args)
    builds = {"base": timed_build(base, BUILT)}
    shutil.copytree(base, copy, symlinks=True)  # before append A touches the base
    shutil.copy2(file_a, base / "data" / "raw" / file_a.name)
    builds["append A"] = timed_build(base, BUILT)
    shutil.copy2(file_b, copy / "data" / "raw" / file_b.name)
    builds["append B"] = timed_build(copy, BUILT)
    write_project(scratch, [*base_raw, file_a], args.docs, args)
    scratch_build = timed_build(scratch, BUILT[:3])
    threshold = yaml.safe_load((base / "corpus.yaml").read_text())["dedup"]["threshold"]
    quality = {
        name: dedup_quality(project, shards, crawl["truth"], threshold)
        for name, project in (("append", base), ("scratch", scratch))
    }
    quality["same_kept"] = quality["append"].pop("kept") == quality["scratch"].pop("kept")
    run = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "machine": machine(),
        "megabytes": crawl["megabytes"],
        "exact": crawl["exact"],
        "edited": crawl["edited"],
        "shards": shards,
        "threshold": threshold,
        "builds": builds,
        "scratch": scratch_build,
        "quality": quality,
    }
    (args.work / "results.json").write_text(json.dumps(run, indent=1), encoding="utf-8")
    text = render(run)
    current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    args.out.write_text(put_section(current, text), encoding="utf-8")
    print(text)
    if not args.keep:
        for project in (base, copy, scratch):
            shutil.rmtree(project, ignore_errors=True)
    return 0 if all(b["ok"] for b in [*builds.values(), scratch_build]) else 1


if __name__ == "__main__":
    sys.exit(main())
