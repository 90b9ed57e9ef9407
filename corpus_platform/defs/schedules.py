"""The job that builds every dataset, and its nightly schedule."""

import dagster as dg

BUILD_JOB = "build_corpus"
NIGHTLY_SCHEDULE = "nightly_rebuild"

build_corpus = dg.define_asset_job(
    BUILD_JOB,
    selection=dg.AssetSelection.all(),
    description="Materialize every stage from raw files to the training mix, with all checks.",
)

nightly_rebuild = dg.ScheduleDefinition(
    name=NIGHTLY_SCHEDULE,
    job=build_corpus,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Rebuild every dataset at 02:00 UTC (stopped until switched on in the UI).",
)
