r"""What the split step's pair and membership work, and the shard step's kernel, cost the Dagster
process: each phase run alone in a fresh process against a built project, its peak resident
memory (VmHWM) above the process's after imports, Arrow's largest allocation and its seconds.

    .bench-venv/bin/python bench/split_memory.py PROJECT [PHASE ...]

Phases: ``links`` (the stage's ``split_links``: memberships and similar pairs that link, the
too-short rule), ``components`` (``component_plan``: the links and the component graph),
``too_short`` and ``crossing`` (the two halves of ``no_cluster_in_two_splits``' pair rule:
``too_short_to_leak`` and ``crossing_pairs`` over every similar pair); ``shards``
(``build_shards``: the published mix's samples ordered, cut and written to a scratch folder,
the engine's workers doing the per-shard work); ``review`` and ``review_here`` (the dedup step's
largest-clusters table: the starts of the texts of the first row of every shard of
``filtered_documents``, read by the engine's tasks, or in this process as the step did before
2026-11-27). Build PROJECT first
(``run_benchmarks.py --keep``) and run it at two corpus sizes to see which phase grows with the
corpus; ``check_memory.py`` measures the checks whole.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

PHASES = ("links", "components", "too_short", "crossing", "shards", "review", "review_here")


def resident_mb(field: str) -> int:
    """This process's ``VmHWM`` or ``VmRSS``, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def run_phase(root: str, phase: str, results: Any) -> None:
    """Run ``phase`` on the project at ``root``; put (base MB, peak MB, Arrow MB, seconds)."""
    import pyarrow as pa

    from corpus_platform.base.names import (
        DEDUPLICATED_DOCUMENTS,
        FILTERED_DOCUMENTS,
        SIMILAR_PAIRS,
        SPLIT_DOCUMENTS,
        TRAINING_MIX,
    )
    from corpus_platform.base.shards import read_parquet, read_shard
    from corpus_platform.defs.dedup.review import snippets_of
    from corpus_platform.defs.resources import CorpusProject
    from corpus_platform.defs.splitting.append_checks import too_short_to_leak
    from corpus_platform.defs.splitting.assets import component_plan
    from corpus_platform.engine import LocalEngine, shutdown_pools
    from corpus_platform.kernels.dedup import DedupParams
    from corpus_platform.kernels.sharding.shards import build_shards
    from corpus_platform.kernels.splitting.leakage import crossing_pairs
    from corpus_platform.kernels.splitting.links import split_links

    corpus = CorpusProject(root=root)
    config = corpus.load()
    filtered = corpus.stage_dir(FILTERED_DOCUMENTS)
    firsts = {
        read_shard(filtered, s, ["doc_id"])["doc_id"][0].as_py() for s in range(config.num_shards)
    }
    upstream, engine = corpus.stage_dir(DEDUPLICATED_DOCUMENTS), corpus.engine(config)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here
    base, start = resident_mb("VmRSS"), time.perf_counter()
    with corpus.scratch("split-memory") as scratch:
        if phase == "links":
            split_links(
                upstream / "clusters",
                upstream / SIMILAR_PAIRS,
                upstream,
                config.num_shards,
                scratch / "links",
                engine,
                DedupParams.from_config(config),
                config.split.link_dropped,
            )
        elif phase == "components":
            component_plan(upstream, config, scratch, engine)
        elif phase == "shards":
            mix, settings = corpus.stage_dir(TRAINING_MIX), config.shards
            (scratch / "out").mkdir()
            (scratch / "work").mkdir()
            build_shards(
                mix, scratch / "out", scratch / "work", config.num_shards, config.seed,
                settings.max_bytes, settings.max_samples, engine,
            )  # fmt: skip
        elif phase in ("review", "review_here"):
            here = LocalEngine(1)  # runs its tasks in this process
            snippets_of(firsts, filtered, config.num_shards, engine if phase == "review" else here)
        elif phase == "too_short":
            too_short_to_leak(corpus, read_parquet(upstream / SIMILAR_PAIRS))
        else:
            pairs = read_parquet(upstream / SIMILAR_PAIRS)
            crossing_pairs(corpus.stage_dir(SPLIT_DOCUMENTS), config.num_shards, pairs)
    seconds = time.perf_counter() - start
    arrow = pa.default_memory_pool().max_memory() // 2**20
    results.put((base, resident_mb("VmHWM"), arrow, seconds))
    shutdown_pools()


def main() -> int:
    root, *phases = sys.argv[1:]
    context = multiprocessing.get_context("spawn")
    print("| phase | above imports, MB | Arrow max, MB | seconds |")
    print("|---|---:|---:|---:|")
    for phase in phases or PHASES:
        if phase not in PHASES:
            raise SystemExit(f"unknown phase {phase!r}; choose from {', '.join(PHASES)}")
        results = context.Queue()
        process = context.Process(target=run_phase, args=(root, phase, results))
        process.start()
        base, peak, arrow, seconds = results.get()
        process.join()
        print(f"| {phase} | {peak - base} | {arrow} | {seconds:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
