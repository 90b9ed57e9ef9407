"""filtered_documents: rows that pass the quality filters; removed rows kept aside with reasons.

Like ``raw_documents``, the stage keeps every raw batch in files of its own: a rebuild filters
only the batches it has not filtered with the same settings, blocklist and code, and takes the
published files and findings of every other batch as they are.
"""

from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.base.generations import unit_digest
from corpus_platform.base.hashing import fingerprint
from corpus_platform.base.names import BATCH_DIGESTS, FILTERED_DOCUMENTS, RAW_DOCUMENTS, batch_key
from corpus_platform.base.shards import MANIFEST, read_manifest, write_json
from corpus_platform.config import CorpusConfig, FilterConfig
from corpus_platform.defs.batches import (
    RAW_BATCHES,
    PublishedBatches,
    link_batch,
    published_batches,
)
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.filtering.checks import FILTERED_DOCUMENTS_CHECKS
from corpus_platform.defs.filtering.review import (
    funnel_chart,
    funnel_markdown,
    merged_samples,
    samples_markdown,
)
from corpus_platform.defs.generations import STAGE_CODE
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.filtering.batch_summaries import (
    from_record,
    merged,
    read_summary,
    summary_path,
    write_summary,
)
from corpus_platform.kernels.filtering.filters import load_blocklist
from corpus_platform.kernels.filtering.stage import FilterSummary, filter_batch_task
from corpus_platform.store.datasets import candidate_folder
from corpus_platform.store.provenance import stage_code_version

# The settings a published batch was filtered with; a change filters every batch again.
FILTER_SETTINGS: dict[str, tuple[str, ...]] = {
    "filters": (),
    "input": (),
    "num_shards": (),
    "seed": (),
}
BLOCKLIST_DIGEST = "blocklist_digest"
# Filter tasks whose findings are merged before the next are started: a task's review samples
# are tens of KB, and a corpus of many raw batches has batches x shards tasks (3,200 for
# 1,000,000 benchmark documents), which the Dagster process would otherwise hold at once.
MERGE_EVERY = 256


def resolved_filters(corpus: CorpusProject, config: CorpusConfig) -> FilterConfig:
    """The filter config with its blocklist path resolved against the project folder."""
    if config.filters.blocklist is None:
        return config.filters
    return config.filters.model_copy(
        update={"blocklist": str(corpus.root_path / config.filters.blocklist)}
    )


def filter_new_batches(
    corpus: CorpusProject, config: CorpusConfig, names: list[str], staging: Path
) -> dict[str, FilterSummary]:
    """Filter every shard file of the raw batches ``names`` into ``staging``; their findings."""
    tasks = tuple((shard, batch_key(n)) for n in names for shard in range(config.num_shards))
    task = partial(
        filter_batch_task,
        tasks=tasks,
        upstream=corpus.stage_dir(RAW_DOCUMENTS),
        staging=staging,
        config=resolved_filters(corpus, config),
        seed=config.seed,
    )
    found = {batch_key(name): FilterSummary(shard=-1, batch=batch_key(name)) for name in names}
    engine = corpus.engine(config)
    for start in range(0, len(tasks), MERGE_EVERY):
        summaries = engine.map_shards(task, range(start, min(start + MERGE_EVERY, len(tasks))))
        for key in {s.batch for s in summaries}:
            found[key] = merged([found[key], *(s for s in summaries if s.batch == key)], key)
    return {name: found[batch_key(name)] for name in names}


def batch_digests(
    staging: Path, published: PublishedBatches, kept: list[str], names: list[str]
) -> dict[str, str]:
    """Every batch's digest (its kept rows, removed rows and findings: what dedup appends by):
    a kept batch's as published, a new one's from its files."""
    recorded = read_manifest(published.folder).get(BATCH_DIGESTS, {}) if published.folder else {}
    return {
        name: recorded.get(name) if name in kept and name in recorded else unit_digest(staging, key)
        for name, key in ((n, batch_key(n)) for n in names)
    }


@stage_asset(
    FILTERED_DOCUMENTS_CHECKS,
    deps=[RAW_DOCUMENTS],
    group_name="filtering",
    partitions_def=RAW_BATCHES,
    kinds={"parquet", "dvc"},
    description="Rows kept by the PII, Gopher quality and repetition, C4, URL, code, blocklist, "
    "domain and language filters; removed rows with the first failing filter, its score and "
    "threshold (and every filter they failed) under removed/. Partitioned by raw batch like "
    "raw_documents, whose batches it always holds.",
)
def filtered_documents(context: dg.AssetExecutionContext, corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    raw = read_manifest(corpus.stage_dir(RAW_DOCUMENTS))["batches"]
    blocklist = fingerprint(sorted(load_blocklist(resolved_filters(corpus, config).blocklist)))
    published = published_batches(
        corpus, FILTERED_DOCUMENTS, config, FILTER_SETTINGS, "filtering",
        {BLOCKLIST_DIGEST: blocklist},
    )  # fmt: skip
    kept = [n for n in raw if published.batches.get(n) == raw[n]["sha256"]]
    with candidate_folder(corpus.stage_dir(FILTERED_DOCUMENTS)) as staging:
        new = [n for n in raw if n not in kept]
        found = filter_new_batches(corpus, config, new, staging)
        for name in new:
            write_summary(staging, found[name], raw[name]["sha256"])
        for name, key in ((n, batch_key(n)) for n in kept):
            for shard in range(config.num_shards):
                link_batch(published.folder, staging, shard, key)
                link_batch(published.folder / "removed", staging / "removed", shard, key)
            summary_path(staging, key).parent.mkdir(parents=True, exist_ok=True)
            summary_path(staging, key).hardlink_to(summary_path(published.folder, key))
            found[name] = from_record(read_summary(published.folder, key), key)
        total = merged(found[name] for name in sorted(raw))
        counts = {
            "rows_in": total.rows_in,
            "rows": total.kept,
            "removed_by_filter": dict(sorted(total.removed_by.items())),
            "would_fail_by_filter": dict(sorted(total.would_fail.items())),
            "replacements": dict(sorted(total.replacements.items())),
        }
        batches = {name: raw[name]["sha256"] for name in sorted(raw)}
        digests = batch_digests(staging, published, kept, sorted(raw))
        write_json({**counts, "batches": batches, BATCH_DIGESTS: digests}, staging / MANIFEST)
    context.log.info(f"raw batches: {len(new)} filtered, {len(kept)} kept as published")
    counts |= {"batches_filtered": len(new), "batches_kept": len(kept), BLOCKLIST_DIGEST: blocklist}
    counts[STAGE_CODE] = stage_code_version("filtering")
    extra = {
        "funnel": dg.MetadataValue.md(
            funnel_markdown(total.rows_in, total.removed_by, total.would_fail, total.replacements)
        ),
        "funnel_chart": dg.MetadataValue.md(funnel_chart(total.rows_in, total.removed_by)),
        "samples": dg.MetadataValue.md(samples_markdown(merged_samples(list(found.values())))),
    }
    yield from publish(corpus, config, FILTERED_DOCUMENTS_CHECKS, counts, extra)
