"""The job that builds every dataset, its nightly schedule and the new-raw-files sensor.

Both add a ``raw_batches`` partition per new raw file before they start the job: the sensor on
the new partitions, the schedule on every one."""

import dagster as dg

from corpus_platform.base.hashing import fingerprint
from corpus_platform.defs.batches import (
    RAW_BATCHES,
    partition_range_tags,
    raw_file_names,
    sync_raw_batches,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.readers import list_input_files

BUILD_JOB = "build_corpus"
BUILD_TAG = "corpus/build"  # dagster.yaml's queue runs at most one job carrying it
NIGHTLY_SCHEDULE = "nightly_rebuild"

build_corpus = dg.define_asset_job(
    BUILD_JOB,
    selection=dg.AssetSelection.all(),
    tags={BUILD_TAG: "build"},
    description="Materialize every stage from raw files to the training shards, with all checks.",
)


@dg.schedule(
    name=NIGHTLY_SCHEDULE,
    job=build_corpus,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Rebuild every dataset at 02:00 UTC (stopped until switched on in the UI), "
    "every raw batch's partition included.",
)
def nightly_rebuild(context: dg.ScheduleEvaluationContext, corpus: CorpusProject) -> dg.RunRequest:
    keys = sync_raw_batches(context.instance, raw_file_names(corpus))
    return dg.RunRequest(tags=partition_range_tags(keys))


RAW_SENSOR = "new_raw_files"


def raw_listing_digest(corpus: CorpusProject) -> tuple[str, int]:
    """A digest of the raw folder's listing (relative path, size, modification time) and the
    number of files; it changes when a file lands, is replaced or is removed."""
    root = corpus.raw_dir(corpus.load())
    files = list_input_files(root)
    entries = (
        f"{p.relative_to(root).as_posix()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files
    )
    return fingerprint(entries), len(files)


@dg.sensor(
    name=RAW_SENSOR,
    job=build_corpus,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="When raw files land in (or change in) the input folder, add a raw_batches "
    "partition per new file and start build_corpus on the new partitions.",
)
def new_raw_files(
    context: dg.SensorEvaluationContext, corpus: CorpusProject
) -> dg.SensorResult | dg.SkipReason:
    digest, count = raw_listing_digest(corpus)
    if digest == context.cursor:
        return dg.SkipReason(f"no change in the {count} raw files")
    names = raw_file_names(corpus)
    known = context.instance.get_dynamic_partitions(RAW_BATCHES.name)
    new = [name for name in names if name not in set(known)]
    gone = [key for key in known if key not in set(names)]
    changes = [RAW_BATCHES.build_add_request(new)] if new else []
    changes += [RAW_BATCHES.build_delete_request(gone)] if gone else []
    keys = new or [key for key in known if key not in set(gone)]  # new batches, else every one
    run = dg.RunRequest(run_key=digest, tags=partition_range_tags(keys))
    return dg.SensorResult(run_requests=[run], cursor=digest, dynamic_partitions_requests=changes)
