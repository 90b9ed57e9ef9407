"""filtered_documents: rows that pass the quality filters; removed rows kept aside with reasons."""

from collections import Counter
from functools import partial

import dagster as dg

from corpus_platform.base.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS
from corpus_platform.base.shards import MANIFEST, write_json
from corpus_platform.config import CorpusConfig, FilterConfig
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.filtering.checks import FILTERED_DOCUMENTS_CHECKS
from corpus_platform.defs.filtering.review import (
    funnel_chart,
    funnel_markdown,
    merged_samples,
    samples_markdown,
)
from corpus_platform.defs.publish import StageOutput, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.filtering.stage import filter_shard
from corpus_platform.store.datasets import candidate_folder


def resolved_filters(corpus: CorpusProject, config: CorpusConfig) -> FilterConfig:
    """The filter config with its blocklist path resolved against the project folder."""
    if config.filters.blocklist is None:
        return config.filters
    return config.filters.model_copy(
        update={"blocklist": str(corpus.root_path / config.filters.blocklist)}
    )


@stage_asset(
    FILTERED_DOCUMENTS_CHECKS,
    deps=[RAW_DOCUMENTS],
    group_name="filtering",
    kinds={"parquet", "dvc"},
    description="Rows kept by the PII, Gopher quality and repetition, C4, URL, code, blocklist, "
    "domain and language filters; removed rows with the first failing filter, its score and "
    "threshold (and every filter they failed) under removed/.",
)
def filtered_documents(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    task = partial(
        filter_shard,
        upstream=corpus.stage_dir(RAW_DOCUMENTS),
        config=resolved_filters(corpus, config),
        seed=config.seed,
    )
    with candidate_folder(corpus.stage_dir(FILTERED_DOCUMENTS)) as staging:
        summaries = corpus.engine(config).map_shards(
            partial(task, staging=staging), range(config.num_shards)
        )
        removed, would_fail, replaced = Counter(), Counter(), Counter()
        for s in summaries:
            removed.update(s.removed_by)
            would_fail.update(s.would_fail)
            replaced.update(s.replacements)
        counts = {
            "rows_in": sum(s.rows_in for s in summaries),
            "rows": sum(s.kept for s in summaries),
            "removed_by_filter": dict(sorted(removed.items())),
            "would_fail_by_filter": dict(sorted(would_fail.items())),
            "replacements": dict(sorted(replaced.items())),
        }
        write_json(counts, staging / MANIFEST)
    extra = {
        "funnel": dg.MetadataValue.md(
            funnel_markdown(counts["rows_in"], removed, would_fail, replaced)
        ),
        "funnel_chart": dg.MetadataValue.md(funnel_chart(counts["rows_in"], removed)),
        "samples": dg.MetadataValue.md(samples_markdown(merged_samples(summaries))),
    }
    yield from publish(corpus, config, FILTERED_DOCUMENTS_CHECKS, counts, extra)
