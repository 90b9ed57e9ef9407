"""Statistics were fitted on exactly the train split, and every split uses them frozen."""

import math
from collections import Counter
from pathlib import Path

import dagster as dg
import numpy as np

from corpus_platform.base.names import (
    FITTED_ON_TRAIN,
    FITTED_STATISTICS,
    NORMALIZED_SPLITS,
    NORMALIZED_WITH_FROZEN_STATISTICS,
    SPLIT_DOCUMENTS,
    SPLITS,
    STATISTICS_FILE,
    TRAIN,
)
from corpus_platform.base.shards import read_json, read_shard
from corpus_platform.defs.checks import corpus_check
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.stats import column_values, shard_partial, split_fingerprint
from corpus_platform.kernels.stats_audit import TrainAudit, recompute_train_statistics

CLOSE = {"rel_tol": 1e-9, "abs_tol": 1e-9}


def _differences(name: str, fitted: dict, direct: dict[str, object]) -> list[str]:
    out = []
    for key, value in direct.items():
        stored = fitted["histogram"]["counts"] if key == "histogram" else fitted[key]
        same = (
            stored == value
            if key in ("histogram", "count")
            else math.isclose(stored, value, **CLOSE)
        )
        if not same:
            out.append(f"{name}.{key}: fitted {stored} != recomputed {value}")
    return out


def _frequency_mismatches(fitted: dict, audit: TrainAudit) -> list[str]:
    top = fitted["text"]["document_frequency_top_k"]
    recount = audit.document_frequencies
    wrong = [token for token, count in top if recount[token] != count]
    expected = sorted(recount.items(), key=lambda kv: (-kv[1], kv[0]))[: len(top)]
    out = []
    if wrong or [list(kv) for kv in expected] != top:
        out.append(f"document frequencies differ for {wrong[:5] or 'the top-K ranking'}")
    if fitted["text"]["documents"] != audit.documents:
        out.append(f"text documents: fitted {fitted['text']['documents']} != {audit.documents}")
    return out


@corpus_check(asset=FITTED_STATISTICS, name=FITTED_ON_TRAIN)
def fitted_on_exactly_train(corpus: CorpusProject, candidate: Path) -> dg.AssetCheckResult:
    """The fit's fingerprint equals the current train split's, and an independent streaming
    recomputation (exact sums, two passes) gives the same statistics."""
    config = corpus.load()
    train = corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN
    fitted = read_json(candidate / STATISTICS_FILE)
    current = split_fingerprint([shard_partial(s, train, ()) for s in range(config.num_shards)])
    features = fitted["features"]
    edges = {name: features[name]["histogram"]["edges"] for name in config.feature_columns}
    audit = recompute_train_statistics(
        train, config.num_shards, edges, "text" in fitted, corpus.engine(config)
    )
    mismatches = [
        difference
        for name in config.feature_columns
        for difference in _differences(name, features[name], audit.features[name])
    ]
    if "text" in fitted:
        mismatches += _frequency_mismatches(fitted, audit)
    same_rows = (
        fitted["fitted_on"]["fingerprint"] == current and fitted["fitted_on"]["split"] == TRAIN
    )
    return dg.AssetCheckResult(
        passed=same_rows and not mismatches,
        metadata={
            "verdict": f"fitted on {fitted['fitted_on']['rows']} rows of "
            f"{fitted['fitted_on']['split']}; train "
            f"split now has {audit.rows} rows; fingerprints {'match' if same_rows else 'differ'}; "
            f"recomputation mismatches: {len(mismatches)}",
            "fitted_fingerprint": fitted["fitted_on"]["fingerprint"],
            "train_fingerprint": current,
            "recomputation_mismatches": mismatches[:10],
        },
    )


@corpus_check(asset=NORMALIZED_SPLITS, name=NORMALIZED_WITH_FROZEN_STATISTICS)
def normalized_with_frozen_train_statistics(
    corpus: CorpusProject, candidate: Path
) -> dg.AssetCheckResult:
    """Every split's normalized features equal (x - train mean) / train std: no split refits."""
    config = corpus.load()
    features = read_json(corpus.stage_dir(FITTED_STATISTICS) / STATISTICS_FILE)["features"]
    checked: Counter[str] = Counter()
    bad: list[str] = []
    for name in SPLITS:
        for shard in range(config.num_shards):
            raw = read_shard(corpus.stage_dir(SPLIT_DOCUMENTS) / name, shard, ["doc_id", *features])
            done = read_shard(candidate / name, shard, ["doc_id", *features])
            if raw.column("doc_id") != done.column("doc_id"):
                bad.append(f"{name} shard {shard}: rows differ from split_documents")
                continue
            for feature, stats in features.items():
                expected = (column_values(raw, feature) - stats["mean"]) / (stats["std"] or 1.0)
                if not np.allclose(
                    column_values(done, feature), expected, rtol=1e-12, atol=1e-12, equal_nan=True
                ):
                    bad.append(
                        f"{name} shard {shard}: {feature} not scaled by the frozen train statistics"
                    )
            checked[name] += len(raw)
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={
            "verdict": f"shards not normalized with the frozen train statistics: {len(bad)}",
            "rows_checked": dict(checked),
            "offenders": bad[:10],
        },
    )
