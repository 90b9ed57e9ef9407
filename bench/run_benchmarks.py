r"""`make bench`: the whole graph at several corpus sizes, and the filters against datatrove.

Run in the benchmark environment (.bench-venv: the project plus datatrove), never in tests:

    .bench-venv/bin/python bench/run_benchmarks.py --docs 10000,100000 --workers 2
    .bench-venv/bin/python bench/run_benchmarks.py --docs 1000000 --workers 2 --large

1. For each size, streams that many web-like documents (``bench/webcorpus.py``: 200 to 2,000
   words, about 7.5 KB; 5% exact copies, 15% edited and 4% reformatted near-duplicates) into
   ``data/raw`` of a scratch project under ``--work``, with an evaluation set for the
   decontamination stage in ``data/eval/benchmark.jsonl`` (fresh passages, plus a few copied
   from the corpus), and the repository's corpus.yaml with ``engine.workers: --workers``. Then
   builds every stage through Dagster in a fresh process (an ephemeral instance). Each step's
   seconds come from Dagster's step events, the seconds spent pinning each stage with DVC from
   its ``pin_seconds`` metadata (DVC's add and push of the candidate, beside its checks) and
   ``pin_wait_seconds`` (what the stage waited for them after its checks); rates are per
   document and per MB of text (UTF-8 bytes of every document's text); peak resident memory
   is each process's own VmHWM: the Dagster process, and every engine worker just before its
   pool is shut down. The project is deleted
   afterwards (a million documents take gigabytes).
2. Heuristic filters head to head on the first ``--filter-docs`` documents, one process each,
   texts loaded before the clock starts: the project's batched filters (``judge_texts``: every
   Gopher quality and repetition rule, C4 rules, URL, code, blocklist and domain; PII and
   language are separate) against datatrove's GopherQualityFilter + GopherRepetitionFilter +
   C4QualityFilter.
3. Language identification (lingua) throughput on its own, on the same documents.

Output: the "bench" section of ``--out`` (BENCHMARKS.md), between ``<!-- bench:begin -->`` and
``<!-- bench:end -->``; the sections other scripts own (dedup, large) are kept. ``--large``
runs only step 1 and writes the "large" section instead.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import this_checkout  # noqa: F401  (first: this checkout's corpus_platform)
import yaml
from webcorpus import CorpusFiles, WebCorpus, words_of, write_corpus

from corpus_platform import kernel_cache
from corpus_platform.base.names import STAGES
from corpus_platform.config import parse_config
from corpus_platform.engine import shutdown_pools
from corpus_platform.kernels.filtering import langid
from corpus_platform.kernels.filtering.filters import judge_texts
from corpus_platform.runner import run_build

REPO = Path(__file__).resolve().parents[1]
EVAL_FRESH, EVAL_COPIED, EVAL_WORDS = 500, 20, 40  # evaluation passages
TRAINING_SHARD_BYTES = 256 * 2**20  # shards.max_bytes: the platform's default
SECTION_RE = re.compile(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->", re.S)


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


def peak_mb(pid: int | str = "self") -> float:
    """A process's own peak resident set (VmHWM), in MB; 0.0 if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_times() -> tuple[int, int]:
    """(idle, all) clock ticks of every core since boot, from /proc/stat (idle counts iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)


def idle_share(start: tuple[int, int], end: tuple[int, int]) -> float:
    """The share of core time that was idle between two :func:`cpu_times` readings (machine
    wide: the benchmark runs on a quiet machine)."""
    ticks = end[1] - start[1]
    return (end[0] - start[0]) / ticks if ticks else 0.0


def children(pid: int | str = "self") -> list[int]:
    """Process ids of a process's live children."""
    pids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return sorted(pids)


def _cmdline(pid: int) -> bytes:
    """A process's command line as /proc holds it (empty once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def is_dvc_helper(pid: int) -> bool:
    """Whether a child is the DVC helper (corpus_platform/store/dvc_process.py), not a worker."""
    return b"corpus_platform.store.dvc_process" in _cmdline(pid)


def is_fork_server(pid: int) -> bool:
    """Whether a child is the local engine's fork server (its workers are its children)."""
    return b"multiprocessing.forkserver" in _cmdline(pid)


def is_resource_tracker(pid: int) -> bool:
    """Whether a child is ``multiprocessing``'s resource tracker (the fork server starts one)."""
    return b"multiprocessing.resource_tracker" in _cmdline(pid)


def worker_processes() -> tuple[list[int], list[int], list[int]]:
    """(DVC helpers, fork servers, engine workers) among this process's children and the fork
    servers' children: the local engine forks its workers from a fork server (which comes
    with ``multiprocessing``'s resource tracker, neither a server nor a worker)."""
    mine = [pid for pid in children() if not is_resource_tracker(pid)]
    helpers = [pid for pid in mine if is_dvc_helper(pid)]
    servers = [pid for pid in mine if is_fork_server(pid)]
    workers = [pid for pid in mine if pid not in helpers and pid not in servers]
    workers += [pid for server in servers for pid in children(server)]
    return helpers, servers, workers


def our_filters(texts: list[str], sources: list[str], urls: list[str], config_path: Path) -> dict:
    """Docs/s of the project's heuristic filters, batched as the filter stage runs them."""
    config = parse_config(yaml.safe_load(config_path.read_text())).filters
    start = time.perf_counter()
    verdicts = judge_texts(texts, sources, urls, config)
    seconds = time.perf_counter() - start
    kept = sum(all(v.passed for v in row) for row in verdicts)
    return {
        "docs": len(texts),
        "rules": len(judge_texts(["x"], [""], [None], parse_config({}).filters)[0]),
        "seconds": seconds,
        "docs_per_second": len(texts) / seconds,
        "kept": kept,
    }


def datatrove_filters(texts: list[str], work: Path) -> dict:
    """Docs/s of datatrove's Gopher quality + Gopher repetition + C4 filters, one process."""
    path = work / "texts.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)),
        encoding="utf-8",
    )
    out = work / "datatrove.json"
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "datatrove_filters.py"), str(path), str(out)],
        check=True,
    )
    return json.loads(out.read_text())


def lingua_throughput(texts: list[str], config_path: Path) -> dict:
    """Docs/s of batched lingua language identification, and the share it keeps."""
    config = parse_config(yaml.safe_load(config_path.read_text())).filters
    languages = config.languages or ("en",)
    langid.keep_confidence(texts[:10], languages, config.language_candidates, "lingua")
    start = time.perf_counter()
    confidence = langid.keep_confidence(texts, languages, config.language_candidates, "lingua")
    seconds = time.perf_counter() - start
    kept = sum(c >= config.min_language_confidence for c in confidence)
    return {
        "docs": len(texts),
        "seconds": seconds,
        "docs_per_second": len(texts) / seconds,
        "kept": kept,
    }


def write_eval_set(path: Path, seed: int) -> None:
    """Evaluation passages of ``EVAL_WORDS`` words: ``EVAL_FRESH`` from another seed's
    documents and ``EVAL_COPIED`` from the benchmark corpus's first documents (contamination
    for the decontamination stage to find)."""
    passages = []
    for corpus_seed, count in ((seed + 1_000, EVAL_FRESH), (seed, EVAL_COPIED)):
        for doc in WebCorpus(corpus_seed, track_truth=False).documents(count):
            passages.append(" ".join(words_of(doc.text)[100 : 100 + EVAL_WORDS]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"id": f"eval-{i:04d}", "text": p}) + "\n" for i, p in enumerate(passages)
        ),
        encoding="utf-8",
    )


class StagePeaks:
    """A stand-in for stdout that reads ``corpus run``'s stage lines: the peak resident memory
    of this (the Dagster) process is reset when a stage starts and read when it ends, and the
    machine's idle core share is taken between the two."""

    def __init__(self) -> None:
        self.peaks: dict[str, float] = {}
        self.idle: dict[str, float] = {}
        self.started: dict[str, tuple[int, int]] = {}

    def write(self, text: str) -> int:
        for line in text.splitlines():
            words = line.split()
            if len(words) >= 2 and words[1] == "started":
                Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux >= 4.0)
                self.started[words[0]] = cpu_times()
            elif len(words) >= 2 and words[1] in ("built", "FAILED"):
                self.peaks[words[0]] = peak_mb()
                if words[0] in self.started:
                    self.idle[words[0]] = idle_share(self.started[words[0]], cpu_times())
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""


def _build_child(project: Path, out: Path) -> None:
    """Runs in a fresh process: build the project; write timings, counts and peaks (of the
    whole run and of each stage)."""
    start, cpu_start = time.perf_counter(), cpu_times()
    stages = StagePeaks()
    sys.stdout = stages  # the stage lines of run_build(progress=True)
    report = run_build(project, instance=dg.DagsterInstance.ephemeral(), progress=True)
    sys.stdout = sys.__stdout__
    total, idle = time.perf_counter() - start, idle_share(cpu_start, cpu_times())
    helpers, servers, worker_pids = worker_processes()
    workers = [peak_mb(pid) for pid in worker_pids]
    dvc_mb = max([peak_mb(pid) for pid in helpers], default=0.0)
    server_mb = max([peak_mb(pid) for pid in servers], default=0.0)
    shutdown_pools()  # a multiprocessing child's exit would wait for its pool's workers
    result = {
        "ok": report.ok,
        "failures": report.failures
        + [f"{c.asset}.{c.name}" for c in report.checks if not c.passed],
        "total": total,
        "idle": idle,
        "stage_idle": stages.idle,
        "seconds": report.seconds,
        "pins": {k: v.get("pin_seconds", 0.0) for k, v in report.materialized.items()},
        "pin_waits": {k: v.get("pin_wait_seconds") for k, v in report.materialized.items()},
        "checks": {k: v.get("check_seconds", {}) for k, v in report.materialized.items()},
        "rows": {k: v.get("rows") for k, v in report.materialized.items()},
        "driver_mb": max([peak_mb(), *stages.peaks.values()]),
        "stage_mb": stages.peaks,
        "worker_mb": sorted((w for w in workers if w), reverse=True),
        "dvc_helper_mb": dvc_mb,
        "fork_server_mb": server_mb,
    }
    out.write_text(json.dumps(result), encoding="utf-8")


def shards_for(docs: int, configured: int, shard_docs: int) -> int:
    """The configured shard count, raised so that no shard holds more than ``shard_docs``
    documents: a shard is what one task holds in memory, so its size must not grow with the
    corpus (8 shards at 100,000 documents, 80 at 1,000,000)."""
    return max(configured, -(-docs // shard_docs))


def write_project(
    project: Path,
    docs: int,
    workers: int,
    seed: int,
    language: bool,
    engine: str,
    shard_docs: int = 12_500,
    gzip_files: bool = False,
    backend: str | None = None,
) -> tuple[CorpusFiles, dict]:
    """A fresh project of ``docs`` web-like documents and an evaluation set, configured for
    ``engine`` (``local`` or ``dask-local``) with shards of at most ``shard_docs`` documents;
    ``language`` False turns language identification off (``filters.languages: []``);
    ``backend`` sets ``filters.language_backend`` (the configuration's default when None).
    Returns what the corpus writer wrote and the configuration."""
    shutil.rmtree(project, ignore_errors=True)
    written = write_corpus(project / "data" / "raw", docs, seed, gzip_files=gzip_files)
    write_eval_set(project / "data" / "eval" / "benchmark.jsonl", seed)
    config = yaml.safe_load((REPO / "corpus.yaml").read_text())
    config["engine"] = {**config.get("engine", {}), "kind": engine, "workers": workers}
    config["num_shards"] = shards_for(docs, config["num_shards"], shard_docs)
    # training shards of the platform's default size, not the sample's 1 MB (6,500 tars at 1M)
    config["shards"] = {**config.get("shards", {}), "max_bytes": TRAINING_SHARD_BYTES}
    if not language:
        config["filters"]["languages"] = []
    if backend is not None:
        config["filters"]["language_backend"] = backend
    (project / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return written, config


def build(
    work: Path,
    docs: int,
    workers: int,
    seed: int,
    keep: bool,
    language: bool,
    engine: str,
    shard_docs: int = 12_500,
    gzip_files: bool = False,
    backend: str | None = None,
) -> dict:
    """Write a project of ``docs`` documents (:func:`write_project`) and build it in a fresh
    process."""
    project = work / f"project-{docs}"
    written, config = write_project(
        project, docs, workers, seed, language, engine, shard_docs, gzip_files, backend
    )
    out = work / f"build-{docs}.json"
    out.unlink(missing_ok=True)
    print(f"build: {docs:,} documents written in {written.seconds:.0f} s", flush=True)
    child = multiprocessing.get_context("spawn").Process(target=_build_child, args=(project, out))
    child.start()
    child.join()
    if not out.is_file():
        raise RuntimeError(f"the build of {project} died (exit code {child.exitcode})")
    result = json.loads(out.read_text(encoding="utf-8"))
    if not keep:
        shutil.rmtree(project, ignore_errors=True)
    return {
        **result,
        "docs": docs,
        "megabytes": written.text_bytes / 1e6,
        "generated": written.seconds,
        "shards": config["num_shards"],
    }


def stage_table(built: dict) -> list[str]:
    """Per-step seconds, documents/s, MB/s, the share spent pinning, and peak memory."""
    docs, megabytes, seconds = built["docs"], built["megabytes"], built["seconds"]
    lines = [
        f"### {docs:,} documents ({megabytes:,.0f} MB of text, {built.get('shards', '?')} shards)",
        "",
        "| step (stage and its checks) | seconds | docs/s | MB/s | rows out | "
        "pinning (DVC, beside the checks; then waited) | "
        "checks (each check's seconds, summed) | idle cores | Dagster process peak MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    audits, peaks = built.get("checks", {}), built.get("stage_mb", {})
    idle = built.get("stage_idle", {})
    for stage in STAGES:
        took = seconds.get(stage)
        if not took:
            lines.append(f"| {stage} | not built | | | | | | | |")
            continue
        pin = built["pins"].get(stage) or 0.0
        wait = built.get("pin_waits", {}).get(stage)
        pinning = f"{pin:.1f} s" + ("" if wait is None else f"; {wait:.1f} s ({wait / took:.0%})")
        rows = built["rows"].get(stage)
        audit = sum(audits.get(stage, {}).values())
        lines.append(
            f"| {stage} | {took:,.1f} | {docs / took:,.0f} | {megabytes / took:,.2f} | "
            f"{rows if rows is None else f'{rows:,}'} | {pinning} | "
            f"{audit:.1f} s ({audit / took:.0%}) | {_share(idle.get(stage))} | "
            f"{peaks.get(stage, 0.0):,.0f} |"
        )
    per_check = [(f"{s}.{c}", t) for s, found in audits.items() for c, t in found.items()]
    for check, took in sorted(per_check, key=lambda kv: -kv[1]):
        if took >= 0.5:
            lines.append(f"| check {check} | ({took:,.1f}) | | | | | | | |")
    checks = sum(t for _, t in per_check)
    total = built["total"]
    verdict = (
        "every stage built, every applicable check passed"
        if built["ok"]
        else ("FAILED: " + "; ".join(built["failures"]))
    )
    workers = ", ".join(f"{mb:,.0f}" for mb in built["worker_mb"]) or "none alive"
    lines += [
        f"| (all checks, inside their stages, summed) | ({checks:,.1f}) | | | | | | | |",
        f"| **whole graph, wall time** | **{total:,.1f}** | **{docs / total:,.0f}** | "
        f"**{megabytes / total:,.2f}** | | | | **{_share(built.get('idle'))}** | |",
        "",
        f"Result: {verdict}. Per document: {total / docs * 1e6:,.0f} µs; per MB of text: "
        f"{total / megabytes:,.2f} s. Peak resident memory (VmHWM): {built['driver_mb']:,.0f} MB "
        f"in the Dagster process; engine workers: {workers} MB"
        + (f"; DVC helper: {built['dvc_helper_mb']:,.0f} MB" if built.get("dvc_helper_mb") else "")
        + (
            f"; the engine's fork server: {built['fork_server_mb']:,.0f} MB (a worker's peak "
            "counts the pages it still shares with it)"
            if built.get("fork_server_mb")
            else ""
        )
        + ". Corpus written in "
        f"{built['generated']:,.0f} s (not counted). A stage runs as many checks at once as "
        "the engine has workers, so its checks' seconds can add up to more than their share of "
        "its wall time. Idle cores: the share of the machine's core time that was idle "
        "(/proc/stat, idle and I/O wait) from the step's start to its end, and over the whole "
        "build.",
        "",
    ]
    return lines


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def graph_lines(args: argparse.Namespace, builds: list[dict]) -> list[str]:
    """The whole-graph tables and, for several sizes, how time and memory scale."""
    lines = [f"## The whole graph through Dagster ({args.workers} worker processes)", ""]
    for built in builds:
        lines += stage_table(built)
    if len(builds) > 1:
        small, large = builds[0], builds[-1]
        ratio = large["total"] / small["total"]
        lines += [
            f"Scaling: {large['docs'] / small['docs']:,.0f}x the documents took {ratio:.1f}x the "
            f"time; the Dagster process's peak went from {small['driver_mb']:,.0f} to "
            f"{large['driver_mb']:,.0f} MB ({large['driver_mb'] / small['driver_mb']:.2f}x).",
            "",
        ]
    return lines


def corpus_line(args: argparse.Namespace) -> str:
    """What was measured on what."""
    return (
        f"Corpus: web-like documents of 200 to 2,000 words (about 7.5 KB) from "
        f"`bench/webcorpus.py`, seed {args.seed} (a Zipf vocabulary led by real English words, "
        "then made-up words; 5% exact copies, 15% edited copies at word 5-gram Jaccard 0.5 to "
        "1.0, 4% punctuation, markup, line-break and bullet variants; `src` web / wiki / code "
        "50 / 30 / 20%, all prose), raw files "
        + ("jsonl.gz (gzip level 1)" if args.gzip else "jsonl")
        + ". Configuration: the repository's corpus.yaml with "
        f"`engine: {{kind: {args.engine}, workers: {args.workers}}}` and `num_shards` raised "
        f"to keep at most {args.shard_docs:,} documents per shard (8 shards at 100,000, 80 at "
        "1,000,000: a shard is what one task holds) and `shards.max_bytes` at the platform's "
        "default, 256 MiB (the sample's 1 MB would make 6,500 tar files of a million "
        "documents); the evaluation set holds "
        f"{EVAL_FRESH} fresh {EVAL_WORDS}-word passages and {EVAL_COPIED} copied from the corpus."
    )


def render(args: argparse.Namespace, filters: dict, lingua: dict, builds: list[dict]) -> str:
    """The "bench" section of BENCHMARKS.md."""
    ours, theirs = filters["ours"], filters["datatrove"]
    speedup = ours["docs_per_second"] / theirs["docs_per_second"]
    command = f".bench-venv/bin/python bench/run_benchmarks.py --docs {args.docs} "
    command += f"--workers {args.workers}"
    lines = [
        "<!-- bench:begin -->",
        "# Benchmarks",
        "",
        f"Command: `make bench` (= `{command}`, then the dedup comparison below), run "
        f"{datetime.now(UTC):%Y-%m-%d}.",
        f"Machine: {machine()}.",
        corpus_line(args),
        "",
        *graph_lines(args, builds),
        f"## Heuristic filters against datatrove (one process each, {ours['docs']:,} documents, "
        f"{filters['megabytes']:,.1f} MB)",
        "",
        "| implementation | filters | docs/s | MB/s | kept |",
        "|---|---|---:|---:|---:|",
        f"| corpus_platform | {ours['rules']} heuristic rules: Gopher quality + repetition, C4, "
        f"URL, code, blocklist, domain (batched) | {ours['docs_per_second']:,.0f} | "
        f"{filters['megabytes'] / ours['seconds']:,.2f} | {ours['kept']:,} |",
        f"| datatrove {theirs['datatrove_version']} | GopherQuality + GopherRepetition + C4Quality "
        f"(defaults) | {theirs['docs_per_second']:,.0f} | "
        f"{filters['megabytes'] / theirs['seconds']:,.2f} | "
        f"{theirs['kept']:,} |",
        "",
        f"Speed-up: **{speedup:.1f}x**. The kept counts can differ where the project exempts a "
        "source from the prose rules (`filters.exempt`: the `code` rows here) and datatrove has "
        "no such setting, and where the rules differ (C4's curly-brace rule removes the copies "
        "with `{{...}}` markup in both).",
        "",
        f"datatrove's setup: {theirs.get('notes', '')}",
        "",
        "## Language identification (lingua-language-detector, batched, all cores)",
        "",
        f"{lingua['docs']:,} documents (the non-code ones above) in {lingua['seconds']:.1f} s: "
        f"**{lingua['docs_per_second']:,.0f} docs/s**; {lingua['kept']:,} kept as English at "
        "the configured confidence.",
        "<!-- bench:end -->",
    ]
    return "\n".join(lines)


def render_large(args: argparse.Namespace, builds: list[dict]) -> str:
    """The "large" section of BENCHMARKS.md (``make bench-large``), or with ``--no-language``
    the "nolang" section (language identification off), or with ``--language-backend`` the
    "lang-<backend>" section: the whole graph only."""
    name = section_name(args)
    command = f".bench-venv/bin/python bench/run_benchmarks.py --docs {args.docs} "
    command += f"--workers {args.workers}" + (" --large" if args.large else "")
    command += "" if args.language else " --no-language"
    command += f" --language-backend {args.language_backend}" if args.language_backend else ""
    command += "" if args.engine == "local" else f" --engine {args.engine}"
    command += " --gzip" if args.gzip else ""
    if args.large and args.language and args.language_backend:
        title = (
            "## Large corpus: the whole graph, language identification on "
            f"(`filters.language_backend: {args.language_backend}`)"
        )
    elif args.large:
        title = "## Large corpus: the whole graph"
    elif args.language_backend:
        title = (
            "## The whole graph with language identification on "
            f"(`filters.language_backend: {args.language_backend}`)"
        )
    else:
        title = "## The whole graph with language identification off (`filters.languages: []`)"
    if args.engine != "local":
        title += f", engine `{args.engine}`"
    lines = [
        f"<!-- {name}:begin -->",
        title,
        "",
        f"Command: `{command}`, run {datetime.now(UTC):%Y-%m-%d}. Machine: {machine()}.",
        corpus_line(args),
        "",
        *graph_lines(args, builds)[2:],
        f"<!-- {name}:end -->",
    ]
    return "\n".join(lines)


def section_name(args: argparse.Namespace) -> str:
    """The BENCHMARKS.md section a whole-graph-only run writes: ``large`` or ``nolang``, with
    the engine's name after it when it is not ``local``."""
    name = "large" if args.large else "nolang"
    if args.language and args.language_backend:
        name = f"{name if args.large else 'lang'}-{args.language_backend}"
    return name if args.engine == "local" else f"{name}-{args.engine}"


def write_section(path: Path, name: str, text: str) -> None:
    """Put ``text`` (a ``<!-- name:begin -->`` section) into ``path``, keeping the other marked
    sections in the order bench, large, dedup; unmarked text (an older layout) is dropped."""
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    sections = {m.group(1): m.group(0) for m in SECTION_RE.finditer(current)}
    sections[name] = text
    order = ["bench", "nolang", "lang-fasttext", "nolang-dask-local", "large", "large-fasttext"]
    order += ["cpu"]
    order += ["large-dask-local", "dedup"]
    order += ["loader"]
    ordered = [sections[k] for k in order if k in sections]
    ordered += [v for k, v in sections.items() if k not in order]
    path.write_text("\n\n".join(ordered) + "\n", encoding="utf-8")


def main() -> int:
    """Run the filter comparison (unless ``--large``) and the whole graph at every size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="10000,100000", help="comma-separated corpus sizes")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3, help="corpus seed")
    parser.add_argument("--filter-docs", type=int, default=2_000)
    parser.add_argument("--large", action="store_true", help="whole graph only, large section")
    parser.add_argument("--keep", action="store_true", help="keep the scratch projects")
    parser.add_argument(
        "--no-language",
        dest="language",
        action="store_false",
        help="whole graph only, language identification off (its own section)",
    )
    parser.add_argument(
        "--engine", choices=["local", "dask-local"], default="local", help="engine.kind"
    )
    parser.add_argument(
        "--language-backend",
        choices=["lingua", "fasttext"],
        default=None,
        help="whole graph only, filters.language_backend (its own section)",
    )
    parser.add_argument(
        "--shard-docs",
        type=int,
        default=12_500,
        help="most documents per shard: num_shards grows with the corpus (default 12,500)",
    )
    parser.add_argument(
        "--gzip", action="store_true", help="raw files as jsonl.gz (a third of the disk)"
    )
    parser.add_argument("--work", type=Path, default=REPO / ".bench")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    kernel_cache.warm()  # numba's kernels compiled (first run of a checkout) before any timing
    sizes = [int(n) for n in args.docs.split(",") if n.strip()]
    args.work.mkdir(parents=True, exist_ok=True)
    config_path = REPO / "corpus.yaml"
    if not args.large and args.language and not args.language_backend:
        sample = list(WebCorpus(args.seed, track_truth=False).documents(args.filter_docs))
        texts = [d.text for d in sample]
        filters = {
            "ours": our_filters(
                texts, [d.source for d in sample], [d.url for d in sample], config_path
            ),
            "datatrove": datatrove_filters(texts, args.work),
            "megabytes": sum(len(t.encode("utf-8")) for t in texts) / 1e6,
        }
        lingua = lingua_throughput([d.text for d in sample if d.source != "code"], config_path)
        del sample, texts
    builds = [
        build(
            args.work,
            n,
            args.workers,
            args.seed,
            args.keep,
            args.language,
            args.engine,
            args.shard_docs,
            args.gzip,
            args.language_backend,
        )
        for n in sizes
    ]
    if args.large or not args.language or args.engine != "local" or args.language_backend:
        text = render_large(args, builds)
        write_section(args.out, section_name(args), text)
    else:
        text = render(args, filters, lingua, builds)
        write_section(args.out, "bench", text)
    print(text)
    return 0 if all(b["ok"] for b in builds) else 1


if __name__ == "__main__":
    sys.exit(main())
