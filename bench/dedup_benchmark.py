"""Near-duplicate detection: accuracy, speed and memory against the naive loop and two peers.

    .bench-venv/bin/python bench/dedup_benchmark.py --docs 100000 --workers 2 --out BENCHMARKS.md

Generates ``--docs`` English-like documents of about 1 KB; a quarter of the originals get 1 to 3
edited copies with 1 to 12 words replaced at positions at least 6 apart, so the word 5-gram
Jaccard similarity of a copy to its original spans roughly 0.5 to 0.95 and is known exactly.
Ground truth: the clusters formed by planted pairs whose exact shingle Jaccard is at least the
threshold (0.8). Every implementation is scored on the pairs inside the clusters it reports
(precision, recall and F1 of duplicate-pair detection) and timed in documents per second:

- corpus_platform's dedup kernels through the shard engine (``--workers`` processes, one
  logical shard per ``SHARD_DOCS`` documents), in a fresh process whose peak memory is
  recorded; run again on ``--memory-scale`` times the corpus (for memory only), the difference
  gives the memory that grows per million documents;
- the naive loop: one datasketch MinHash per document updated shingle by shingle, MinHashLSH
  query-then-insert (one process);
- datatrove's MinHash dedup pipeline and text-dedup's MinHash, each in its own benchmark
  environment (``bench/peers/``), reading the same documents from a jsonl file.

Writes (or replaces) the "Near-duplicate detection" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import pyarrow as pa
from datasketch import MinHash, MinHashLSH

from corpus_platform.config import load_config
from corpus_platform.kernels.dedup import (
    DedupParams,
    cluster_documents,
    jaccard,
    shingle_set,
    signature_shard,
)
from corpus_platform.kernels.engine import LocalEngine
from corpus_platform.kernels.hashing import content_hash, normalize_text
from corpus_platform.kernels.unionfind import UnionFind
from corpus_platform.sample import _Writer
from corpus_platform.store.datasets import write_sharded

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- dedup:begin -->", "<!-- dedup:end -->"
SHARD_DOCS = 12_500  # documents per logical shard, as a user sizes num_shards
Pair = tuple[str, str]
PEERS = {
    "datatrove": ("bench/peers/datatrove_minhash.py", ".bench-venv/bin/python"),
    "text-dedup": ("bench/peers/text_dedup_minhash.py", ".bench-venv-textdedup/bin/python"),
}


def generate(docs: int, seed: int) -> tuple[dict[str, str], list[list[str]]]:
    """Documents and the planted groups (original first, then its edited copies)."""
    w = _Writer(seed)
    texts: dict[str, str] = {}
    groups: list[list[str]] = []
    while len(texts) < docs:
        base_id = f"d{len(texts):07d}"
        texts[base_id] = w.prose(170, 230)
        group = [base_id]
        if w.rng.random() < 0.25:
            for _ in range(w.rng.randint(1, 3)):
                copy_id = f"d{len(texts):07d}"
                texts[copy_id] = w.edit(texts[base_id], w.rng.randint(1, 12))
                group.append(copy_id)
        groups.append(group)
    return texts, groups


def cluster_pairs(pairs: set[Pair]) -> set[Pair]:
    """Every pair inside the connected components of ``pairs``."""
    links = UnionFind()
    for a, b in sorted(pairs):
        links.union(a, b)
    return {
        (a, b) for members in links.groups().values() for a, b in combinations(sorted(members), 2)
    }


def truth(texts: dict[str, str], groups: list[list[str]], threshold: float, size: int) -> set[Pair]:
    """Pairs inside the ground-truth clusters: planted pairs with exact Jaccard >= threshold,
    closed under union."""
    pairs = set()
    for group in groups:
        sets = {d: shingle_set(texts[d], size) for d in group}
        pairs |= {
            (a, b)
            for a, b in combinations(sorted(group), 2)
            if jaccard(sets[a], sets[b]) >= threshold
        }
    return cluster_pairs(pairs)


@dataclass(frozen=True)
class Run:
    """One implementation's result on the benchmark corpus."""

    name: str
    workers: int
    seconds: float
    pairs: set[Pair]
    peak_mb: float | None = None
    notes: str = ""


def shard_count(docs: int) -> int:
    """Logical shards for ``docs`` documents: one per ``SHARD_DOCS``, at least two."""
    return max(2, -(-docs // SHARD_DOCS))


def write_shards(texts: dict[str, str], folder: Path) -> None:
    """The corpus as the filter stage would leave it, in :func:`shard_count` logical shards."""
    ids = sorted(texts)
    table = pa.table(
        {
            "doc_id": ids,
            "entity": ids,
            "text": [texts[d] for d in ids],
            "content_hash": [content_hash(texts[d]) for d in ids],
            "quality_score": [1.0] * len(ids),
        }
    )
    write_sharded(table, folder, shard_count(len(ids)))


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def _peak_mb() -> float:
    """This process's own peak resident set (VmHWM). Not ``ru_maxrss``: Linux carries that
    across ``execve`` from the forked image, so a spawned child would report its parent's
    size (here: the whole generated corpus) as its own peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _ours_child(folder: Path, shards: int, workers: int, params: DedupParams, out: Path) -> None:
    """Runs in a fresh process: dedup ``folder``; write pairs, seconds and peak memory."""
    from functools import partial

    baseline = _rss_mb()
    start = time.perf_counter()
    task = partial(signature_shard, upstream=folder, scratch=out / "scratch", params=params)
    LocalEngine(workers).map_shards(task, range(shards))
    result = cluster_documents(out / "scratch", shards, params)
    seconds = time.perf_counter() - start
    own = _peak_mb()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    pairs = sorted((c, d) for d, c in result.cluster_of.items() if d != c)
    report = {"seconds": seconds, "peak_mb": own, "baseline_mb": baseline, "worker_mb": children}
    (out / "report.json").write_text(json.dumps({**report, "pairs": pairs}))


def ours(folder: Path, docs: int, workers: int, params: DedupParams, out: Path) -> tuple[Run, dict]:
    """corpus_platform's kernels in a fresh process (so its peak memory is its own)."""
    context = multiprocessing.get_context("spawn")
    args = (folder, shard_count(docs), workers, params, out)
    child = context.Process(target=_ours_child, args=args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"corpus_platform dedup failed with exit code {child.exitcode}")
    report = json.loads((out / "report.json").read_text())
    found = cluster_pairs({tuple(p) for p in report.pop("pairs")})
    name = "corpus_platform (MinHash + LSH + exact Jaccard verification)"
    return Run(name, workers, report["seconds"], found, report["peak_mb"]), report


def shingles(text: str, size: int) -> list[bytes]:
    """Distinct word ``size``-grams of the normalized text (the whole text if shorter)."""
    words = normalize_text(text).split()
    if len(words) <= size:
        return [" ".join(words).encode("utf-8")]
    return sorted({" ".join(words[i : i + size]).encode() for i in range(len(words) - size + 1)})


def naive(texts: dict[str, str], params: DedupParams) -> Run:
    """The naive loop: MinHash updated shingle by shingle, LSH query-then-insert."""
    lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm)
    found: set[Pair] = set()
    start = time.perf_counter()
    for doc_id in sorted(texts):
        minhash = MinHash(num_perm=params.num_perm, seed=params.seed)
        for shingle in shingles(texts[doc_id], params.shingle_size):
            minhash.update(shingle)
        found |= {(min(doc_id, o), max(doc_id, o)) for o in lsh.query(minhash)}
        lsh.insert(doc_id, minhash)
    seconds = time.perf_counter() - start
    return Run("naive datasketch loop (query-then-insert)", 1, seconds, cluster_pairs(found))


def peer(name: str, corpus: Path, work: Path, workers: int, params: DedupParams) -> Run | str:
    """Run a peer pipeline in its own environment; a string says why it could not run."""
    script, python = PEERS[name]
    if not (REPO / python).is_file():
        return f"{name}: not run, {python} missing (make bench creates it)"
    out = work / f"{name}.jsonl"
    command = [
        str(REPO / python), str(REPO / script), "--input", str(corpus), "--out", str(out),
        "--threshold", str(params.threshold), "--num-perm", str(params.num_perm),
        "--ngram", str(params.shingle_size), "--seed", str(params.seed),
        "--work", str(work / name), "--workers", str(workers),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"{name}: failed ({done.stderr.strip().splitlines()[-1:]})"
    lines = out.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    pairs = {(min(p["a"], p["b"]), max(p["a"], p["b"])) for p in map(json.loads, lines[1:])}
    label = f"{header['tool']} MinHash"
    return Run(label, workers, header["seconds"], cluster_pairs(pairs), notes=header["notes"])


def scores(found: set[Pair], expected: set[Pair]) -> tuple[float, float, float]:
    """Precision, recall and F1 of pair detection."""
    hits = len(found & expected)
    precision = hits / len(found) if found else 1.0
    recall = hits / len(expected) if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def section(
    args: argparse.Namespace,
    docs: int,
    expected: set[Pair],
    runs: list[Run],
    memory: list[str],
    skipped: list[str],
) -> str:
    """The markdown section written into BENCHMARKS.md."""
    lines = [
        BEGIN,
        "## Near-duplicate detection (accuracy, speed, memory)",
        "",
        f"Command: `.bench-venv/bin/python bench/dedup_benchmark.py --docs {args.docs} "
        f"--workers {args.workers}` (run by `make bench`), {time.strftime('%Y-%m-%d')}; "
        f"machine: {platform.processor() or platform.machine()}, "
        f"{multiprocessing.cpu_count()} cores, Python {platform.python_version()}.",
        f"Settings from corpus.yaml: threshold 0.8, 128 permutations, word 5-grams. {docs:,} "
        "documents of about 1 KB; a quarter of the originals get 1 to 3 edited copies (1 to 12 "
        f"words replaced); the ground-truth clusters hold {len(expected):,} pairs with word "
        "5-gram Jaccard >= 0.8 (closed under union). Every implementation is scored on the "
        "pairs inside the clusters it reports.",
        "",
        "| implementation | workers | seconds | docs/s | precision | recall | F1 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        p, r, f = scores(run.pairs, expected)
        lines.append(
            f"| {run.name} | {run.workers} | {run.seconds:,.1f} | {docs / run.seconds:,.0f} | "
            f"{p:.4f} | {r:.4f} | {f:.4f} |"
        )
    lines += ["", *goal_lines(runs, docs, expected), "", *memory, ""]
    lines += [f"- {run.name}: {run.notes}" for run in runs if run.notes]
    lines += [f"- {reason}" for reason in skipped]
    lines.append(END)
    return "\n".join(lines)


def goal_lines(runs: list[Run], docs: int, expected: set[Pair]) -> list[str]:
    """Speed-ups of corpus_platform (first run) over each peer, and why peers lose precision."""
    ours_speed = docs / runs[0].seconds
    ratios = [
        f"{ours_speed / (docs / run.seconds):.1f}x {run.name.split(' (')[0]}"
        for run in runs[1:]
        if not run.name.startswith("corpus_platform")
    ]
    best_peer_f1 = max(
        (scores(r.pairs, expected)[2] for r in runs if not r.name.startswith("corpus_platform")),
        default=0.0,
    )
    return [
        f"corpus_platform with {runs[0].workers} workers against each peer: "
        + ", ".join(ratios)
        + f" (goals: 10x datatrove, 2x text-dedup); F1 {scores(runs[0].pairs, expected)[2]:.4f} "
        f"against the best peer's {best_peer_f1:.4f} (goal: no lower than any).",
        "",
        "Why the peers' precision is low on this corpus: the edited copies spread over Jaccard "
        "0.5 to 0.95, so many pairs sit just below 0.8. An LSH without verification accepts a "
        "good share of them (datatrove's default 14 x 8 bands put its S-curve's midpoint near "
        "0.72; text-dedup's 9 x 13 and datasketch's layout near 0.8), and a false pair pulls a "
        "document into a cluster, where every pair it forms counts as a false positive. "
        "corpus_platform verifies every candidate by exact Jaccard, so its clusters "
        "hold only pairs at or above the threshold.",
    ]


def memory_lines(small: dict, large: dict, small_docs: int, large_docs: int) -> list[str]:
    """Peak memory of the dedup process at two corpus sizes and the growth per million docs."""
    grow = max(0.0, large["peak_mb"] - small["peak_mb"]) / (large_docs - small_docs) * 1e6
    per_doc = grow * 2**20 / 1e6
    return [
        "Memory of corpus_platform's dedup: peak resident set of the driver process (it groups "
        "band keys, verifies pairs and builds clusters) and of the largest worker (it sketches "
        f"one shard at a time), with one logical shard per {SHARD_DOCS:,} documents, as a user "
        "sizes `num_shards`; the difference between the two runs is the state that grows with "
        "the corpus.",
        "",
        "| documents | shards | driver peak MB | driver after imports MB | largest worker MB |",
        "|---:|---:|---:|---:|---:|",
        *(
            f"| {n:,} | {shard_count(n)} | {r['peak_mb']:,.0f} | {r['baseline_mb']:,.0f} | "
            f"{r['worker_mb']:,.0f} |"
            for n, r in ((small_docs, small), (large_docs, large))
        ),
        "",
        f"Growth of the driver's peak: **{grow:,.0f} MB per million documents** "
        f"({per_doc:,.0f} bytes per document; goal: at most 1 KB).",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--peers", default="naive,datatrove,text-dedup")
    parser.add_argument("--memory-scale", type=int, default=4, help="memory run: N x --docs")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "dedup")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    params = DedupParams.from_config(load_config(REPO / "corpus.yaml"))
    texts, groups = generate(args.docs, args.seed)
    expected = truth(texts, groups, params.threshold, params.shingle_size)
    shutil.rmtree(args.work, ignore_errors=True)  # peers skip work they find already done
    args.work.mkdir(parents=True)
    write_shards(texts, args.work / "full" / "up")
    corpus = args.work / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as out:
        for doc_id in sorted(texts):
            out.write(json.dumps({"id": doc_id, "text": texts[doc_id]}) + "\n")
    full_up = args.work / "full" / "up"
    mine, full = ours(full_up, len(texts), args.workers, params, args.work / "full")
    one, _ = ours(full_up, len(texts), 1, params, args.work / "one")
    large_docs, large_work = args.memory_scale * len(texts), args.work / "large"
    write_shards(generate(large_docs, args.seed)[0], large_work / "up")  # memory only
    _, large = ours(large_work / "up", large_docs, args.workers, params, large_work)
    runs, skipped = [mine, one], []
    for name in filter(None, args.peers.split(",")):
        if name == "naive":
            runs.append(naive(texts, params))
            continue
        result = peer(name, corpus, args.work, args.workers, params)
        (runs.append if isinstance(result, Run) else skipped.append)(result)
    memory = memory_lines(full, large, len(texts), large_docs)
    text = section(args, len(texts), expected, runs, memory, skipped)
    current = args.out.read_text(encoding="utf-8") if args.out.is_file() else "# Benchmarks\n"
    if BEGIN in current:
        current = re.sub(
            re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: text, current, flags=re.S
        )
    else:
        current = current.rstrip("\n") + "\n\n" + text + "\n"
    args.out.write_text(current, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
