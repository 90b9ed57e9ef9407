"""Peer benchmark: text-dedup 0.4.1's MinHash near-duplicate detection on a JSONL corpus.

text-dedup 0.4.1 requires Python >= 3.12, so it lives in its own venv, built by
``make .bench-venv-textdedup/.installed`` from pyenv's Python 3.12 (the project's python3 is
3.11). That venv holds no corpus_platform; this script only reads and writes JSONL:

    .bench-venv-textdedup/bin/python bench/peers/text_dedup_minhash.py --input CORPUS.jsonl \\
        --out PAIRS.jsonl --threshold 0.8 --num-perm 128 --ngram 5 --seed 42 \\
        --work DIR --workers 2

Input: one ``{"id": ..., "text": ...}`` object per line. Output: a JSONL file whose first
line is ``{"seconds", "docs", "tool", "notes", "stages"}`` and then one ``{"a", "b"}``
line (``a < b``) for every pair of documents text-dedup put in the same duplicate cluster
(a cluster of k documents gives k*(k-1)/2 pairs).

What runs: ``text_dedup.minhash.main(config)``, the function behind
``python -m text_dedup.minhash`` (whose settings come only from a ``config.toml``; this
script writes one to DIR and loads it with ``text_dedup.config.base.load_config_from_toml``).
Its steps: index + filter out documents with fewer than ``min_length`` (5) words,
fingerprint (``datasets.map``, ``num_proc=--workers``), band collisions grouped with polars
and connected components with ``polars_grouper.super_merger``, assign clusters, remove
duplicates, and save (``save_to_disk`` of the kept documents plus ``clusters.pickle``, the
{row index: cluster} map of every document in a cluster, turned on with
``save_clusters``). Pairs come from ``clusters.pickle``; row index i is line i of the
corpus, and the saved rows (``keep_index_column``) are checked to carry the id of their
row index.

Settings: ``threshold=--threshold``, ``num_perm=--num-perm``, ``ngram_size=--ngram``
(text-dedup's default is 1), ``seed=--seed``, ``num_proc=--workers``; bands and rows are
text-dedup's own choice from the threshold (``optimal_param``, datasketch's weighted
false-positive/false-negative minimisation; b=9, r=13 for 0.8 and 128). All else is the
default: lowercase, split on ``\\W``, word n-grams joined by spaces, 64-bit mode with 32-bit
xxh3 base hashes permuted modulo 2^61-1, ``min_length=5``, and no Jaccard check of
candidates (``check_false_positive=False``).

Timing (``seconds``): wall clock of ``main(config)`` only. Before the clock the corpus is
read and written as a HF ``datasets`` dataset (``save_to_disk``), which text-dedup opens
with ``load_from_disk`` (input type ``local_hf_dataset``, memory-mapped, no JSON parsing);
per-step seconds from text-dedup's own timer are in ``stages``. DIR is wiped first, so no
``datasets`` cache from an earlier run is reused. ``HF_DATASETS_OFFLINE``/``HF_HUB_OFFLINE``
are set: nothing is downloaded.

Caveat: with ``check_false_positive=False`` text-dedup 0.4.1 labels a cluster with a
``super_merger`` group number (1, 2, ...) rather than a member's row index, and its
``remove_duplicates`` keeps a row only when its cluster equals its index, so its saved,
deduplicated dataset drops every member of a cluster (no representative kept). The
clusters, and so the pairs measured here, are unaffected.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import sys
import time
from collections import defaultdict
from importlib.metadata import version
from itertools import combinations
from pathlib import Path
from types import ModuleType

from peer_io import parser, read_corpus, write_result

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# datasets, polars and text_dedup are imported inside run(), not here: text-dedup's save step
# (datasets' save_to_disk with num_proc > 1) starts a *spawn* pool whose workers re-import
# this __main__ module, and heavy imports here would add to the measured time.

INDEX = "__INDEX__"  # text-dedup's internal row-index column


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The shared peer options."""
    return parser(__doc__.splitlines()[0]).parse_args(argv)


def toml_value(value: object) -> str:
    """A TOML literal for a str, bool, int or float (JSON strings are valid TOML strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def write_config(path: Path, tables: dict[str, dict[str, object]]) -> None:
    """Write ``{table: {key: value}}`` as a TOML file (dotted table names allowed)."""
    lines: list[str] = []
    for table, values in tables.items():
        lines.append(f"[{table}]")
        lines.extend(f"{key} = {toml_value(val)}" for key, val in values.items())
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def record_step_times(td_minhash: ModuleType) -> dict[str, float]:
    """Make ``td_minhash.main`` leave its own timer's per-step seconds in the returned dict."""
    elapsed: dict[str, float] = {}

    class RecordingTimer(td_minhash.Timer):
        def __init__(self) -> None:
            super().__init__()
            self.elapsed_times = elapsed

    td_minhash.Timer = RecordingTimer
    return elapsed


def run(args: argparse.Namespace) -> None:
    """Run text-dedup's MinHash on ``args.input`` and write ``args.out``."""
    if sys.version_info < (3, 12):
        raise SystemExit("text-dedup 0.4.1 needs Python >= 3.12: run with .bench-venv-textdedup")
    import datasets
    from text_dedup import minhash as td_minhash
    from text_dedup.config import MinHashAlgorithmConfig
    from text_dedup.config.base import load_config_from_toml

    tool = f"text-dedup {version('text-dedup')}"
    ids, texts = read_corpus(args.input)
    work: Path = args.work / "text_dedup_minhash"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    os.environ["HF_DATASETS_CACHE"] = str(work / "hf_cache")
    datasets.disable_progress_bars()

    dataset_dir, output_dir = work / "input_dataset", work / "output"
    datasets.Dataset.from_dict({"id": ids, "text": texts}).save_to_disk(str(dataset_dir))
    del texts
    write_config(
        work / "config.toml",
        {
            "input": {"input_type": "local_hf_dataset"},
            "input.read_arguments": {"dataset_path": str(dataset_dir)},
            "algorithm": {
                "algorithm_name": "minhash",
                "text_column": "text",
                "seed": args.seed,
                "num_proc": max(1, args.workers),
                "num_perm": args.num_perm,
                "threshold": args.threshold,
                "ngram_size": args.ngram,
            },
            "output": {
                "output_dir": str(output_dir),
                "save_clusters": True,
                "keep_index_column": True,
            },
            "debug": {"enable_profiling": False},
        },
    )
    config = load_config_from_toml(work / "config.toml")
    algo = config.algorithm
    if not isinstance(algo, MinHashAlgorithmConfig):
        raise SystemExit(f"config parsed as {type(algo).__name__}, not MinHashAlgorithmConfig")

    step_seconds = record_step_times(td_minhash)
    start = time.perf_counter()
    td_minhash.main(config)
    seconds = time.perf_counter() - start
    stages = {k: round(v, 3) for k, v in step_seconds.items()}

    with (output_dir / "clusters.pickle").open("rb") as fh:
        cluster_of: dict[int, int] = pickle.load(fh)
    kept = datasets.load_from_disk(str(output_dir))
    for row_index, doc_id in zip(kept[INDEX], kept["id"], strict=True):
        if ids[row_index] != doc_id:
            raise SystemExit(
                f"id mapping mismatch: row {row_index} is {ids[row_index]}, not {doc_id}"
            )
    groups: dict[int, list[str]] = defaultdict(list)
    for row_index, cluster in cluster_of.items():
        groups[cluster].append(ids[row_index])
    pairs = {pair for members in groups.values() for pair in combinations(sorted(members), 2)}

    notes = (
        f"MinHashAlgorithmConfig(threshold={algo.threshold}, num_perm={algo.num_perm}, "
        f"bands={algo.bands}, rows={algo.rows} (text-dedup's optimal_param from threshold), "
        f"ngram_size={algo.ngram_size} word n-grams (default 1), min_length={algo.min_length}, "
        f"hash_bits={algo.hash_bits}, hash_func={algo.hash_func_name}, seed={algo.seed}, "
        f"num_proc={algo.num_proc}, check_false_positive={algo.check_false_positive}); "
        f"lowercase + split on \\W; Python {sys.version.split()[0]}; "
        f"input via save_to_disk/load_from_disk (local_hf_dataset) written before the clock; "
        f"time = text_dedup.minhash.main incl. saving kept docs + clusters.pickle; "
        f"{len(kept)} docs kept by its filter (0.4.1 drops every member of a cluster when "
        f"check_false_positive=False: cluster label is a group number, not a row index)"
    )
    summary = {
        "seconds": round(seconds, 3),
        "docs": len(ids),
        "tool": tool,
        "notes": notes,
        "stages": stages,
    }
    write_result(args.out, summary, pairs)


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    run(parse_args(argv))


if __name__ == "__main__":
    main()
