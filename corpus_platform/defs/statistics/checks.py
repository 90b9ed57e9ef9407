"""Statistics were fitted on exactly the train split, and every split uses them frozen."""

from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import (
    FITTED_STATISTICS,
    SPLIT_DOCUMENTS,
    STATISTICS_FILE,
    TRAIN,
)
from corpus_platform.base.shards import read_json
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.statistics.fit import (
    frozen_scaling_errors,
    shard_partial,
    split_fingerprint,
)
from corpus_platform.kernels.statistics.recompute import fit_mismatches, recompute_train_statistics


def fitted_on_exactly_train(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """The fit's fingerprint equals the current train split's, and an independent streaming
    recomputation (exact sums, two passes) gives the same statistics."""
    config = corpus.load()
    train = corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN
    fitted = read_json(candidate / STATISTICS_FILE)
    current = split_fingerprint([shard_partial(s, train, ()) for s in range(config.num_shards)])
    features = fitted["features"]
    edges = {name: features[name]["histogram"]["edges"] for name in config.feature_columns}
    with corpus.scratch("fitted_on_exactly_train") as scratch:
        audit = recompute_train_statistics(
            train,
            config.num_shards,
            edges,
            "text" in fitted,
            corpus.engine(config),
            scratch,
            fitted.get("text", {}).get("document_frequency_top_k", []),
        )
    mismatches = fit_mismatches(fitted, audit, config.feature_columns)
    same_rows = (
        fitted["fitted_on"]["fingerprint"] == current and fitted["fitted_on"]["split"] == TRAIN
    )
    return CheckOutcome.from_metadata(
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


def normalized_with_frozen_train_statistics(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Every split's normalized features equal (x - train mean) / train std: no split refits."""
    config = corpus.load()
    features = read_json(corpus.stage_dir(FITTED_STATISTICS) / STATISTICS_FILE)["features"]
    checked, bad = frozen_scaling_errors(
        corpus.stage_dir(SPLIT_DOCUMENTS), candidate, features, config.num_shards
    )
    return CheckOutcome.from_metadata(
        passed=not bad,
        metadata={
            "verdict": f"shards not normalized with the frozen train statistics: {len(bad)}",
            "rows_checked": dict(checked),
            "offenders": bad[:10],
        },
    )


# The blocking checks of fitted_statistics, in the order they run and are shown.
FITTED_STATISTICS_CHECKS = StageChecks(
    "fitted_statistics",
    (fitted_on_exactly_train,),
)


# The blocking checks of normalized_splits, in the order they run and are shown.
NORMALIZED_SPLITS_CHECKS = StageChecks(
    "normalized_splits",
    (normalized_with_frozen_train_statistics,),
)
