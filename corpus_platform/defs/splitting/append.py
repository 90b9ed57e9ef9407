"""split_documents in an append: the published split taken as it is, the new rows placed
around it (:mod:`corpus_platform.kernels.splitting.append`)."""

from collections import Counter
from functools import partial
from pathlib import Path

import dagster as dg

from corpus_platform.base.generations import link_published
from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS, SPLIT_DOCUMENTS
from corpus_platform.base.shards import read_manifest
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.generations import BuildPlan, dedup_texts
from corpus_platform.defs.publish import anchored_to
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.manifest import licence_counts, split_counts
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.append import (
    AppendSplit,
    append_graph,
    asof_by_entity,
    place_append,
    published_anchors,
    spill_history,
    split_append_shard,
)
from corpus_platform.kernels.splitting.temporal import Cutoffs
from corpus_platform.store.datasets import candidate_folder


def append_split(
    corpus: CorpusProject, config: CorpusConfig, build: BuildPlan, scratch: Path
) -> tuple[dict, dict]:
    """Take the published split as it is and place the new dedup generations around it as the
    next generation (:mod:`corpus_platform.kernels.splitting.append`); the manifest and the
    metadata."""
    assert build.published is not None
    engine = corpus.engine(config)
    previous = read_manifest(build.published)
    totals = Counter({**previous["split_sizes"], **previous.get("dropped", {})})
    appended: dict[str, object] = {}
    with candidate_folder(corpus.stage_dir(SPLIT_DOCUMENTS)) as staging:
        link_published(build.published, staging)
        if build.new:
            found = place_appended_rows(corpus, config, build, scratch, staging)
            totals.update(found.pop("rows"))
            appended = found
        cutoffs = Cutoffs.from_dict(previous["cutoffs"]) if previous.get("cutoffs") else None
        counts = split_counts(config, totals, cutoffs) | licence_counts(config, engine, staging)
        build.write_manifest(staging, counts, counts["rows"])
    extra = {"appended": dg.MetadataValue.json(appended)} if appended else {}
    return counts | appended | anchored_to(corpus, build.published), extra


def place_appended_rows(
    corpus: CorpusProject, config: CorpusConfig, build: BuildPlan, scratch: Path, staging: Path
) -> dict:
    """Run the append's placement on the engine; rows placed per split and reason, the
    components it made, joined or bridged, and the links through dropped rows it counted."""
    assert build.published is not None
    engine, upstream = corpus.engine(config), corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    previous = read_manifest(build.published)
    cutoffs = Cutoffs.from_dict(previous["cutoffs"]) if previous.get("cutoffs") else None
    generations = tuple(sorted(int(g) for g in build.new))
    split = AppendSplit(
        config.split.mode,
        config.split.ratios,
        config.seed,
        generations,
        build.generation,
        scratch,
        cutoffs,
        config.asof_features,
        dedup_texts(corpus, generations),
    )
    shards, n = range(config.num_shards), config.num_shards
    graph = partial(append_graph, upstream=upstream, split=split, num_shards=n)
    graph = partial(
        graph, link_dropped=config.split.link_dropped, params=DedupParams.from_config(config)
    )
    links = engine.map_shards(graph, [0])[0]
    engine.map_shards(partial(published_anchors, published=build.published, split=split), shards)
    components = engine.map_shards(partial(place_append, split=split, num_shards=n), [0])[0]
    if split.asof:
        history = partial(spill_history, upstream=upstream, published=build.published, split=split)
        engine.map_shards(partial(history, num_shards=n), shards)
        engine.map_shards(partial(asof_by_entity, split=split, num_shards=n), shards)
    write = partial(split_append_shard, upstream=upstream, staging=staging, split=split)
    rows: Counter[str] = Counter()
    for placed in engine.map_shards(write, shards):
        rows.update(placed)
    through = {**links["through_dropped"], "join_entities": config.split.link_dropped}
    return {
        "rows": rows,
        "append_components": components,
        "links_through_dropped_rows": through,
        "links_too_short_to_leak": links["too_short"],
    }
