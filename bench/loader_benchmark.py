r"""`make bench`: reading training shards with corpus_platform's loader, WebDataset's reader and
mosaicml-streaming, on the same samples.

Run in the benchmark environment (.bench-venv: the project plus the peers), never in tests:

    .bench-venv/bin/python bench/loader_benchmark.py --docs 50000 --workers 2 --out BENCHMARKS.md

1. Mix: ``--docs`` web-like documents from ``bench/webcorpus.py`` (200 to 2,000 words) as the
   train rows of a training_mix folder (the pipeline's columns), drawn as the mix draws them:
   ``kernels.mix.times_drawn`` at ``--rate`` (1.25: a quarter of the rows twice), 8 logical shards.
2. Shards: training_shards' kernel (``kernels.shards.build_shards``: WebDataset tars through
   ``webdataset.ShardWriter`` and Parquet files of the same samples, ``shards.max_bytes`` =
   ``--max-mb``) on ``--workers`` engine processes; timed.
3. MDS copy: the Parquet shards read in order and written with streaming's ``MDSWriter``
   (columns ``key`` and ``text`` as str, ``meta`` as json: what the tar's .json member holds; no
   compression, like the tars; the same size limit); timed, reading the Parquet included.
4. Reads: each reader in a fresh process (spawn), imports done before the clock starts: one
   whole epoch, one rank, no DataLoader workers, the dataset's construction inside the time;
   StreamingDataset gets ``batch_size`` 32 (see ``STREAMING_BATCH``).
   Every sample's text is touched (its length summed) and every reader must return every sample
   once (count and total characters checked). MB/s counts the UTF-8 bytes of the text of every
   sample; peak memory is the reading process's own VmHWM. The files were just written, so they
   are in the page cache for every reader alike.

mosaicml-streaming 0.13.0 needs torch (and torchvision, transformers, numpy < 2.2); PyPI's torch
for Linux is the CUDA build, which is not installed: see ``bench/peers/streaming_peer.py`` for
how it runs here (a minimal torch stand-in, no tensors on this path). Without it installed, its
rows say so and the rest is measured.

Output: the "loader" section of ``--out`` (BENCHMARKS.md), between ``<!-- loader:begin -->``
and ``<!-- loader:end -->``; the other sections are kept.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from run_benchmarks import machine, peak_mb, write_section
from webcorpus import WebCorpus

from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.base.shards import PARQUET_OPTIONS, part_path, write_json
from corpus_platform.engine import LocalEngine, shutdown_pools
from corpus_platform.kernels.mixing.mix import times_drawn
from corpus_platform.kernels.sharding.metadata import metadata_json
from corpus_platform.kernels.sharding.shards import build_shards

REPO = Path(__file__).resolve().parents[1]
NUM_SHARDS, SEED, BLOCK = 8, 20261122, 8192  # mix shards, shuffle seed, shuffle buffer
# StreamingDataset keeps at most predownload = 8 x batch_size samples ready and sleeps 7 ms when
# it is that far ahead: at batch_size 1 that caps it near 1,000 samples/s, so it gets a training
# job's batch size (no DataLoader here: the samples are still read one at a time).
STREAMING_BATCH = 32
MIX_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("entity", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("clicks", pa.float64()),
        ("dwell_seconds", pa.float64()),
        ("label", pa.float64()),
        ("url", pa.string()),
        ("times_drawn", pa.int32()),
    ]
)


def write_mix(folder: Path, docs: int, rate: float, seed: int) -> dict[str, int]:
    """The documents as a training_mix folder (streamed, a batch at a time); return the rows,
    samples and text bytes of the samples."""
    folder.mkdir(parents=True)
    writers = [
        pq.ParquetWriter(part_path(folder, s), MIX_SCHEMA, **PARQUET_OPTIONS)
        for s in range(NUM_SHARDS)
    ]
    batches: list[list[dict[str, Any]]] = [[] for _ in range(NUM_SHARDS)]
    totals = {"rows": 0, "samples": 0, "text_bytes": 0, "text_chars": 0}

    def flush() -> None:
        for shard, rows in enumerate(batches):
            if rows:
                writers[shard].write_table(pa.Table.from_pylist(rows, MIX_SCHEMA))
                rows.clear()

    for i, doc in enumerate(WebCorpus(seed=seed).documents(docs)):
        record = doc.record()
        drawn = times_drawn(record["id"], rate, SEED)
        if drawn == 0:
            continue
        row = {
            "doc_id": record["id"],
            "text": record["body"],
            "source": record["src"],
            "entity": record["author"],
            "timestamp": datetime.fromisoformat(record["created_at"].replace("Z", "+00:00")),
            "clicks": float(record["clicks"]),
            "dwell_seconds": float(record["dwell_seconds"]),
            "label": float(record["label"]),
            "url": record["url"],
            "times_drawn": drawn,
        }
        batches[shard_of(row["doc_id"], NUM_SHARDS)].append(row)
        totals["rows"] += 1
        totals["samples"] += drawn
        totals["text_bytes"] += drawn * len(row["text"].encode("utf-8"))
        totals["text_chars"] += drawn * len(row["text"])
        if i % 5000 == 4999:
            flush()
    flush()
    for writer in writers:
        writer.close()
    return totals


def write_mds(shards: Path, out: Path, size_limit: int) -> float:
    """The Parquet shards, in order, as an MDS dataset; return the seconds it took."""
    sys.path.insert(0, str(REPO / "bench" / "peers"))
    from streaming_peer import import_streaming

    mds_writer, _, _ = import_streaming()
    manifest = json.loads((shards / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    files = [e["name"] for e in manifest["shards"] if e["format"] == "parquet"]
    started = time.perf_counter()
    columns = {"key": "str", "text": "str", "meta": "json"}
    with mds_writer(out=str(out), columns=columns, size_limit=size_limit) as writer:
        for name in files:
            parquet = pq.ParquetFile(shards / name)
            for batch in parquet.iter_batches(batch_size=4096):
                for row in batch.to_pylist():
                    text = row.pop("text") or ""
                    meta = json.loads(metadata_json(row))
                    writer.write({"key": row["key"], "text": text, "meta": meta})
    return time.perf_counter() - started


# --- readers: each runs in its own process -------------------------------------------------


def read_loader(shards: Path, options: dict[str, Any]) -> tuple[int, int]:
    from corpus_platform.loader import ShardDataset

    count = chars = 0
    for sample in ShardDataset(shards, seed=SEED, shuffle_block=BLOCK, **options):
        count += 1
        chars += len(sample["text"] or "")
    return count, chars


def read_webdataset(shards: Path, options: dict[str, Any]) -> tuple[int, int]:
    import webdataset as wds

    manifest = json.loads((shards / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    urls = [str(shards / e["name"]) for e in manifest["shards"] if e["format"] == "webdataset"]
    shuffle = options["shuffle"]
    dataset = wds.WebDataset(urls, shardshuffle=len(urls) if shuffle else False, seed=SEED)
    dataset = (dataset.shuffle(BLOCK) if shuffle else dataset).decode()
    count = chars = 0
    for sample in dataset:
        count += 1
        chars += len(sample["txt"])
        assert isinstance(sample["json"], dict)
    return count, chars


def read_streaming(mds: Path, options: dict[str, Any]) -> tuple[int, int]:
    sys.path.insert(0, str(REPO / "bench" / "peers"))
    from streaming_peer import import_streaming

    _, streaming_dataset, _ = import_streaming()
    dataset = streaming_dataset(
        local=str(mds),
        shuffle=options["shuffle"],
        shuffle_seed=SEED,
        shuffle_block_size=BLOCK,
        batch_size=STREAMING_BATCH,  # predownload = 8 x batch_size samples ahead
    )
    count = chars = 0
    for sample in dataset:
        count += 1
        chars += len(sample["text"])
        assert isinstance(sample["meta"], dict)
    return count, chars


READERS = {"loader": read_loader, "webdataset": read_webdataset, "streaming": read_streaming}


def _child(kind: str, path: Path, options: dict[str, Any], queue: Any) -> None:
    try:
        if kind == "loader":
            import corpus_platform.loader  # noqa: F401 (imports before the clock)
        elif kind == "webdataset":
            import webdataset  # noqa: F401
        else:
            sys.path.insert(0, str(REPO / "bench" / "peers"))
            from streaming_peer import import_streaming

            import_streaming()
        imported = peak_mb()
        started = time.perf_counter()
        count, chars = READERS[kind](path, options)
        queue.put(
            {
                "seconds": time.perf_counter() - started,
                "count": count,
                "chars": chars,
                "peak_mb": peak_mb(),
                "imported_mb": imported,
            }
        )
    except Exception as error:  # reported in the table
        queue.put({"error": f"{type(error).__name__}: {error}"})


def run_reader(kind: str, path: Path, options: dict[str, Any]) -> dict[str, Any]:
    """One reader over one epoch in a fresh process."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(kind, path, options, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def streaming_version() -> str | None:
    sys.path.insert(0, str(REPO / "bench" / "peers"))
    try:
        from streaming_peer import import_streaming

        return import_streaming()[2]
    except ImportError:
        return None


READS = [  # (label, kind, format, options, order)
    (
        "corpus_platform ShardDataset",
        "loader",
        "Parquet",
        {"shuffle": True},
        "seeded shard order + 8,192-sample block shuffle",
    ),
    (
        "corpus_platform ShardDataset",
        "loader",
        "Parquet",
        {"shuffle": True, "columns": ["key", "text"]},
        "same, key and text columns only",
    ),
    ("corpus_platform ShardDataset", "loader", "Parquet", {"shuffle": False}, "manifest order"),
    (
        "webdataset WebDataset",
        "webdataset",
        "tar",
        {"shuffle": True},
        "shardshuffle + .shuffle(8192) buffer",
    ),
    ("webdataset WebDataset", "webdataset", "tar", {"shuffle": False}, "shard order"),
    (
        "mosaicml-streaming StreamingDataset",
        "streaming",
        "MDS",
        {"shuffle": True},
        "py1e, shuffle_block_size 8192, batch_size 32",
    ),
    (
        "mosaicml-streaming StreamingDataset",
        "streaming",
        "MDS",
        {"shuffle": False},
        "shard order, batch_size 32",
    ),
]


def folder_bytes(folder: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(f"*{suffix}"))


def main() -> int:
    """Mix, shards, MDS copy, then every reader; write the loader section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=1.25, help="mix draw rate")
    parser.add_argument("--max-mb", type=int, default=64, help="shards.max_bytes in MiB")
    parser.add_argument("--seed", type=int, default=3, help="corpus seed")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "loader")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.load = os.getloadavg()[0]  # other jobs on a shared machine slow every row alike
    mix, shards, mds = args.work / "mix", args.work / "training_shards", args.work / "mds"
    started = time.perf_counter()
    totals = write_mix(mix, args.docs, args.rate, args.seed)
    mix_seconds = time.perf_counter() - started
    megabytes = totals["text_bytes"] / 1e6
    print(f"mix: {totals} in {mix_seconds:.1f} s", flush=True)

    shards.mkdir(parents=True)
    (args.work / "scratch").mkdir()
    max_bytes = args.max_mb * 2**20
    started = time.perf_counter()
    document = build_shards(
        mix,
        shards,
        args.work / "scratch",
        NUM_SHARDS,
        SEED,
        max_bytes,
        None,
        LocalEngine(args.workers),
    )
    write_json(document, shards / SHARDS_MANIFEST)
    shard_seconds = time.perf_counter() - started
    shutdown_pools()
    assert document["totals"]["samples"] == totals["samples"]
    print(f"shards: {document['totals']} in {shard_seconds:.1f} s", flush=True)

    version = streaming_version()
    mds_seconds = write_mds(shards, mds, max_bytes) if version else None
    print(f"mds: {mds_seconds} s", flush=True)

    results = []
    for label, kind, fmt, options, order in READS:
        if kind == "streaming" and not version:
            results.append((label, fmt, order, {"error": "mosaicml-streaming not installed"}))
            continue
        path = mds if kind == "streaming" else shards
        result = run_reader(kind, path, options)
        if "error" not in result:
            assert result["count"] == totals["samples"], (label, order, result)
            assert result["chars"] == totals["text_chars"], (label, order, result)
        print(label, order, result, flush=True)
        results.append((label, fmt, order, result))

    text = render(
        args, totals, document, megabytes, shard_seconds, mds_seconds, version, results, mds
    )
    write_section(args.out, "loader", text)
    print(text)
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


def render(
    args, totals, document, megabytes, shard_seconds, mds_seconds, version, results, mds
) -> str:
    """The loader section of BENCHMARKS.md."""
    import webdataset
    from streaming_peer import TORCH_STUB

    samples = totals["samples"]
    tar_mb = document["totals"]["bytes"]["webdataset"] / 1e6
    parquet_mb = document["totals"]["bytes"]["parquet"] / 1e6
    lines = [
        "<!-- loader:begin -->",
        "## Reading training shards: corpus_platform's loader, WebDataset, mosaicml-streaming",
        "",
        f"Command: `.bench-venv/bin/python bench/loader_benchmark.py --docs {args.docs} "
        f"--workers {args.workers}` (run by `make bench`), {datetime.now(UTC):%Y-%m-%d}; "
        f"machine: {machine()}; load average {args.load:.1f} when it started.",
        f"Data: {args.docs:,} web-like documents (bench/webcorpus.py, seed {args.seed}; 200 to "
        f"2,000 words) as a training mix drawn at rate {args.rate} "
        f"({totals['rows']:,} rows, **{samples:,} samples**, {megabytes:,.0f} MB of text), "
        f"sharded by training_shards' kernel with `shards.max_bytes` {args.max_mb} MiB: "
        f"{document['totals']['shards']} shards, tar {tar_mb:,.0f} MB, Parquet (zstd) "
        f"{parquet_mb:,.0f} MB"
        + (
            f", MDS copy {folder_bytes(mds, '.mds') / 1e6:,.0f} MB (uncompressed)."
            if mds_seconds
            else "."
        ),
        "",
        "| writing | seconds | samples/s | MB/s |",
        "|---|---:|---:|---:|",
        f"| training_shards kernel (tar via ShardWriter + Parquet, {args.workers} workers) | "
        f"{shard_seconds:.1f} | {samples / shard_seconds:,.0f} | {megabytes / shard_seconds:.1f} |",
    ]
    if mds_seconds:
        lines.append(
            f"| MDSWriter {version} (reading the Parquet shards included, 1 process) | "
            f"{mds_seconds:.1f} | {samples / mds_seconds:,.0f} | {megabytes / mds_seconds:.1f} |"
        )
    lines += [
        "",
        "One epoch, one process, no DataLoader workers (each reader in a fresh process; the "
        "files in the page cache):",
        "",
        "| reader | format | order | seconds | samples/s | MB/s | peak MB (after imports) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for label, fmt, order, result in results:
        name = label if "webdataset" not in label else f"{label} {webdataset.__version__}"
        if "streaming" in label and version:
            name = f"{label} {version}"
        if "error" in result:
            lines.append(f"| {name} | {fmt} | {order} | not measured: {result['error']} | | | |")
            continue
        seconds = result["seconds"]
        lines.append(
            f"| {name} | {fmt} | {order} | {seconds:.1f} | {samples / seconds:,.0f} | "
            f"{megabytes / seconds:.1f} | {result['peak_mb']:,.0f} ({result['imported_mb']:,.0f}) |"
        )
    lines += [
        "",
        "Every reader returned every sample exactly once per epoch (count and total characters "
        "checked). Samples are Python dicts: the loader's hold every Parquet column (or the ones "
        "asked for), WebDataset's the decoded text and JSON metadata, streaming's the MDS "
        "columns (key, text, metadata as JSON).",
    ]
    if TORCH_STUB:
        lines.append(
            "mosaicml-streaming 0.13.0 requires torch, torchvision and transformers and numpy < "
            "2.2 (the project pins 2.4.6); PyPI's Linux torch is the CUDA build, not installed "
            "here. It was installed with `--no-deps` and run with a minimal torch stand-in "
            "(bench/peers/streaming_peer.py: no tensors on this path, distributed reported "
            "unavailable)."
        )
    lines.append("<!-- loader:end -->")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
