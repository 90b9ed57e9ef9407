r"""The document-frequency reduce of the statistics fit and its audit, alone, as the shards grow.

Every shard writes ``--tokens`` distinct (token, count) pairs, then the exact top 100 is reduced
on one worker; seconds for the writes and for the reduce, and the count files written.

    .bench-venv/bin/python bench/topk_reduce.py --shards 8,80,240 --tokens 20000

``--module`` imports another implementation with the same functions, e.g. the one before
2026-11-27 (``git show e66d4ac:corpus_platform/kernels/statistics/topk.py > /tmp/old_topk.py``,
then ``PYTHONPATH=/tmp ... --module old_topk``: ``scatter_counts`` into as many partitions as
shards).
"""

from __future__ import annotations

import argparse
import importlib
import random
import string
import tempfile
import time
from pathlib import Path
from types import ModuleType

from corpus_platform.engine import LocalEngine

TOP = 100


def vocabularies(tokens: int, seed: int = 1) -> list[dict[str, int]]:
    """Four shards' worth of counts (shards reuse them in turn), from a shared vocabulary."""
    rng = random.Random(seed)
    pool = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10)))
        for _ in range(tokens * 3)
    ]
    return [{w: rng.randint(1, 50) for w in rng.sample(pool, tokens)} for _ in range(4)]


def run(topk: ModuleType, shards: int, counts: list[dict[str, int]]) -> tuple[float, float, int]:
    """Seconds to write every shard's counts, seconds to reduce them, files written."""
    engine = LocalEngine(1)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        start = time.perf_counter()
        for shard in range(shards):
            if hasattr(topk, "write_counts"):
                topk.write_counts(counts[shard % 4], folder, shard)
            else:
                topk.scatter_counts(counts[shard % 4], folder, shard, shards)
        written = time.perf_counter()
        if hasattr(topk, "write_counts"):
            topk.top_counts(folder, TOP, (), engine)
        else:
            topk.top_counts(folder, shards, TOP, (), engine)
        reduced = time.perf_counter()
        files = sum(1 for _ in folder.rglob("*.parquet"))
    return written - start, reduced - written, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", default="8,80,240")
    parser.add_argument("--tokens", type=int, default=20_000, help="distinct tokens a shard")
    parser.add_argument("--module", default="corpus_platform.kernels.statistics.topk")
    args = parser.parse_args()
    topk = importlib.import_module(args.module)
    counts = vocabularies(args.tokens)
    print(f"{args.module}, {args.tokens:,} tokens a shard:")
    print("| shards | write s | reduce s | files |")
    print("|---:|---:|---:|---:|")
    for shards in (int(s) for s in args.shards.split(",")):
        write, reduce, files = run(topk, shards, counts)
        print(f"| {shards} | {write:.1f} | {reduce:.1f} | {files:,} |")


if __name__ == "__main__":
    main()
