"""`make bench` (last step): where the whole graph's CPU time goes, sampled by py-spy.

    .bench-venv/bin/python bench/cpu_profile.py --docs 100000 --workers 2 --out BENCHMARKS.md

Writes a project as ``run_benchmarks.py --large --no-language --gzip`` does, builds it in a
fresh process under ``py-spy record --subprocesses`` (20 samples a second of every process: the
Dagster process, the engine's workers and the DVC commands), and puts each sample into the first
category of :data:`CATEGORIES` whose rule matches its stack. A sample is CPU time of one
process's Python thread; time in native threads that a Python thread waits on (Arrow's Parquet
reader threads) is not sampled, so the total falls short of wall time x cores. Writes the "cpu"
section of ``--out``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import this_checkout  # noqa: F401  (first: this checkout's corpus_platform)
from run_benchmarks import machine, write_project, write_section

from corpus_platform import kernel_cache

RATE = 20  # samples a second
BUILD = (
    "import sys; from pathlib import Path; import dagster as dg;"
    "from corpus_platform.runner import run_build;"
    "report = run_build(Path(sys.argv[1]), instance=dg.DagsterInstance.ephemeral());"
    "sys.exit(0 if report.ok else 1)"
)


def _dvc(process: str, stack: str) -> bool:
    return "dvc_process" in process or "/dvc" in stack or "dvc_" in stack


# (category, rule on (process line, stack)): the first match wins, so a Parquet write inside
# the filter counts as a Parquet write, and everything else inside the filter as the filter.
CATEGORIES: list[tuple[str, Callable[[str, str], bool]]] = [
    ("DVC pinning (dvc add and push: hashing, copying to the remote)", _dvc),
    ("Great Expectations (import and validation)", lambda p, s: "great_expectations" in s),
    ("imports (Python modules)", lambda p, s: "importlib._bootstrap" in s),
    (
        "Parquet writes (LZ4 or zstd, statistics)",
        lambda p, s: "write_table" in s or "ParquetWriter" in s,
    ),
    ("Parquet reads (Python side)", lambda p, s: "parquet/core.py" in s),
    ("filter: text scores (Gopher, C4 statistics)", lambda p, s: "text_scores" in s),
    ("filter: PII, boilerplate lines, verdicts", lambda p, s: "filter_shard" in s),
    ("dedup: normalize, shingle, MinHash", lambda p, s: "signature_shard" in s),
    (
        "dedup: bands, verification, components, membership",
        lambda p, s: "kernels/dedup/" in s or "engine/graph.py" in s,
    ),
    (
        "decontamination (mix and its check)",
        lambda p, s: "decontam" in s or "overlap_audit" in s,
    ),
    (
        "statistics: fit and audit",
        lambda p, s: "kernels/statistics/" in s,
    ),
    ("training shards: tars and samples", lambda p, s: "write_shard" in s or "explode_shard" in s),
    (
        "training shards: checks (manifest, draws)",
        lambda p, s: "sharding/audit.py" in s or "draw_audit" in s,
    ),
    ("ingest: decode, canonicalize, hash", lambda p, s: "kernels/ingest/" in s),
    ("split and its leakage checks", lambda p, s: "kernels/splitting/" in s or "split" in s),
    ("mix: plan and draw", lambda p, s: "kernels/mixing/" in s),
    ("Dagster", lambda p, s: "dagster" in s),
]
OTHER = "other"
LINE_NUMBER = re.compile(r":\d+\)")
PROCESS = re.compile(r'process \d+:"')


def split_processes(stack: str) -> tuple[str, str]:
    """A raw sample's process tree (``process N:"command line";`` each, a command line holding
    any character) and its frames: the tree ends at the first ``";`` after the last process."""
    starts = [m.end() for m in PROCESS.finditer(stack)]
    end = stack.find('";', starts[-1]) if starts else -1
    return (stack[: end + 1], stack[end + 2 :]) if end >= 0 else ("", stack)


def categorize(raw: Path) -> Counter[str]:
    """Samples per category of a py-spy ``--format raw`` file (``frame;frame;... count``)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        process, frames = split_processes(stack)
        frames = LINE_NUMBER.sub(")", frames)
        name = next((name for name, rule in CATEGORIES if rule(process, frames)), OTHER)
        counts[name] += int(number)
    return counts


def profile(project: Path, raw: Path) -> float:
    """Build ``project`` under py-spy, samples to ``raw``; return the wall seconds."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy not found: make .bench-venv/.installed installs it")
    command = [spy, "record", "--subprocesses", "--rate", str(RATE), "--format", "raw"]
    command += ["--nonblocking", "-o", str(raw), "--", sys.executable, "-c", BUILD, str(project)]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def render(args: argparse.Namespace, counts: Counter[str], wall: float, megabytes: float) -> str:
    total = sum(counts.values()) / RATE
    lines = [
        "<!-- cpu:begin -->",
        f"## Where the CPU time goes: the whole graph at {args.docs:,} documents, sampled",
        "",
        f"Command: `.bench-venv/bin/python bench/cpu_profile.py --docs {args.docs} --workers "
        f"{args.workers}{' --jsonl' if args.jsonl else ''}`, run {time.strftime('%Y-%m-%d')}. "
        f"Machine: {machine()}. Project as in the "
        + (
            '"nolang" section (language identification off, jsonl'
            if args.jsonl
            else '"large" section (language identification off, jsonl.gz'
        )
        + ", `engine: local`), built "
        f"under `py-spy record --subprocesses --rate {RATE}`: {wall:,.1f} s wall under the "
        f"profiler ({megabytes:,.0f} MB of text), {total:,.1f} CPU-s sampled in Python threads "
        f"of every process, against {wall * args.workers:,.1f} s of {args.workers} cores.",
        "",
        "| category (first rule that matches, bench/cpu_profile.py) | CPU s | share | µs/doc |",
        "|---|---:|---:|---:|",
    ]
    for name, samples in counts.most_common():
        seconds = samples / RATE
        lines.append(
            f"| {name} | {seconds:,.1f} | {seconds / total:.1%} | "
            f"{seconds / args.docs * 1e6:,.0f} |"
        )
    lines += ["", "<!-- cpu:end -->"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument(
        "--samples", type=Path, default=None, help="also keep py-spy's raw samples at this path"
    )
    parser.add_argument(
        "--jsonl", action="store_true", help="raw files as plain jsonl (the nolang section's)"
    )
    args = parser.parse_args()
    kernel_cache.warm()  # numba's kernels compiled (first run of a checkout) before any timing
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        project = Path(scratch) / f"project-{args.docs}"
        written, _ = write_project(
            project, args.docs, args.workers, args.seed, False, "local", gzip_files=not args.jsonl
        )
        raw = Path(scratch) / "samples.txt"
        wall = profile(project, raw)
        counts = categorize(raw)
        if args.samples is not None:
            shutil.copyfile(raw, args.samples)
    text = render(args, counts, wall, written.text_bytes / 1e6)
    write_section(args.out, "cpu", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
