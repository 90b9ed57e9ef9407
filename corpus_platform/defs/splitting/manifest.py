"""The split's manifest: rows per split and per drop reason, over every generation."""

from collections import Counter
from pathlib import Path

from corpus_platform.base.names import SPLITS
from corpus_platform.config import CorpusConfig
from corpus_platform.engine import Engine
from corpus_platform.kernels.ingest.licences import licence_rollup
from corpus_platform.kernels.splitting.temporal import Cutoffs


def split_counts(config: CorpusConfig, totals: Counter[str], cutoffs: Cutoffs | None) -> dict:
    """The manifest's counts of rows per split and per drop reason."""
    return {
        "rows": sum(totals[n] for n in SPLITS),
        "split_sizes": {n: totals.get(n, 0) for n in SPLITS},
        "dropped": {k: v for k, v in sorted(totals.items()) if k not in SPLITS},
        "mode": config.split.mode,
        "num_shards": config.num_shards,
        "cutoffs": cutoffs.as_dict() if cutoffs else None,
        "epoch": config.split.epoch,
    }


def licence_counts(config: CorpusConfig, engine: Engine, staging: Path) -> dict:
    """Rows per licence in each split, when licences are recorded."""
    if not config.records_licences:
        return {}
    return {
        "rows_per_license": {
            name: licence_rollup(engine, staging / name, config.num_shards) for name in SPLITS
        }
    }
