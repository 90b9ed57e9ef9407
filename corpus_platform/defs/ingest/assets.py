"""raw_documents: raw files normalized to the canonical schema, sharded by doc_id."""

import shutil
from functools import partial

import dagster as dg

from corpus_platform.base.names import RAW_DOCUMENTS
from corpus_platform.base.shards import MANIFEST, write_json
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.ingest.checks import RAW_DOCUMENTS_CHECKS
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.canonical import (
    assemble_shard,
    canonical_schema,
    ingest_counts,
    spill_file,
)
from corpus_platform.kernels.ingest.readers import list_input_files
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.registry import RAW_INPUT


@stage_asset(
    RAW_DOCUMENTS_CHECKS,
    group_name="ingest",
    kinds={"parquet", "dvc"},
    description="Raw jsonl / jsonl.gz / parquet / csv files mapped to the canonical schema, "
    "with a content hash and the raw file and row of every document.",
)
def raw_documents(context: dg.AssetExecutionContext, corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    root = corpus.raw_dir(config)
    files = list_input_files(root)
    engine = corpus.engine(config)
    with candidate_folder(corpus.stage_dir(RAW_DOCUMENTS)) as staging:
        spill = partial(spill_file, files=files, root=root, config=config, staging=staging)
        summaries = engine.map_shards(spill, range(len(files)))
        assemble = partial(
            assemble_shard,
            staging=staging,
            schema=canonical_schema(config.input.features, config.records_licences),
        )
        shards = engine.map_shards(assemble, range(config.num_shards))
        shutil.rmtree(staging / "_spill", ignore_errors=True)
        counts = ingest_counts([f.relative_to(root).as_posix() for f in files], summaries)
        manifest = {"rows": counts["rows"], "rows_per_file": counts["rows_per_file"]}
        write_json(manifest, staging / MANIFEST)
    for empty in (s.shard for s in shards if s.rows == 0):
        context.log.warning(f"shard {empty} of {RAW_DOCUMENTS} is empty")
    if counts["replaced_chars"]:
        context.log.warning(
            f"{counts['replaced_chars']} undecodable bytes replaced with U+FFFD "
            f"(input.decode_errors: replace): {counts['replaced_chars_per_file']}"
        )
    yield from publish(corpus, config, RAW_DOCUMENTS_CHECKS, counts, inputs={RAW_INPUT: root})
