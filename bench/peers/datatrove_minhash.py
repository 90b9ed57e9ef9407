"""Peer benchmark: datatrove 0.10.1's MinHash near-duplicate pipeline on a JSONL corpus.

Run with the benchmark venv's python (``make .bench-venv/.installed``), never the project's:

    .bench-venv/bin/python bench/peers/datatrove_minhash.py --input CORPUS.jsonl \\
        --out PAIRS.jsonl --threshold 0.8 --num-perm 128 --ngram 5 --seed 42 \\
        --work DIR --workers 2

Input: one ``{"id": ..., "text": ...}`` object per line. Output: a JSONL file whose first
line is ``{"seconds", "docs", "tool", "notes", "stages"}`` and then one ``{"a", "b"}``
line (``a < b``) for every pair of documents datatrove put in the same duplicate
cluster (a cluster of k documents gives k*(k-1)/2 pairs).

What runs, all with ``LocalPipelineExecutor`` (``start_method="fork"``; the default
``forkserver`` would add a fresh import of datatrove and spaCy to every task's time):

1. ``JsonlReader`` -> ``MinhashDedupSignature``: ``--workers`` tasks, one per input shard.
2. ``MinhashDedupBuckets``: one task per bucket, ``--workers`` at a time.
3. ``MinhashDedupCluster`` (``save_cluster_id=True``): one task (datatrove requires it).
4. ``JsonlReader`` -> ``MinhashDedupFilter(load_cluster_ids=True)`` -> ``JsonlWriter``
   (kept documents) with an exclusion ``JsonlWriter`` (removed ones), uncompressed
   (datatrove's writer default is gzip), ``--workers`` tasks.

Settings: datatrove does not derive the LSH layout from a threshold, so its defaults are
used: 14 buckets x 8 hashes per bucket = 112 permutations (LSH threshold
(1/14)^(1/8) ~ 0.72). ``--threshold`` and ``--num-perm`` are therefore only recorded in
the notes; ``--buckets`` / ``--rows`` override the defaults. ``--ngram`` sets
``MinhashConfig.n_grams`` (word n-grams), ``--seed`` its seed; hashing is datatrove's
default (64-bit xxhash), text normalisation its default ``TextNormConfig`` (lowercase,
punctuation removed, whitespace/digits/diacritics normalised) and words come from its
English word tokenizer (``spacy.blank("en")``, shipped with the spacy wheel; nothing is
downloaded). Like text-dedup's default, no Jaccard verification of candidate pairs is done.

Timing (``seconds``): wall clock of the four stages only. Reading CORPUS.jsonl and writing
it back as ``--workers`` contiguous JSONL shards for ``JsonlReader`` happen before the
clock starts; datatrove's own re-reading of those shards (stages 1 and 4) is inside it.
Per-stage seconds are in ``stages``.

Document ids: stage 3 identifies documents as (task rank, index in that task's input
stream). Pairs come from the ``.clusters`` files, each (rank, index) mapped back to an id
through the shard that task read. The script fails unless stage 4 agrees: there each
``Document`` carries its JSONL ``id`` and the ``minhash_cluster_id`` datatrove gave it
(stage 4 annotates only tasks that have something to remove; the check allows for that).

``DIR`` is wiped at start: datatrove skips tasks whose completion markers already exist.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import struct
import time
from collections import defaultdict
from collections.abc import Iterable
from importlib.metadata import version
from itertools import combinations
from pathlib import Path

import spacy  # noqa: F401  (imported before the clock so forked tasks inherit it)
import xxhash
from datatrove.executor import LocalPipelineExecutor

# Imported from the module, not datatrove.pipeline.dedup, whose __init__ also imports the
# exact-substring step and with it the `tokenizers` package that MinHash never uses.
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.hashes import xxhash as datatrove_xxhash
from peer_io import parser, read_corpus, write_result

TOOL = f"datatrove {version('datatrove')}"


def _xxhash64(data: str | bytes) -> int:
    """datatrove's xxhash64 as under the xxhash<4 it declares: a str is hashed as UTF-8."""
    return xxhash.xxh64_intdigest(data.encode("utf-8") if isinstance(data, str) else data)


def _xxhash32(data: str | bytes) -> int:
    """datatrove's xxhash32 as under the xxhash<4 it declares: a str is hashed as UTF-8."""
    return xxhash.xxh32_intdigest(data.encode("utf-8") if isinstance(data, str) else data)


# datatrove 0.10.1 hashes shingles with xxhash.xxh64_intdigest(str); its "processing" extra
# pins xxhash<4, which encoded a str as UTF-8, while the project (and so this venv) pins
# xxhash 4.1.0, which rejects str. Same hash values as datatrove under xxhash 3.
datatrove_xxhash.xxhash64 = _xxhash64
datatrove_xxhash.xxhash32 = _xxhash32


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The shared peer options, plus datatrove's LSH layout."""
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--buckets", type=int, default=None, help="override datatrove's 14 buckets")
    p.add_argument("--rows", type=int, default=None, help="override datatrove's 8 hashes/bucket")
    return p.parse_args(argv)


def write_shards(ids: list[str], texts: list[str], folder: Path, n: int) -> list[list[str]]:
    """Write n contiguous JSONL shards (``00000.jsonl`` ...) and return each shard's ids.

    Documents with empty text are left out: datatrove's readers skip them anyway, and
    leaving them out keeps a shard's line number equal to datatrove's in-task index.
    """
    folder.mkdir(parents=True)
    keep = [i for i, t in enumerate(texts) if t]
    size = -(-len(keep) // n)
    shard_ids: list[list[str]] = []
    for s in range(n):
        chunk = keep[s * size : (s + 1) * size]
        with (folder / f"{s:05d}.jsonl").open("w", encoding="utf-8") as fh:
            for i in chunk:
                fh.write(json.dumps({"id": ids[i], "text": texts[i]}) + "\n")
        shard_ids.append([ids[i] for i in chunk])
    return shard_ids


def cluster_ids_from_filter_output(folders: Iterable[Path]) -> dict[str, int]:
    """Map document id -> ``minhash_cluster_id`` from stage 4's JSONL output (-1 = none)."""
    out: dict[str, int] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.jsonl*")):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    out[str(row["id"])] = int(row.get("metadata", {}).get("minhash_cluster_id", -1))
    return out


def cluster_ids_from_index_files(folder: Path, shard_ids: list[list[str]]) -> dict[str, int]:
    """Map document id -> cluster from stage 3's ``{rank:06d}.clusters`` files.

    Each file holds (index in the task's input stream, cluster id) records; the index is
    turned back into an id through the shard the task read.
    """
    out: dict[str, int] = {}
    for path in sorted(folder.glob("*.clusters")):
        rank = int(path.name.split(".")[0])
        for doc_idx, cid in struct.iter_unpack("<2I", path.read_bytes()):
            out[shard_ids[rank][doc_idx]] = cid
    return out


def check_mapping(
    by_index: dict[str, int], by_output: dict[str, int], clusters: Path, shard_ids: list[list[str]]
) -> None:
    """Fail unless both id mappings give every document the same cluster.

    ``MinhashDedupFilter`` only loads cluster ids for a task that has a ``.remove`` file,
    so documents of a task with nothing to remove carry no cluster id in its output.
    """
    for rank, members in enumerate(shard_ids):
        annotated = (clusters / f"{rank:06d}.remove").exists()
        for doc_id in members:
            want = by_index.get(doc_id, -1) if annotated else -1
            if by_output.get(doc_id) != want:
                raise SystemExit(
                    f"id mapping mismatch for {doc_id}: cluster {by_output.get(doc_id)} in "
                    f"stage 4 output, {by_index.get(doc_id, -1)} via (rank, index)"
                )


def groups_of(cluster_of: dict[str, int]) -> dict[int, list[str]]:
    """Invert id -> cluster into cluster -> ids, ignoring -1 (no cluster)."""
    groups: dict[int, list[str]] = defaultdict(list)
    for doc_id, cid in cluster_of.items():
        if cid != -1:
            groups[cid].append(doc_id)
    return groups


def pairs_of(groups: dict[int, list[str]]) -> set[tuple[str, str]]:
    """Every within-cluster pair, as (smaller id, larger id)."""
    out: set[tuple[str, str]] = set()
    for members in groups.values():
        for a, b in combinations(sorted(set(members)), 2):
            out.add((a, b))
    return out


def run(args: argparse.Namespace) -> None:
    """Run the four datatrove stages on ``args.input`` and write ``args.out``."""
    ids, texts = read_corpus(args.input)
    work: Path = args.work / "datatrove_minhash"
    if work.exists():
        shutil.rmtree(work)
    workers = max(1, args.workers)
    shard_ids = write_shards(ids, texts, work / "input", workers)
    del texts

    defaults = MinhashConfig()
    config = MinhashConfig(
        n_grams=args.ngram,
        num_buckets=args.buckets or defaults.num_buckets,
        hashes_per_bucket=args.rows or defaults.hashes_per_bucket,
        seed=args.seed,
    )
    sigs, buckets, clusters = work / "signatures", work / "buckets", work / "clusters"
    kept, removed, logs = work / "kept", work / "removed", work / "logs"

    def reader() -> JsonlReader:
        return JsonlReader(str(work / "input"), glob_pattern="*.jsonl", compression=None)

    def executor(name: str, pipeline: list, tasks: int) -> LocalPipelineExecutor:
        return LocalPipelineExecutor(
            pipeline=pipeline,
            tasks=tasks,
            workers=min(workers, tasks),
            logging_dir=str(logs / name),
            start_method="fork",
        )

    signature = [reader(), MinhashDedupSignature(str(sigs), config=config)]
    bucket = [MinhashDedupBuckets(str(sigs), str(buckets), config=config)]
    cluster = [MinhashDedupCluster(str(buckets), str(clusters), config, save_cluster_id=True)]
    dedup_filter = [
        reader(),
        MinhashDedupFilter(
            str(clusters),
            exclusion_writer=JsonlWriter(str(removed), compression=None),
            load_cluster_ids=True,
        ),
        JsonlWriter(str(kept), compression=None),
    ]
    stages = [
        ("signature", executor("signature", signature, workers)),
        ("buckets", executor("buckets", bucket, config.num_buckets)),
        ("cluster", executor("cluster", cluster, 1)),
        ("filter", executor("filter", dedup_filter, workers)),
    ]
    stage_seconds: dict[str, float] = {}
    start = time.perf_counter()
    for name, ex in stages:
        t0 = time.perf_counter()
        ex.run()
        stage_seconds[name] = round(time.perf_counter() - t0, 3)
    seconds = time.perf_counter() - start

    by_index = cluster_ids_from_index_files(clusters, shard_ids)
    check_mapping(by_index, cluster_ids_from_filter_output([kept, removed]), clusters, shard_ids)
    pairs = pairs_of(groups_of(by_index))

    notes = (
        f"MinhashConfig(n_grams={config.n_grams}, num_buckets={config.num_buckets}, "
        f"hashes_per_bucket={config.hashes_per_bucket}, seed={config.seed}, "
        f"hash={config.hash_config}) = {config.num_buckets * config.hashes_per_bucket} perms; "
        f"bands/rows are datatrove defaults unless overridden (it does not derive them from a "
        f"threshold; --threshold {args.threshold} and --num-perm {args.num_perm} not used; "
        f"LSH threshold ~(1/b)^(1/r)="
        f"{(1 / config.num_buckets) ** (1 / config.hashes_per_bucket):.2f}); "
        f"default TextNormConfig + spaCy blank 'en' word tokenizer; no Jaccard verification; "
        f"LocalPipelineExecutor start_method=fork (default forkserver), {workers} workers, "
        f"tasks: signature {workers}, buckets {config.num_buckets}, cluster 1, filter {workers}; "
        f"stage 4 writes kept/removed JSONL uncompressed (default gzip); time includes "
        f"datatrove reading {workers} JSONL shards (written before the clock)"
    )
    summary = {
        "seconds": round(seconds, 3),
        "docs": len(ids),
        "tool": TOOL,
        "notes": notes,
        "stages": stage_seconds,
    }
    write_result(args.out, summary, pairs)


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    run(parse_args(argv))


if __name__ == "__main__":
    main()
