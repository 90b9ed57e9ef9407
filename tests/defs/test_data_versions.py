"""Staleness follows content: a materialization's data version is its snapshot id, and every
stage asset has a code version, the digest of its stage family's source."""

import dagster as dg

from corpus_platform.base.names import STAGES
from corpus_platform.definitions import defs
from corpus_platform.runner import run_build
from corpus_platform.store.provenance import stage_code_version
from tests.conftest import make_project

UP_TO_DEDUP = ["raw_documents", "filtered_documents", "deduplicated_documents"]


def test_every_stage_has_its_familys_code_version() -> None:
    versions = {name: defs.resolve_assets_def(name).code_versions_by_key for name in STAGES}
    flat = {name: v[dg.AssetKey(name)] for name, v in versions.items()}
    assert flat["split_documents"] == stage_code_version("splitting")
    assert (
        flat["fitted_statistics"] == flat["normalized_splits"] == stage_code_version("statistics")
    )
    assert len(set(flat.values())) == 7  # one per family: seven families, eight stages


def test_the_data_version_is_the_snapshot_id_and_a_rebuild_keeps_it(tmp_path) -> None:
    root = make_project(tmp_path / "project")
    instance = dg.DagsterInstance.ephemeral()
    first = run_build(root, instance=instance, assets=UP_TO_DEDUP)
    assert first.ok, first.render()

    def data_versions() -> dict[str, str]:
        events = {
            name: instance.get_latest_materialization_event(dg.AssetKey(name))
            for name in UP_TO_DEDUP
        }
        return {
            name: event.asset_materialization.tags["dagster/data_version"]
            for name, event in events.items()
        }

    assert data_versions() == {s: first.materialized[s]["snapshot_id"] for s in UP_TO_DEDUP}
    again = run_build(root, instance=instance, assets=UP_TO_DEDUP)
    assert again.ok, again.render()
    assert data_versions() == {s: first.materialized[s]["snapshot_id"] for s in UP_TO_DEDUP}
