"""Assemble the Dagster definitions from the stage folders under ``defs/``."""

import dagster as dg

from corpus_platform.console import LOGGER_KEY, corpus_logger
from corpus_platform.defs import schedules
from corpus_platform.defs.dedup import assets as dedup_assets
from corpus_platform.defs.filtering import assets as filtering_assets
from corpus_platform.defs.ingest import assets as ingest_assets
from corpus_platform.defs.mixing import assets as mixing_assets
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.sharding import assets as sharding_assets
from corpus_platform.defs.splitting import assets as splitting_assets
from corpus_platform.defs.statistics import assets as statistics_assets

STAGE_MODULES = [
    ingest_assets,
    filtering_assets,
    dedup_assets,
    splitting_assets,
    statistics_assets,
    mixing_assets,
    sharding_assets,
]


def build_definitions(project: CorpusProject | None = None) -> dg.Definitions:
    """The whole definition set, bound to ``project`` (the working directory by default).

    Stages run one after another in one process (``in_process_executor``); shard-level
    parallelism comes from the configured engine instead of one process per step.
    """
    return dg.Definitions(
        assets=dg.load_assets_from_modules(STAGE_MODULES),
        jobs=[schedules.build_corpus],
        schedules=[schedules.nightly_rebuild],
        sensors=[schedules.new_raw_files],
        resources={"corpus": project or CorpusProject()},
        loggers={LOGGER_KEY: corpus_logger},
        executor=dg.in_process_executor,
    )


defs = build_definitions()
