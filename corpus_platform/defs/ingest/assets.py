"""raw_documents: raw files normalized to the canonical schema, sharded by doc_id and kept
batch by batch (one raw file, one batch; a batch's files are never rewritten)."""

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.files import remember
from corpus_platform.base.names import RAW_DOCUMENTS, batch_key
from corpus_platform.base.shards import MANIFEST, write_json
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.batches import (
    RAW_BATCHES,
    PublishedBatches,
    link_batch,
    published_batches,
    requested_batches,
)
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.generations import STAGE_CODE
from corpus_platform.defs.ingest.checks import RAW_DOCUMENTS_CHECKS
from corpus_platform.defs.publish import StageOutput, pinning_inputs, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.batches import (
    BatchPlan,
    batch_record,
    file_digests,
    plan_batches,
    summary_of,
)
from corpus_platform.kernels.ingest.canonical import (
    FileSummary,
    assemble_shard,
    canonical_schema,
    canonicalize_file,
    ingest_counts,
)
from corpus_platform.kernels.ingest.readers import list_input_files
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version
from corpus_platform.store.registry import RAW_INPUT

RAW_DIGESTS = Path(".corpus") / "cache" / "raw-digests.json"  # size, mtime, inode -> sha256

# The settings a published batch was read with; a change reads every batch again.
INGEST_SETTINGS: dict[str, tuple[str, ...]] = {
    "input": (),
    "num_shards": (),
    "seed": (),
    "licenses": (),
}


def read_new_batches(
    corpus: CorpusProject, config: CorpusConfig, files: list[Path], plan: BatchPlan, staging: Path
) -> dict[str, FileSummary]:
    """Canonicalize the plan's new raw files into their batch files under ``staging`` (the files
    too large to hold in memory spilled, then assembled shard by shard); what reading each one
    found, by name."""
    root, engine = corpus.raw_dir(config), corpus.engine(config)
    indices = [plan.names.index(name) for name in plan.new]
    read = partial(canonicalize_file, files=files, root=root, config=config, staging=staging)
    summaries = engine.map_shards(read, indices)
    hashed = [pair for summary in summaries for pair in summary.hashed]
    spilled = tuple(
        (i, batch_key(plan.names[i]))
        for i, summary in zip(indices, summaries, strict=True)
        if summary.spilled
    )
    if spilled:
        schema = canonical_schema(config.input.features, config.records_licences)
        assemble = partial(assemble_shard, staging=staging, schema=schema, batches=spilled)
        for shard in engine.map_shards(assemble, range(config.num_shards)):
            hashed += shard.hashed
    for md5, identity in hashed:
        if identity is not None:  # the file did not change while it was read
            remember(identity, md5)
    shutil.rmtree(staging / "_spill", ignore_errors=True)
    return dict(zip(plan.new, summaries, strict=True))


def batch_files(
    files: list[Path], root: Path, published: PublishedBatches, context: dg.AssetExecutionContext
) -> tuple[list[Path], list[str]]:
    """The raw files this run's stage holds: the run's partitions (every file, for a run
    without partitions) and every published batch; and the names of the files left for later."""
    requested = requested_batches(context)
    chosen, waiting = [], []
    for file in files:
        name = file.relative_to(root).as_posix()
        take = requested is None or name in requested or name in published.batches
        (chosen if take else waiting).append(file if take else name)
    return chosen, waiting


@dataclass(frozen=True)
class RawBatches:
    """The raw files a run's stage holds (paths and names), their SHA-256s, the published
    batches and what to read of them."""

    files: list[Path]
    names: list[str]
    digests: dict[str, str]
    published: PublishedBatches
    plan: BatchPlan


def raw_batches(
    context: dg.AssetExecutionContext, corpus: CorpusProject, config: CorpusConfig, root: Path
) -> RawBatches:
    """The raw files of this run's stage, hashed (their MD5 too, which the raw folder's pin then
    takes instead of reading them again), and the plan of which to read."""
    published = published_batches(corpus, RAW_DOCUMENTS, config, INGEST_SETTINGS, "ingest")
    files, waiting = batch_files(list_input_files(root), root, published, context)
    if waiting:
        context.log.info(f"{len(waiting)} raw files not in this run's partitions: {waiting[:10]}")
    names = [f.relative_to(root).as_posix() for f in files]
    digests = file_digests(dict(zip(names, files, strict=True)), corpus.root_path / RAW_DIGESTS)
    plan = plan_batches(names, digests, published.batches, corpus.reingest, published.snapshot)
    return RawBatches(files, names, digests, published, plan)


def ingest_candidate(
    context: dg.AssetExecutionContext, corpus: CorpusProject, config: CorpusConfig, raw: RawBatches
) -> dict[str, Any]:
    """Write raw_documents' candidate: every new raw file read as a batch, every published
    batch linked as it is; its counts."""
    plan = raw.plan
    with candidate_folder(corpus.stage_dir(RAW_DOCUMENTS)) as staging:
        summaries = read_new_batches(corpus, config, raw.files, plan, staging)
        for name in plan.kept:
            summaries[name] = summary_of(raw.published.batches[name])
            for shard in range(config.num_shards):
                link_batch(raw.published.folder, staging, shard, batch_key(name))
        counts = ingest_counts(raw.names, [summaries[name] for name in raw.names])
        batches = {n: batch_record(raw.digests[n], summaries[n]) for n in raw.names}
        manifest = {"rows": counts["rows"], "rows_per_file": counts["rows_per_file"]}
        write_json({**manifest, "batches": batches}, staging / MANIFEST)
    counts |= {"batches_read": len(plan.new), "batches_kept": len(plan.kept)}
    counts[STAGE_CODE] = stage_code_version("ingest")
    context.log.info(
        f"raw batches: {len(plan.new)} read, {len(plan.kept)} kept as published"
        + (f", {len(plan.gone)} gone (raw file removed): {list(plan.gone)}" if plan.gone else "")
    )
    if counts["replaced_chars"]:
        context.log.warning(
            f"{counts['replaced_chars']} undecodable bytes replaced with U+FFFD "
            f"(input.decode_errors: replace): {counts['replaced_chars_per_file']}"
        )
    return counts


@stage_asset(
    RAW_DOCUMENTS_CHECKS,
    group_name="ingest",
    partitions_def=RAW_BATCHES,
    kinds={"parquet", "dvc"},
    description="Raw jsonl / jsonl.gz / parquet / csv files mapped to the canonical schema, "
    "with a content hash and the raw file and row of every document. Each raw file is a batch: "
    "a rebuild reads only new files and keeps every published batch's files as they are. "
    "Partitioned by raw batch (one partition per raw file).",
)
def raw_documents(context: dg.AssetExecutionContext, corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    root = corpus.raw_dir(config)
    raw = raw_batches(context, corpus, config, root)  # hashed before the pin, which takes MD5s
    with pinning_inputs(corpus, config, RAW_DOCUMENTS, {RAW_INPUT: root}) as pins:  # while read
        counts = ingest_candidate(context, corpus, config, raw)
        yield from publish(corpus, config, RAW_DOCUMENTS_CHECKS, counts, pins=pins)
