"""The verdicts that admitted a snapshot are its first publication's, whatever a later build that
published the same bytes again recorded (the dataset card shows them; `corpus lineage` shows the
newest)."""

from pathlib import Path

from corpus_platform.store.registry import (
    CHECK,
    PIN,
    admitting_checks,
    append_record,
    latest_checks,
    record_admitted,
    record_snapshot,
)


def publish(root: Path, snapshot: str, publication: str | None, **verdicts: str) -> None:
    """A snapshot record and its checks' records, as one publication writes them."""
    named = {} if publication is None else {"publication": publication}
    record_snapshot(root, {"asset": "split_documents", "snapshot_id": snapshot, **named})
    for check, verdict in verdicts.items():
        entry = {"asset": "split_documents", "check": check, "snapshot_id": snapshot}
        append_record(root, CHECK, entry | named | {"passed": True, "verdict": verdict})


def verdicts(checks: dict[str, dict]) -> dict[str, str]:
    return {name: record["verdict"] for name, record in checks.items()}


def test_a_republished_snapshot_keeps_the_verdicts_that_admitted_it(tmp_path: Path) -> None:
    publish(tmp_path, "s1", "p1", entity="0 of 299", ratio="0.033")
    again = {"asset": "split_documents", "check": "entity", "snapshot_id": "s1"}
    again |= {"publication": "p1", "passed": True, "verdict": "0 of 300"}
    append_record(tmp_path, CHECK, again)  # evaluated twice in one publication: the newest
    append_record(tmp_path, PIN, {"snapshot_id": "s1", "name": "keep"})  # no asset: skipped
    publish(tmp_path, "s2", "p2", entity="0 of 310", ratio="0.030")
    publish(tmp_path, "s1", "p3", entity="generation 1's rows: 0 of 30", ratio="0.033")

    assert verdicts(admitting_checks(tmp_path, "split_documents", "s1")) == {
        "entity": "0 of 300",
        "ratio": "0.033",
    }
    assert verdicts(latest_checks(tmp_path, "split_documents", "s1"))["entity"].startswith("gen")
    assert verdicts(admitting_checks(tmp_path, "split_documents", "s2"))["entity"] == "0 of 310"
    assert admitting_checks(tmp_path, "normalized_splits", "s1") == {}


def test_records_without_publications_give_the_newest_verdicts(tmp_path: Path) -> None:
    publish(tmp_path, "s1", None, entity="first")
    publish(tmp_path, "s1", None, entity="second")
    assert verdicts(admitting_checks(tmp_path, "split_documents", "s1")) == {"entity": "second"}


def test_a_replay_project_records_the_admitting_verdicts(tmp_path: Path) -> None:
    root, work = tmp_path / "root", tmp_path / "work"
    publish(root, "s1", "p1", entity="0 of 300")
    publish(root, "s1", "p2", entity="generation 1's rows: 0 of 30")
    record_admitted(work, root, "split_documents", "s1")
    assert verdicts(admitting_checks(work, "split_documents", "s1")) == {"entity": "0 of 300"}
