"""raw_documents: raw files normalized to the canonical schema, sharded by doc_id."""

import shutil
from functools import partial

import dagster as dg
import pyarrow.compute as pc

from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.names import EXPECTATIONS, IDS_UNIQUE, RAW_DOCUMENTS
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest import (
    assemble_shard,
    canonical_schema,
    ingest_counts,
    spill_file,
)
from corpus_platform.kernels.readers import list_input_files
from corpus_platform.store.datasets import MANIFEST, iter_shards, staged_folder, write_json
from corpus_platform.store.registry import RAW_INPUT


@dg.asset(
    name=RAW_DOCUMENTS,
    group_name="ingest",
    kinds={"parquet", "dvc"},
    description="Raw jsonl / jsonl.gz / parquet / csv files mapped to the canonical schema, "
    "with a content hash and the raw file and row of every document.",
)
def raw_documents(context: dg.AssetExecutionContext, corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    root = corpus.raw_dir(config)
    files = list_input_files(root)
    engine = corpus.engine(config)
    with staged_folder(corpus.stage_dir(RAW_DOCUMENTS)) as staging:
        spill = partial(spill_file, files=files, root=root, config=config, staging=staging)
        summaries = engine.map_shards(spill, range(len(files)))
        assemble = partial(
            assemble_shard, staging=staging, schema=canonical_schema(config.input.features)
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
    return publish(corpus, config, RAW_DOCUMENTS, [], counts, inputs={RAW_INPUT: root})


@corpus_check(asset=RAW_DOCUMENTS, name=IDS_UNIQUE)
def ids_unique(corpus: CorpusProject) -> dg.AssetCheckResult:
    """Every doc_id occurs once. A row's shard is a function of its id, so per-shard suffices."""
    config = corpus.load()
    rows, repeated = 0, []
    for _, table in iter_shards(corpus.stage_dir(RAW_DOCUMENTS), config.num_shards, ["doc_id"]):
        rows += len(table)
        counts = pc.value_counts(table.column("doc_id"))
        repeated += pc.filter(
            counts.field("values"), pc.greater(counts.field("counts"), 1)
        ).to_pylist()
    return dg.AssetCheckResult(
        passed=not repeated,
        metadata={
            "verdict": f"doc_ids occurring more than once: {len(repeated)} of {rows} rows",
            "duplicated_ids": sorted(repeated)[:10],
        },
    )


@corpus_check(asset=RAW_DOCUMENTS, name=EXPECTATIONS)
def great_expectations_suite(corpus: CorpusProject) -> dg.AssetCheckResult:
    """The Great Expectations suite (schema, non-null unique ids, types, declared value ranges)
    passes on every shard; a failure names the expectation, the column and example rows."""
    from corpus_platform.kernels import expectations  # Great Expectations is slow to import

    config = corpus.load()
    suite = expectations.build_suite(config.input.features, config.input.ranges)
    validate = partial(
        expectations.validate_shard,
        folder=corpus.stage_dir(RAW_DOCUMENTS),
        features=config.input.features,
        ranges=config.input.ranges,
    )
    per_shard = corpus.engine(config).map_shards(validate, range(config.num_shards))
    failures = [failure for shard in per_shard for failure in shard]
    return dg.AssetCheckResult(
        passed=not failures,
        metadata={
            "verdict": f"failed expectations: {len(failures)} "
            f"({len(suite.expectations)} expectations x {config.num_shards} shards)",
            "failures": failures[:20],
        },
    )
