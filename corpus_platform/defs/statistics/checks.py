"""The statistics were fitted on exactly the train split, and a recomputation agrees."""

import math

import dagster as dg
import numpy as np

from corpus_platform.defs.names import FITTED_ON_TRAIN, FITTED_STATISTICS, SPLIT_DOCUMENTS
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.statistics.assets import STATISTICS_FILE, TRAIN
from corpus_platform.kernels.stats import shard_partial, split_fingerprint
from corpus_platform.store.datasets import iter_shards, read_json


def _direct_moments(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return {"count": 0}
    return {
        "count": int(values.size),
        "mean": float(values.mean()),
        "std": float(values.std()),
        "minimum": float(values.min()),
        "maximum": float(values.max()),
    }


@dg.asset_check(asset=FITTED_STATISTICS, name=FITTED_ON_TRAIN, blocking=True)
def fitted_on_exactly_train(corpus: CorpusProject) -> dg.AssetCheckResult:
    """The fit's fingerprint equals the current train split's, and numpy over all train rows
    (an independent, non-streaming recomputation) gives the same numbers."""
    config = corpus.load()
    train = corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN
    fitted = read_json(corpus.stage_dir(FITTED_STATISTICS) / STATISTICS_FILE)
    partials = [shard_partial(s, train, ()) for s in range(config.num_shards)]
    current = split_fingerprint(partials)
    columns = {name: [] for name in config.input.features}
    for _, table in iter_shards(train, config.num_shards, list(config.input.features)):
        for name in columns:
            columns[name].append(
                table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
            )
    mismatches = []
    for name, chunks in columns.items():
        direct = _direct_moments(np.concatenate(chunks) if chunks else np.array([]))
        for key, value in direct.items():
            if not math.isclose(fitted["features"][name][key], value, rel_tol=1e-9, abs_tol=1e-12):
                mismatches.append(
                    f"{name}.{key}: fitted {fitted['features'][name][key]} != {value}"
                )
    rows = sum(p.rows for p in partials)
    same_rows = (
        fitted["fitted_on"]["fingerprint"] == current and fitted["fitted_on"]["split"] == TRAIN
    )
    return dg.AssetCheckResult(
        passed=same_rows and not mismatches,
        metadata={
            "verdict": f"fitted on {fitted['fitted_on']['rows']} rows of "
            f"{fitted['fitted_on']['split']}; "
            f"train split now has {rows} rows; fingerprints {'match' if same_rows else 'differ'}",
            "fitted_fingerprint": fitted["fitted_on"]["fingerprint"],
            "train_fingerprint": current,
            "recomputation_mismatches": mismatches[:10],
        },
    )
