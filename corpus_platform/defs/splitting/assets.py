"""split_documents: train / validation / test decided from stable keys, never from row order."""

from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path

import dagster as dg
import pyarrow as pa

from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    EPOCH_MOVES,
    FILTERED_DOCUMENTS,
    SIMILAR_PAIRS,
    SPLIT_DOCUMENTS,
    SPLITS,
)
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import (
    MANIFEST,
    read_manifest,
    write_parquet,
)
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import stage_asset
from corpus_platform.defs.generations import (
    STAGE_CODE,
    BuildPlan,
    build_plan,
    dedup_texts,
    upstream_generations,
)
from corpus_platform.defs.publish import StageOutput, anchored_to, publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.append import append_split
from corpus_platform.defs.splitting.checks import SPLIT_DOCUMENTS_CHECKS
from corpus_platform.defs.splitting.manifest import licence_counts, split_counts
from corpus_platform.defs.splitting.neighbour_search import (
    neighbour_links,
    search_held_out_neighbours,
)
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.anchors import merge_anchors, shard_anchors
from corpus_platform.kernels.splitting.asof import compute_entity_shard, spill_by_entity
from corpus_platform.kernels.splitting.component_graph import plan_components_on_engine
from corpus_platform.kernels.splitting.components import ComponentReport, ComponentStats
from corpus_platform.kernels.splitting.cut import ComponentPlan
from corpus_platform.kernels.splitting.leakage import moved_into_train
from corpus_platform.kernels.splitting.links import add_pairs, split_links
from corpus_platform.kernels.splitting.split import BRIDGE, SplitPlan, split_shard
from corpus_platform.kernels.splitting.temporal import quantile_cutoffs
from corpus_platform.store.datasets import candidate_folder, candidate_path
from corpus_platform.store.provenance import stage_code_version


def compute_asof(engine: Engine, upstream: Path, scratch: Path, config: CorpusConfig) -> None:
    """Run the two shuffle passes of the as-of features into ``scratch``."""
    shards, n, features = range(config.num_shards), config.num_shards, config.asof_features
    engine.map_shards(
        partial(
            spill_by_entity, upstream=upstream, scratch=scratch, features=features, num_shards=n
        ),
        shards,
    )
    engine.map_shards(
        partial(compute_entity_shard, scratch=scratch, features=features, num_shards=n), shards
    )


def component_plan(
    upstream: Path,
    config: CorpusConfig,
    scratch: Path,
    engine: Engine,
    extra_pairs: pa.Table | None = None,
    texts: Path | None = None,
) -> ComponentPlan | None:
    """Group modes: components (on the engine, labels under ``scratch``), their report and any
    cut; fails the step on an oversize component the config does not cut (or that cannot be
    cut), naming it and the fix. ``extra_pairs``: similar pairs the split links besides the
    dedup stage's (:func:`link_missed_neighbours`); ``texts``: the folder holding the rows'
    texts, which the too-short rule measures (``filtered_documents``; ``upstream`` for None)."""
    if config.split.mode not in ("group", "time_group"):
        return None
    clusters, pairs = upstream / "clusters", upstream / SIMILAR_PAIRS
    params = DedupParams.from_config(config)
    clusters, pairs, through, short = split_links(
        clusters,
        pairs,
        texts or upstream,
        config.num_shards,
        scratch / "links",
        engine,
        params,
        config.split.link_dropped,
    )
    if extra_pairs is not None and len(extra_pairs):
        engine.map_shards(partial(add_pairs, pairs_file=pairs, extra=extra_pairs), [0])
    plan = plan_components_on_engine(
        upstream,
        pairs,
        config.num_shards,
        config.split,
        config.seed,
        scratch / "components",
        engine,
        config.engine.memory_mb,
        clusters,
    )
    plan = replace(
        plan,
        through_dropped={**through.as_dict(), "join_entities": config.split.link_dropped},
        too_short=short.as_dict(),
    )
    if plan.error is not None:
        raise dg.Failure(
            description=redact_text(plan.error),
            metadata=component_metadata(plan),
        )
    return plan


def make_plan(
    upstream: Path, scratch: Path, config: CorpusConfig, linked: ComponentPlan | None
) -> SplitPlan:
    """Components (group modes), cutoffs (time modes) and as-of features for the split."""
    cutoffs = (
        quantile_cutoffs(upstream, config.num_shards, config.split.ratios, config.split.gap_days)
        if config.split.uses_time
        else None
    )
    return SplitPlan(
        config.split.mode,
        config.split.ratios,
        config.seed,
        linked.components if linked else {},
        cutoffs,
        config.asof_features,
        scratch,
        linked.bridges if linked else frozenset(),
        linked.labels if linked else None,
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _components_table(stats: tuple[ComponentStats, ...]) -> str:
    lines = [
        "| component | rows | share | entities | joins: entity / cluster / pair | sample doc_ids |",
        "|---|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {_cell(s.name)} | {s.rows:,} | {s.share:.1%} | {s.entities:,} | "
        f"{s.entity_joins:,} / {s.cluster_joins:,} / {s.pair_joins:,} | "
        f"{_cell(', '.join(s.sample_doc_ids))} |"
        for s in stats
    ]
    return redact_text("\n".join(lines))


def _histogram(report: ComponentReport) -> str:
    lines = ["| rows per component | components | rows | share of rows |", "|---|---:|---:|---:|"]
    lines += [
        f"| {low if low == high else f'{low}-{high}'} | {n:,} | {rows:,} | "
        f"{rows / (report.rows or 1):.1%} |"
        for low, high, n, rows in report.histogram
    ]
    return "\n".join(lines)


def component_metadata(plan: ComponentPlan) -> dict[str, dg.MetadataValue]:
    """The component-size histogram, the largest components and any cut, for the UI."""
    report = plan.report
    largest = report.largest[0].share if report.largest else 0.0
    metadata = {
        "component_sizes": dg.MetadataValue.md(_histogram(report)),
        "largest_components": dg.MetadataValue.md(_components_table(report.largest)),
        "largest_component_share": dg.MetadataValue.float(round(largest, 6)),
    }
    if plan.through_dropped is not None:
        metadata["links_through_dropped_rows"] = dg.MetadataValue.json(plan.through_dropped)
    if plan.too_short is not None:
        metadata["links_too_short_to_leak"] = dg.MetadataValue.json(plan.too_short)
    if report.oversize:
        metadata["oversize_components"] = dg.MetadataValue.md(_components_table(report.oversize))
    if plan.cuts:
        lines = [
            "| component | pieces | largest piece | rows to train / validation / test | "
            f"{BRIDGE} rows dropped |",
            "|---|---:|---:|---|---:|",
        ]
        lines += [
            f"| {_cell(c.component)} | {c.piece_count:,} | {c.largest_piece:,} | "
            f"{' / '.join(f'{c.split_rows[n]:,}' for n in SPLITS)} | {len(c.bridges):,} |"
            for c in plan.cuts
        ]
        metadata["cut_components"] = dg.MetadataValue.md(redact_text("\n".join(lines)))
        metadata["bridge_rows"] = dg.MetadataValue.int(len(plan.bridges))
        metadata["cut_piece_share"] = dg.MetadataValue.float(round(plan.piece_share or 0.0, 6))
    return metadata


# what decides where a row lands: the seed, the shard count and the split section (minus the
# settings only checks read)
PLACEMENT_SETTINGS = {"seed": (), "num_shards": (), "split": ("tolerance", "recall_sample")}
# what an append must share with the published split: those and the as-of features it computes
APPEND_SETTINGS = {**PLACEMENT_SETTINGS, "asof_features": ()}


def anchor_to_published(
    plan: SplitPlan, corpus: CorpusProject, config: CorpusConfig, engine: Engine
) -> SplitPlan:
    """A group split built with the settings of the published one (same seed, shard count and
    ``split`` section, epoch included) keeps every published row where it is
    (:mod:`~corpus_platform.kernels.splitting.anchors`): the rows appended since are placed
    around them. The anchors of the new components are read from the published split on the
    engine, one shard a task. Any other case places rows from scratch: the first build, a full
    build, a new epoch, and a changed setting, whose moves the stability check reports (a
    changed setting takes effect through a new ``split.epoch``)."""
    if config.split.mode != "group":
        return plan
    published = corpus.published_alike(SPLIT_DOCUMENTS, config, PLACEMENT_SETTINGS)
    if published is None:
        return plan
    parts = engine.map_shards(
        partial(shard_anchors, published=published, name_components=plan.component_names),
        range(config.num_shards),
    )
    return replace(plan, anchors=merge_anchors(parts), published=published)


def record_epoch_moves(published: Path, staging: Path, config: CorpusConfig) -> dict:
    """On a new ``split.epoch``, list the previous epoch's held-out rows that moved into train in
    ``epoch_moves/moved_into_train.parquet`` and return their count for the manifest."""
    if not (published / MANIFEST).is_file():
        return {}
    manifest = read_manifest(published)
    previous_epoch = manifest.get("epoch", 0)
    if previous_epoch == config.split.epoch:
        return {}
    shards = manifest.get("num_shards", config.num_shards)
    moved = moved_into_train(published, staging, config.num_shards, shards)
    write_parquet(moved, staging / EPOCH_MOVES)
    return {
        "epoch_moves": {
            "from_epoch": previous_epoch,
            "to_epoch": config.split.epoch,
            "moved_into_train": len(moved),
        }
    }


@stage_asset(
    SPLIT_DOCUMENTS_CHECKS,
    deps=[DEDUPLICATED_DOCUMENTS, FILTERED_DOCUMENTS],
    group_name="split",
    kinds={"parquet", "dvc"},
    description="train/, validation/, test/ (and dropped/ with reasons). Rows sharing an entity, "
    "a duplicate cluster or a similar pair form one component; its seeded hash bucket (and, in "
    "time modes, the (timestamp, doc_id) windows) picks the split. As-of features are added here. "
    "An append places only the new dedup generations around the published split, which never "
    "moves; a new row that would join two splits is dropped as a bridge.",
)
def split_documents(corpus: CorpusProject) -> StageOutput:
    config = corpus.load()
    upstream, engine = corpus.stage_dir(DEDUPLICATED_DOCUMENTS), corpus.engine(config)
    units = upstream_generations(upstream)
    plan = build_plan(corpus, SPLIT_DOCUMENTS, config, APPEND_SETTINGS, "splitting", units)
    with corpus.scratch(SPLIT_DOCUMENTS) as scratch:
        if plan.appends:
            counts, extra = append_split(corpus, config, plan, scratch)
        else:
            texts = corpus.stage_dir(FILTERED_DOCUMENTS)
            linked = component_plan(upstream, config, scratch, engine, texts=texts)
            counts = place_rows(corpus, config, engine, upstream, scratch, linked, plan)
            linked, counts, found = link_missed_neighbours(
                corpus, config, engine, scratch, linked, counts, plan
            )
            extra = {
                "linked_components": linked.linked if linked else 0,
                **(component_metadata(linked) if linked else {}),
                **found,
            }
    counts |= plan.as_counts() | {STAGE_CODE: stage_code_version("splitting")}
    yield from publish(corpus, config, SPLIT_DOCUMENTS_CHECKS, counts, extra)


def place_rows(
    corpus: CorpusProject,
    config: CorpusConfig,
    engine: Engine,
    upstream: Path,
    scratch: Path,
    linked: ComponentPlan | None,
    build: BuildPlan,
) -> dict:
    """Write every split shard into the stage's candidate folder as generation 0; return the
    manifest."""
    with candidate_folder(corpus.stage_dir(SPLIT_DOCUMENTS)) as staging:
        if config.asof_features:
            compute_asof(engine, upstream, scratch, config)
        plan = anchor_to_published(
            make_plan(upstream, scratch, config, linked), corpus, config, engine
        )
        texts, totals = dedup_texts(corpus), Counter[str]()
        place = partial(split_shard, upstream=upstream, staging=staging, plan=plan, texts=texts)
        for placed in engine.map_shards(place, range(config.num_shards)):
            totals.update(placed)
        counts = split_counts(config, totals, plan.cutoffs)
        counts |= record_epoch_moves(corpus.stage_dir(SPLIT_DOCUMENTS), staging, config)
        counts |= licence_counts(config, engine, staging)
        build.write_manifest(staging, counts, counts["rows"])
    return counts | anchored_to(corpus, plan.published)


# rounds of search and relink before the split gives up and lets its check report the rest
NEIGHBOUR_ROUNDS = 5


def link_missed_neighbours(
    corpus: CorpusProject,
    config: CorpusConfig,
    engine: Engine,
    scratch: Path,
    linked: ComponentPlan | None,
    counts: dict,
    build: BuildPlan,
) -> tuple[ComponentPlan | None, dict, dict[str, dg.MetadataValue]]:
    """Group modes: run the neighbour check's search on the candidate and, while it finds a
    held-out row with a train neighbour the dedup stage never linked (two rows of an LSH bucket
    it linked as a star), link the pair and place the rows again
    (:mod:`~corpus_platform.defs.splitting.neighbour_search`). Each round joins components, so
    the search ends; the pairs linked are in the metadata."""
    if linked is None:
        return linked, counts, {}
    upstream = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    candidate = candidate_path(corpus.stage_dir(SPLIT_DOCUMENTS))
    found: list[tuple[str, str]] = []
    searches = 0
    while searches < NEIGHBOUR_ROUNDS:
        search = search_held_out_neighbours(corpus, candidate)
        searches += 1
        if not search.report.pairs:
            break
        found += search.report.pairs
        pairs = neighbour_links(candidate, config.num_shards, found, search.params, engine)
        texts = corpus.stage_dir(FILTERED_DOCUMENTS)
        linked = component_plan(upstream, config, scratch, engine, pairs, texts)
        counts = place_rows(corpus, config, engine, upstream, scratch, linked, build)
    if not found:
        return linked, counts, {}
    summary = {"pairs_linked": len(found), "searches": searches, "examples": found[:10]}
    return linked, counts, {"neighbour_pairs_linked": dg.MetadataValue.json(summary)}
