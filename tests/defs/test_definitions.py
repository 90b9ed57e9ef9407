"""A snapshot of the whole definition set: a change to the graph shows up here in review."""

import dagster as dg

from corpus_platform.definitions import defs
from corpus_platform.defs.stages import STAGE_CHECKS

EXPECTED_DEPS = {
    "raw_documents": set(),
    "filtered_documents": {"raw_documents"},
    "deduplicated_documents": {"filtered_documents"},
    "split_documents": {"deduplicated_documents", "filtered_documents"},  # the rows, their texts
    "fitted_statistics": {"split_documents"},
    "normalized_splits": {"fitted_statistics", "split_documents"},
    "training_mix": {"normalized_splits", "split_documents"},  # the rows, their texts
    "training_shards": {"training_mix", "split_documents"},  # the drawn rows, their texts
}
# The checks each stage declares (defs/<family>/checks.py), as Dagster must show them.
EXPECTED_CHECKS = {(s.asset, name) for s in STAGE_CHECKS.values() for name in s.names}


def test_asset_graph() -> None:
    graph = defs.resolve_asset_graph()
    deps = {
        key.to_user_string(): {p.to_user_string() for p in graph.get(key).parent_keys}
        for key in graph.get_all_asset_keys()
    }
    assert deps == EXPECTED_DEPS
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert groups["raw_documents"] == "ingest" and groups["training_mix"] == "mix"
    assert groups["training_shards"] == "mix"


def test_every_check_is_blocking() -> None:
    graph = defs.resolve_asset_graph()
    specs = {
        (key.asset_key.to_user_string(), key.name): graph.get_check_spec(key)
        for key in graph.asset_check_keys
    }
    assert set(specs) == EXPECTED_CHECKS and len(specs) == 20
    assert all(spec.blocking for spec in specs.values())
    for stage in STAGE_CHECKS.values():  # each asset's checks in the declared order
        specs_of_asset = list(defs.resolve_assets_def(stage.asset).check_specs)
        assert [spec.name for spec in specs_of_asset] == list(stage.names)
        assert all(spec.description for spec in specs_of_asset)


def test_job_and_nightly_schedule() -> None:
    schedule = defs.resolve_schedule_def("nightly_rebuild")
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.job_name == "build_corpus"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    job = defs.resolve_job_def("build_corpus")
    assert len(job.asset_layer.executable_asset_keys) == 8


def test_sensor_requests_a_run_only_when_raw_files_change(tmp_path) -> None:
    from corpus_platform.defs.batches import RANGE_END, RANGE_START
    from corpus_platform.defs.resources import CorpusProject
    from corpus_platform.defs.schedules import new_raw_files
    from tests.conftest import make_project

    root = make_project(tmp_path / "p")
    resources = {"corpus": CorpusProject(root=str(root))}

    instance = dg.DagsterInstance.ephemeral()

    def evaluate(cursor: str | None = None) -> dg.SensorResult | dg.SkipReason:
        # the project resource holds the build lock during runs, so it is a context manager
        with dg.build_sensor_context(
            cursor=cursor, resources=resources, instance=instance
        ) as context:
            result = new_raw_files(context)
        if isinstance(result, dg.SensorResult):  # as the daemon applies them
            for request in result.dynamic_partitions_requests or []:
                instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
        return result

    first = evaluate()
    assert len(first.run_requests) == 1 and first.cursor
    files = instance.get_dynamic_partitions("raw_batches")
    assert len(files) == 4 and files == sorted(files)  # a partition per raw file
    assert first.run_requests[0].tags[RANGE_START] == files[0]
    assert first.run_requests[0].tags[RANGE_END] == files[-1]
    assert isinstance(evaluate(first.cursor), dg.SkipReason)
    (root / "data" / "raw" / "web" / "new.jsonl").write_text('{"id": "n1"}\n', encoding="utf-8")
    landed = evaluate(first.cursor)
    assert len(landed.run_requests) == 1 and landed.cursor != first.cursor
    assert instance.get_dynamic_partitions("raw_batches") == [*files, "web/new.jsonl"]
    tags = landed.run_requests[0].tags  # only the new batch's partition
    assert tags[RANGE_START] == tags[RANGE_END] == "web/new.jsonl"
    assert not (root / ".corpus" / "build.lock").exists()  # a sensor evaluation locks nothing
    assert defs.resolve_sensor_def("new_raw_files").default_status == dg.DefaultSensorStatus.STOPPED
