"""filtered_documents: rows that pass the quality filters; removed rows kept aside with reasons."""

from collections import Counter
from functools import partial

import dagster as dg
import pyarrow.compute as pc

from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS, REMOVALS_HAVE_REASONS
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.filters import FILTER_NAMES, filter_shard
from corpus_platform.store.datasets import (
    MANIFEST,
    iter_shards,
    read_manifest,
    staged_folder,
    write_json,
)


def funnel_markdown(rows_in: int, removed: dict[str, int], would_fail: dict[str, int]) -> str:
    """The filter funnel as a markdown table."""
    lines = ["| filter | removed (first failure) | would fail |", "|---|---:|---:|"]
    lines += [f"| {n} | {removed.get(n, 0)} | {would_fail.get(n, 0)} |" for n in FILTER_NAMES]
    kept = rows_in - sum(removed.values())
    return f"rows in: {rows_in}, rows out: {kept}\n\n" + "\n".join(lines)


@dg.asset(
    name=FILTERED_DOCUMENTS,
    deps=[RAW_DOCUMENTS],
    group_name="filtering",
    kinds={"parquet", "dvc"},
    description="Rows kept by the length and repetition filters; removed rows with the first "
    "failing filter, its score and threshold under removed/.",
)
def filtered_documents(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    upstream = corpus.stage_dir(RAW_DOCUMENTS)
    with staged_folder(corpus.stage_dir(FILTERED_DOCUMENTS)) as staging:
        task = partial(filter_shard, upstream=upstream, staging=staging, config=config.filters)
        summaries = corpus.engine(config).map_shards(task, range(config.num_shards))
        removed, would_fail = Counter(), Counter()
        for s in summaries:
            removed.update(s.removed_by)
            would_fail.update(s.would_fail)
        counts = {
            "rows_in": sum(s.rows_in for s in summaries),
            "rows": sum(s.kept for s in summaries),
            "removed_by_filter": dict(sorted(removed.items())),
            "would_fail_by_filter": dict(sorted(would_fail.items())),
        }
        write_json(counts, staging / MANIFEST)
    funnel = funnel_markdown(counts["rows_in"], removed, would_fail)
    return publish(
        corpus,
        config,
        FILTERED_DOCUMENTS,
        [RAW_DOCUMENTS],
        counts,
        {"funnel": dg.MetadataValue.md(funnel)},
    )


@corpus_check(asset=FILTERED_DOCUMENTS, name=REMOVALS_HAVE_REASONS)
def every_removal_has_reason(corpus: CorpusProject) -> dg.AssetCheckResult:
    """Every removed row names its filter, and kept + removed accounts for every raw row."""
    config = corpus.load()
    folder = corpus.stage_dir(FILTERED_DOCUMENTS)
    removed = missing_reason = 0
    for _, table in iter_shards(folder / "removed", config.num_shards, ["reason"]):
        removed += len(table)
        reasons = table.column("reason")
        missing_reason += reasons.null_count + (pc.sum(pc.equal(reasons, "")).as_py() or 0)
    kept = sum(len(t) for _, t in iter_shards(folder, config.num_shards, ["doc_id"]))
    rows_in = read_manifest(corpus.stage_dir(RAW_DOCUMENTS))["rows"]
    return dg.AssetCheckResult(
        passed=missing_reason == 0 and kept + removed == rows_in,
        metadata={
            "verdict": f"removed rows without a reason: {missing_reason} of {removed}",
            "accounted": f"kept {kept} + removed {removed} = {kept + removed} of {rows_in} rows",
        },
    )
