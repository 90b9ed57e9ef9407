"""The chain of a snapshot is the chain it was built from, even when a later build recorded one
of its upstream snapshot ids again with other upstreams (a stage that rebuilt its published
bytes exactly, as the statistics fit of unchanged train rows does)."""

from pathlib import Path

import pytest

from corpus_platform.audit import checkout
from corpus_platform.store.registry import chain, find_snapshot, record_snapshot
from corpus_platform.store.snapshots import SnapshotError


def record(root: Path, asset: str, snapshot: str, **upstream: str) -> None:
    record_snapshot(root, {"asset": asset, "snapshot_id": snapshot, "upstream_snapshots": upstream})


def ids(records: list[dict]) -> list[str]:
    return [r["snapshot_id"] for r in records]


def test_an_older_snapshot_chains_to_what_it_was_built_from(tmp_path: Path) -> None:
    # the first build: split s1 <- fit f; normalized n1 reads both
    record(tmp_path, "split_documents", "s1", raw="r")
    record(tmp_path, "fitted_statistics", "f", split_documents="s1")
    record(tmp_path, "normalized_splits", "n1", fitted_statistics="f", split_documents="s1")
    # a later build rewrites the split's files (s2) and fits the same statistics: f again
    record(tmp_path, "split_documents", "s2", raw="r")
    record(tmp_path, "fitted_statistics", "f", split_documents="s2")
    record(tmp_path, "normalized_splits", "n2", fitted_statistics="f", split_documents="s2")

    old = chain(tmp_path, find_snapshot(tmp_path, "n1"))
    assert ids(old) == ["s1", "f", "n1"]
    assert old[1]["upstream_snapshots"] == {"split_documents": "s1"}
    new = chain(tmp_path, find_snapshot(tmp_path, "n2"))
    assert ids(new) == ["s2", "f", "n2"]
    assert new[1]["upstream_snapshots"] == {"split_documents": "s2"}
    # the shared snapshot alone: its newest record, as find_snapshot gives it
    assert ids(chain(tmp_path, find_snapshot(tmp_path, "f"))) == ["s2", "f"]


def test_a_record_not_in_the_registry_chains_through_the_newest_records(tmp_path: Path) -> None:
    record(tmp_path, "split_documents", "s1", raw="r")
    record(tmp_path, "fitted_statistics", "f", split_documents="s1")
    record(tmp_path, "split_documents", "s2", raw="r")
    record(tmp_path, "fitted_statistics", "f", split_documents="s2")
    entry = {"asset": "normalized_splits", "snapshot_id": "n", "upstream_snapshots": {}}
    entry["upstream_snapshots"] = {"fitted_statistics": "f"}
    assert ids(chain(tmp_path, entry)) == ["s2", "f", "n"]


def test_a_release_whose_chain_differs_is_not_restored(tmp_path: Path) -> None:
    record(tmp_path, "split_documents", "s1", raw="r")
    record(tmp_path, "fitted_statistics", "f", split_documents="s1")
    wanted = {"split_documents": "s2", "fitted_statistics": "f"}  # not what f was built from
    with pytest.raises(SnapshotError, match=r"differs from the release's snapshots.*split_doc"):
        checkout(tmp_path, "f", with_upstream=True, expected=wanted)
    assert not (tmp_path / "data").exists()  # nothing restored
