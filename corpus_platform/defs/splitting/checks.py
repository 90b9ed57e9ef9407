"""Blocking checks that no entity, cluster or similar pair crosses a split boundary."""

import dagster as dg

from corpus_platform.config import SPLITS
from corpus_platform.defs.names import (
    DEDUPLICATED_DOCUMENTS,
    NO_CLUSTER_IN_TWO_SPLITS,
    NO_ENTITY_IN_TWO_SPLITS,
    SPLIT_DOCUMENTS,
    SPLIT_RATIOS,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.leakage import crossing_keys, crossing_pairs
from corpus_platform.store.datasets import iter_shards, read_parquet


@dg.asset_check(asset=SPLIT_DOCUMENTS, name=NO_ENTITY_IN_TWO_SPLITS, blocking=True)
def no_entity_in_two_splits(corpus: CorpusProject) -> dg.AssetCheckResult:
    """No entity (user, document, site) has rows in more than one split."""
    config = corpus.load()
    report = crossing_keys(
        corpus.stage_dir(SPLIT_DOCUMENTS), config.num_shards, "entity", "entities"
    )
    return dg.AssetCheckResult(
        passed=report.passed,
        metadata={"verdict": report.describe(), "offenders": list(report.examples)},
    )


@dg.asset_check(asset=SPLIT_DOCUMENTS, name=NO_CLUSTER_IN_TWO_SPLITS, blocking=True)
def no_cluster_in_two_splits(corpus: CorpusProject) -> dg.AssetCheckResult:
    """No duplicate cluster, and no similar pair above the split threshold, spans two splits."""
    config = corpus.load()
    root = corpus.stage_dir(SPLIT_DOCUMENTS)
    clusters = crossing_keys(root, config.num_shards, "cluster_id", "duplicate clusters")
    pairs = read_parquet(
        corpus.stage_dir(DEDUPLICATED_DOCUMENTS) / "pairs" / "similar_pairs.parquet"
    )
    similar = crossing_pairs(root, config.num_shards, pairs)
    return dg.AssetCheckResult(
        passed=clusters.passed and similar.passed,
        metadata={
            "verdict": f"{clusters.describe()}; {similar.describe()}",
            "cluster_offenders": list(clusters.examples),
            "pair_offenders": list(similar.examples),
        },
    )


@dg.asset_check(asset=SPLIT_DOCUMENTS, name=SPLIT_RATIOS, blocking=True)
def split_ratios_within_tolerance(corpus: CorpusProject) -> dg.AssetCheckResult:
    """Each split's share of rows is within ``split.tolerance`` of its configured ratio."""
    config = corpus.load()
    root = corpus.stage_dir(SPLIT_DOCUMENTS)
    sizes = {
        name: sum(len(t) for _, t in iter_shards(root / name, config.num_shards, ["doc_id"]))
        for name in SPLITS
    }
    total = sum(sizes.values()) or 1
    achieved = {name: sizes[name] / total for name in SPLITS}
    worst = max(abs(achieved[n] - config.split.ratios[n]) for n in SPLITS)
    table = ", ".join(f"{n} {achieved[n]:.3f} (want {config.split.ratios[n]:.3f})" for n in SPLITS)
    return dg.AssetCheckResult(
        passed=worst <= config.split.tolerance,
        metadata={
            "verdict": f"largest deviation {worst:.3f}, tolerance {config.split.tolerance}",
            "achieved": table,
            "rows": sizes,
        },
    )
