"""training_shards' draw audit on the engine, partitioned through disk.

Every tar and Parquet file's ``(format, key, doc_id, draw)`` rows are scattered by the stable
hash of ``doc_id`` and, for the repeated-key count, ``(format, key)`` by the hash of ``key``;
the mix's ``(doc_id, times_drawn)`` are scattered by ``doc_id`` too. One task per partition
compares its samples with its draws (:func:`corpus_platform.kernels.sharding.audit.draw_report`)
and the per-partition reports are added up, so no process holds every sample id.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import read_generations
from corpus_platform.base.names import PARQUET, WEBDATASET
from corpus_platform.engine import Engine, batch_count, batch_size
from corpus_platform.engine.graph import gathered, scatter
from corpus_platform.kernels.dedup.params import partitions_for
from corpus_platform.kernels.sharding.audit import (
    DrawReport,
    draw_report,
    sample_ids_of,
    sample_ids_table,
)

SAMPLE_SCHEMA = sample_ids_table([], [], [], []).schema
KEY_SCHEMA = pa.schema([SAMPLE_SCHEMA.field("format"), SAMPLE_SCHEMA.field("key")])
DRAW_SCHEMA = pa.schema([("doc_id", pa.string()), ("times_drawn", pa.int64())])
SAMPLE_ROW_BYTES = 300  # a sample id row while compared: key, doc id, draw, group-by state
TAR_SAMPLE_BYTES = 1024  # the least a tar sample takes: two members of a 512-byte header each
EXAMPLES = 10


FILES_LIST = "files.json"  # the audited files, written once for every task to read
FILE_BATCH = 32  # files read per engine task, at most


def scatter_samples(batch: int, folder: Path, partitions: int, size: int = FILE_BATCH) -> int:
    """Scatter the sample ids of the ``batch``-th run of ``size`` files listed in
    ``folder/files.json`` by doc id and by key; return their number. The list is read here, so
    a task's arguments stay small however many files there are."""
    names = json.loads((folder / FILES_LIST).read_text(encoding="utf-8"))
    mine = names[batch * size : (batch + 1) * size]
    table = pa.concat_tables([SAMPLE_SCHEMA.empty_table(), *(sample_ids_of(Path(n)) for n in mine)])
    scatter(table, "doc_id", folder / "by-doc", batch, partitions)
    scatter(table.select(KEY_SCHEMA.names), "key", folder / "by-key", batch, partitions)
    return len(table)


def scatter_draws(
    shard: int,
    mix: Path,
    folder: Path,
    partitions: int,
    generations: tuple[int, ...] | None = None,
) -> int:
    """Scatter one mix shard's rows drawn at least once (of the mix generations
    ``generations`` only, when given) by doc id; return their number."""
    table = read_generations(mix, shard, generations, DRAW_SCHEMA.names).cast(DRAW_SCHEMA)
    table = table.filter(pc.greater(table.column("times_drawn"), 0))
    scatter(table, "doc_id", folder / "draws", shard, partitions)
    return len(table)


def partition_reports(part: int, folder: Path) -> list[DrawReport]:
    """Both formats' reports on one partition's samples, draws and keys."""
    samples = gathered(folder / "by-doc", part, SAMPLE_SCHEMA)
    draws = gathered(folder / "draws", part, DRAW_SCHEMA)
    keys = gathered(folder / "by-key", part, KEY_SCHEMA)
    return [draw_report(fmt, samples, draws, keys) for fmt in (WEBDATASET, PARQUET)]


def merge_reports(reports: list[DrawReport]) -> DrawReport:
    """One format's partition reports added up (examples: the first in sorted order)."""
    first = reports[0]
    return replace(
        first,
        draws=sum(r.draws for r in reports),
        samples=sum(r.samples for r in reports),
        wrong=sum(r.wrong for r in reports),
        duplicate_keys=sum(r.duplicate_keys for r in reports),
        examples=tuple(sorted(e for r in reports for e in r.examples)[:EXAMPLES]),
    )


def draw_reports(
    files: list[Path],
    mix: Path,
    num_shards: int,
    work: Path,
    engine: Engine,
    memory_mb: int,
    partitions: int | None = None,
    generations: tuple[int, ...] | None = None,
) -> list[DrawReport]:
    """Compare the samples of ``files`` (tar and Parquet) with the draws of the mix under
    ``mix`` (of its generations ``generations`` only, when given: an append's new shards),
    partitioned through ``work`` so that one partition's rows fit in half of ``memory_mb`` (or
    into ``partitions``); one report per format (WebDataset, Parquet). ``work`` is emptied
    first."""
    shutil.rmtree(work, ignore_errors=True)
    if partitions is None:
        tar_bytes = sum(f.stat().st_size for f in files if f.suffix == ".tar")
        rows = 2 * (tar_bytes // TAR_SAMPLE_BYTES)  # at most: both formats hold every sample
        partitions = partitions_for(rows, SAMPLE_ROW_BYTES, memory_mb)
    work.mkdir(parents=True)
    (work / FILES_LIST).write_text(json.dumps([str(f) for f in files]), encoding="utf-8")
    size = batch_size(len(files), FILE_BATCH)
    engine.map_shards(
        partial(scatter_samples, folder=work, partitions=partitions, size=size),
        range(batch_count(len(files), size)),
    )
    draws = partial(scatter_draws, mix=mix, folder=work, partitions=partitions)
    engine.map_shards(partial(draws, generations=generations), range(num_shards))
    parts = engine.map_shards(partial(partition_reports, folder=work), range(partitions))
    return [merge_reports([p[index] for p in parts]) for index in range(2)]
