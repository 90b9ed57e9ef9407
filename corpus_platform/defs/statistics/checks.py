"""Statistics were fitted on exactly the train split, and every split uses them frozen."""

from functools import partial
from pathlib import Path

import numpy as np

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.names import (
    FITTED_STATISTICS,
    SPLIT_DOCUMENTS,
    STATISTICS_FILE,
    TRAIN,
)
from corpus_platform.base.shards import count_rows, read_json
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.generations import changed_published_files
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.statistics.epochs import (
    FITTED_IDS,
    fit_view_shard,
    new_row_histograms,
    psi,
    with_outer_bins,
)
from corpus_platform.kernels.statistics.fit import (
    frozen_scaling_errors,
    shard_partial,
    split_fingerprint,
)
from corpus_platform.kernels.statistics.recompute import fit_mismatches, recompute_train_statistics
from corpus_platform.store.snapshots import current_snapshot


def fitted_on_exactly_train(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """The fit's rows (``fitted_on/``) are all train rows now, their fingerprint is the fit's,
    and an independent streaming recomputation from them (exact sums, two passes) gives the same
    statistics. A fresh fit used the whole current train split; a fit kept through an epoch
    used the train split of its time, every row of which must still be in train."""
    config = corpus.load()
    train = corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN
    fitted = read_json(candidate / STATISTICS_FILE)
    engine, shards = corpus.engine(config), range(config.num_shards)
    current = split_fingerprint([shard_partial(s, train, ()) for s in shards])
    with corpus.scratch("fitted_on_exactly_train") as scratch:
        view, gone = train, 0
        if fitted["fitted_on"]["fingerprint"] != current:  # a kept fit: its own rows
            view = scratch / "fit"
            parts = engine.map_shards(
                partial(fit_view_shard, train=train, fitted=candidate / FITTED_IDS, out=view),
                shards,
            )
            gone = sum(missing for _, missing in parts)
        used = split_fingerprint([shard_partial(s, view, ()) for s in shards])
        kept = kept_verbatim(corpus, candidate)
        features = fitted["features"]
        edges = {name: features[name]["histogram"]["edges"] for name in config.feature_columns}
        audit = None
        if kept is None:  # a kept fit's rows (same fingerprint) give the recomputation it had
            audit = recompute_train_statistics(
                view,
                config.num_shards,
                edges,
                "text" in fitted,
                engine,
                scratch / "audit",
                fitted.get("text", {}).get("document_frequency_top_k", []),
                config.engine.memory_mb,
            )
    mismatches = fit_mismatches(fitted, audit, config.feature_columns) if audit else []
    same_rows = (
        fitted["fitted_on"]["fingerprint"] == used
        and fitted["fitted_on"]["split"] == TRAIN
        and not gone
    )
    train_rows = count_rows(train, config.num_shards)
    recomputed = (
        f"recomputation mismatches: {len(mismatches)}"
        if kept is None
        else f"the fit of {kept} kept byte for byte (recomputed when it was published)"
    )
    return CheckOutcome.from_metadata(
        passed=same_rows and not mismatches,
        metadata={
            "verdict": f"fitted on {fitted['fitted_on']['rows']} rows of "
            f"{fitted['fitted_on']['split']}; train split now has {train_rows} rows "
            f"({train_rows - fitted['fitted_on']['rows']} added since the fit); fitted rows no "
            f"longer in train: {gone}; fingerprints {'match' if same_rows else 'differ'}; "
            f"{recomputed}",
            "fitted_fingerprint": fitted["fitted_on"]["fingerprint"],
            "fit_rows_fingerprint": used,
            "train_fingerprint": current,
            "recomputation_mismatches": mismatches[:10],
        },
    )


def kept_verbatim(corpus: CorpusProject, candidate: Path) -> str | None:
    """The published snapshot a candidate fit is, file for file (a fit kept through an
    append), or None (a fit made now)."""
    published = corpus.stage_dir(FITTED_STATISTICS)
    if not (published / STATISTICS_FILE).is_file() or candidate.resolve() == published.resolve():
        return None
    if changed_published_files(candidate, published, rewritten=()):
        return None
    ours = {p.relative_to(candidate) for p in candidate.rglob("*") if p.is_file()}
    theirs = {p.relative_to(published) for p in published.rglob("*") if p.is_file()}
    return current_snapshot(corpus.root_path, published) if ours == theirs else None


def train_drift_within_thresholds(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """The train rows added since the fit (statistics kept through ``statistics.epoch``) are
    compared with the fitted histograms, feature by feature, by population stability index
    (PSI, with a bin below and above the fitted range): above ``statistics.drift_warn`` the
    check warns (never blocking), above ``statistics.drift_block`` (when set) it fails."""
    config = corpus.load()
    settings = config.statistics
    fitted = read_json(candidate / STATISTICS_FILE)["features"]
    edges = {
        name: fitted[name]["histogram"]["edges"]
        for name in config.feature_columns
        if fitted[name]["histogram"]["edges"]
    }
    parts = corpus.engine(config).map_shards(
        partial(
            new_row_histograms,
            train=corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN,
            fitted=candidate / FITTED_IDS,
            edges=edges,
        ),
        range(config.num_shards),
    )
    new_rows = sum(rows for rows, _ in parts)
    if not new_rows or not edges:
        return CheckOutcome.not_applicable(
            f"no train rows added since the fit (statistics.epoch {settings.epoch})"
            if edges
            else "no numeric feature to compare"
        )
    index = {
        name: round(
            psi(
                with_outer_bins(fitted[name]["histogram"]["counts"]),
                np.sum([counts[name] for _, counts in parts], axis=0).tolist(),
            ),
            6,
        )
        for name in edges
    }
    worst = max(index, key=lambda name: (index[name], name))
    block = settings.drift_block
    verdict = (
        f"largest PSI of the {new_rows} train rows added since the fit: {index[worst]:.4f} "
        f"({worst}); warn above {settings.drift_warn}, block above "
        + (str(block) if block is not None else "never (drift_block null)")
    )
    details = {"psi": index, "new_rows": new_rows, "epoch": settings.epoch}
    if block is not None and index[worst] > block:
        return CheckOutcome.judged(
            False, verdict + "; raise statistics.epoch to refit", (), details
        )
    if index[worst] > settings.drift_warn:
        return CheckOutcome.warned(verdict + "; raise statistics.epoch to refit", (), details)
    return CheckOutcome.judged(True, verdict, (), details)


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
    (fitted_on_exactly_train, train_drift_within_thresholds),
)


# The blocking checks of normalized_splits, in the order they run and are shown.
NORMALIZED_SPLITS_CHECKS = StageChecks(
    "normalized_splits",
    (normalized_with_frozen_train_statistics,),
)
