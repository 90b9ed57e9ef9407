r"""What the split step's pair and membership work, and the shard step's kernel, cost the Dagster
process: each phase run alone in a fresh process against a built project, its peak resident
memory (VmHWM) above the process's after imports, Arrow's largest allocation and its seconds.

    .bench-venv/bin/python bench/split_memory.py PROJECT [PHASE ...]

Phases: ``links`` (the stage's ``split_links``: memberships and similar pairs that link, the
too-short rule), ``components`` (``component_plan``: the links and the component graph),
``too_short`` and ``crossing`` (the two halves of ``no_cluster_in_two_splits``' pair rule:
``too_short_to_leak`` and ``crossing_pairs`` over every similar pair, each read by an engine task
since 2026-11-27); ``kept_pairs`` (the dedup check ``no_kept_near_duplicate_pair``
on the published stage); ``shards``
(``build_shards``: the published mix's samples ordered, cut and written to a scratch folder,
the engine's workers doing the per-shard work); ``review`` and ``review_here`` (the dedup step's
largest-clusters table: the starts of the texts of the first row of every shard of
``filtered_documents``, read by the engine's tasks, or in this process as the step did before
2026-11-27); ``neighbours`` and ``neighbours_here`` (the split step's links for the held-out
rows its search found with a train neighbour, ``neighbour_links``: the entity and text of a
validation and a train row of every shard, read by the engine's tasks, or in this process as
the step did before 2026-11-28). Build PROJECT first
(``run_benchmarks.py --keep``) and run it at two corpus sizes to see which phase grows with the
corpus; ``check_memory.py`` measures the checks whole.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

PHASES = (
    "links",
    "components",
    "too_short",
    "crossing",
    "kept_pairs",
    "shards",
    "review",
    "review_here",
    "neighbours",
    "neighbours_here",
)


def resident_mb(field: str) -> int:
    """This process's ``VmHWM`` or ``VmRSS``, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def clear_peak() -> None:
    """Reset this process's VmHWM to its current resident memory."""
    Path("/proc/self/clear_refs").write_text("5")


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
    from corpus_platform.base.shards import read_shard
    from corpus_platform.defs.dedup.checks import no_kept_near_duplicate_pair
    from corpus_platform.defs.dedup.review import snippets_of
    from corpus_platform.defs.generations import mix_texts
    from corpus_platform.defs.resources import CorpusProject
    from corpus_platform.defs.splitting.append_checks import too_short_to_leak
    from corpus_platform.defs.splitting.assets import component_plan
    from corpus_platform.defs.splitting.neighbour_search import neighbour_links
    from corpus_platform.engine import LocalEngine, shutdown_pools
    from corpus_platform.kernels.dedup import DedupParams
    from corpus_platform.kernels.sharding.shards import build_shards
    from corpus_platform.kernels.splitting.leakage import crossing_pairs_in
    from corpus_platform.kernels.splitting.links import split_links

    corpus = CorpusProject(root=root)
    config = corpus.load()
    filtered = corpus.stage_dir(FILTERED_DOCUMENTS)
    firsts = {
        read_shard(filtered, s, ["doc_id"])["doc_id"][0].as_py() for s in range(config.num_shards)
    }
    upstream, engine = corpus.stage_dir(DEDUPLICATED_DOCUMENTS), corpus.engine(config)
    clear_peak()
    base, start = resident_mb("VmRSS"), time.perf_counter()
    with corpus.scratch("split-memory") as scratch:
        if phase == "links":
            split_links(
                upstream / "clusters",
                upstream / SIMILAR_PAIRS,
                filtered,  # the texts the too-short rule measures
                config.num_shards,
                scratch / "links",
                engine,
                DedupParams.from_config(config),
                config.split.link_dropped,
            )
        elif phase == "components":
            component_plan(upstream, config, scratch, engine, texts=filtered)
        elif phase == "shards":
            mix, settings = corpus.stage_dir(TRAINING_MIX), config.shards
            (scratch / "out").mkdir()
            (scratch / "work").mkdir()
            build_shards(
                mix, scratch / "out", scratch / "work", config.num_shards, config.seed,
                settings.max_bytes, settings.max_samples, engine,
                texts=mix_texts(corpus, mix),
            )  # fmt: skip
        elif phase in ("review", "review_here"):
            here = LocalEngine(1)  # runs its tasks in this process
            snippets_of(firsts, filtered, config.num_shards, engine if phase == "review" else here)
        elif phase in ("neighbours", "neighbours_here"):
            split, n = corpus.stage_dir(SPLIT_DOCUMENTS), config.num_shards
            pairs = [
                (read_shard(split / "validation", s, ["doc_id"])["doc_id"][0].as_py(),
                 read_shard(split / "train", s, ["doc_id"])["doc_id"][0].as_py())
                for s in range(n)
            ]  # fmt: skip
            here = LocalEngine(1)
            params = DedupParams.from_config(config)
            neighbour_links(split, n, pairs, params, engine if phase == "neighbours" else here)
        elif phase == "too_short":
            too_short_to_leak(corpus, (upstream / SIMILAR_PAIRS,), scratch)
        elif phase == "kept_pairs":
            no_kept_near_duplicate_pair(corpus, upstream)
        else:
            short = too_short_to_leak(corpus, (upstream / SIMILAR_PAIRS,), scratch)
            clear_peak()
            base = resident_mb("VmRSS")
            split, n = corpus.stage_dir(SPLIT_DOCUMENTS), config.num_shards
            engine.map_shards(
                partial(
                    crossing_pairs_in, split_root=split, num_shards=n, pairs_file=short.linking
                ),
                [0],
            )
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
