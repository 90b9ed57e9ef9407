"""Integration: the whole graph materialized through Dagster on tmp_path."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.hashing import content_hash
from corpus_platform.base.names import STAGES
from corpus_platform.base.shards import read_parquet, shard_files
from corpus_platform.store.provenance import REQUIRED_FIELDS
from corpus_platform.store.registry import list_snapshots
from tests.conftest import build, make_project, tree_digest
from tests.defs.test_definitions import EXPECTED_CHECKS


def test_every_stage_materializes_and_every_check_passes(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert set(report.materialized) == set(STAGES)
    assert {(c.asset, c.name) for c in report.checks} == EXPECTED_CHECKS
    # a first build has no stability baseline and no rows added since a fit; the sample's group
    # split promises no time order and denies no licence
    not_applicable = {c.name for c in report.checks if c.label == "n/a"}
    assert not_applicable == {
        "no_held_out_row_moved_into_train",
        "temporal_order",
        "no_denied_license_in_splits",
        "train_drift_within_thresholds",
    }
    assert all(c.passed for c in report.checks if c.name not in not_applicable)
    verdicts = {c.name: c.verdict for c in report.checks}
    assert verdicts["no_entity_in_two_splits"] == "entities in more than one split: 0 of 300"


def test_materializations_carry_provenance_and_reach_the_registry(built) -> None:
    root, report, _ = built
    for stage, meta in report.materialized.items():
        assert all(meta.get(field) not in (None, "") for field in REQUIRED_FIELDS), stage
        assert (root / "data" / f"{stage}.dvc").is_file()
    assert report.materialized["filtered_documents"]["upstream_snapshots"] == {
        "raw_documents": report.materialized["raw_documents"]["snapshot_id"]
    }
    assert "raw" in report.materialized["raw_documents"]["upstream_snapshots"]
    assert [e["asset"] for e in list_snapshots(root)] == list(STAGES)
    assert any((root / ".dvc-storage").rglob("*.dir"))


def test_planted_cases_are_handled(built) -> None:
    _, report, _ = built
    meta = report.materialized
    removed = meta["filtered_documents"]["removed_by_filter"]
    assert (
        removed["min_chars"] == 40 and removed["pii_credit_card"] == 10 and removed["pii_ssn"] == 10
    )
    assert removed["c4_lorem_ipsum"] == 10 and removed["c4_curly_braces"] == 10
    assert removed["blocklist_words"] == 20 and removed["domain"] == 10
    assert meta["filtered_documents"]["would_fail_by_filter"]["duplicate_line_fraction"] == 40
    replaced = meta["filtered_documents"]["replacements"]
    assert replaced == {"c4_boilerplate_lines": 20, "email": 30, "ip": 10, "phone": 30}
    assert meta["filtered_documents"]["funnel_chart"].startswith("![filter funnel](data:image/png")
    assert "| min_chars | FAIL |" in meta["filtered_documents"]["samples"]
    assert meta["deduplicated_documents"]["duplicate_clusters"] >= 130
    sizes = meta["split_documents"]["split_sizes"]
    assert sum(sizes.values()) == meta["deduplicated_documents"]["rows"]


def test_filtered_rows_carry_the_content_hash_of_their_published_text(built) -> None:
    root, _, _ = built
    shards = sorted((root / "data" / "filtered_documents").glob("part-*.parquet"))
    columns = ["doc_id", "text", "content_hash", "replacements"]
    table = pa.concat_tables(read_parquet(p, columns) for p in shards)  # texts put back
    rows = table.to_pylist()
    assert all(r["text"] is not None and r["content_hash"] == content_hash(r["text"]) for r in rows)
    edited = [r for r in rows if r["replacements"]]  # PII replaced or boilerplate lines removed
    assert len(edited) >= 20 and len(edited) < len(rows)
    files = [f for p in shards for f in shard_files(p)]
    stored = pa.concat_tables(pq.read_table(f, columns=columns) for f in files).to_pylist()
    assert [r["doc_id"] for r in stored] == [r["doc_id"] for r in rows]
    assert all((r["text"] is not None) == bool(r["replacements"]) for r in stored)  # edits only


def test_the_text_is_stored_by_the_split_and_sharded_from_it(built) -> None:
    root, _, _ = built
    data = root / "data"

    def rows(folder: Path, columns: list[str] | None = None) -> pa.Table:
        files = sorted(folder.glob("part-*.parquet/*.parquet"))
        return pa.concat_tables(pq.read_table(p, columns=columns) for p in files)

    for split in ("train", "validation", "test"):
        normalized, source = (
            rows(data / "normalized_splits" / split),
            rows(data / "split_documents" / split),
        )
        assert "text" not in normalized.column_names and "text" in source.column_names
        assert normalized.column("doc_id").equals(source.column("doc_id")), split
    train = rows(data / "split_documents" / "train", ["doc_id", "text"]).to_pylist()
    split_text = {r["doc_id"]: r["text"] for r in train}
    mix = rows(data / "training_mix")
    assert len(mix) and "text" not in mix.column_names  # the drawn rows, without their text
    shards = sorted((data / "training_shards").glob("*.parquet"))
    samples = pa.concat_tables(pq.read_table(p, columns=["doc_id", "text"]) for p in shards)
    assert set(samples["doc_id"].to_pylist()) == set(mix["doc_id"].to_pylist())
    assert all(split_text[r["doc_id"]] == r["text"] for r in samples.to_pylist())


def test_raw_files_are_never_touched(built) -> None:
    root, _, raw_before = built
    assert tree_digest(root / "data" / "raw") == raw_before


def test_outputs_are_byte_identical_across_runs_and_worker_counts(built, tmp_path: Path) -> None:
    root, report, _ = built
    other = make_project(tmp_path / "two_workers", engine={"kind": "local", "workers": 2})
    again = build(other)
    for stage in STAGES:
        assert (
            again.materialized[stage]["snapshot_id"] == report.materialized[stage]["snapshot_id"]
        ), stage
        assert tree_digest(other / "data" / stage) == tree_digest(root / "data" / stage), stage


def test_leaky_split_fails_the_entity_check_and_blocks_downstream(tmp_path: Path) -> None:
    root = make_project(tmp_path / "leaky", split={"mode": "row"})
    report = build(root)
    assert not report.ok
    entity = next(c for c in report.checks if c.name == "no_entity_in_two_splits")
    assert not entity.passed
    assert entity.verdict.startswith("entities in more than one split: ")
    assert "split_documents" not in report.materialized  # rejected: never published
    blocked_stages = ("fitted_statistics", "normalized_splits", "training_mix", "training_shards")
    for blocked in ("split_documents", *blocked_stages):
        assert blocked not in report.materialized
        assert not (root / "data" / blocked).exists()


def test_bad_input_publishes_nothing_and_leaves_raw_untouched(tmp_path: Path) -> None:
    root = make_project(tmp_path / "bad")
    bad = root / "data" / "raw" / "web" / "zz-broken.jsonl"
    bad.write_text(
        json.dumps(
            {
                "id": "x1",
                "body": "text",
                "src": "web",
                "author": "a",
                "created_at": "not a date",
                "clicks": 1,
                "dwell_seconds": 1.0,
                "label": 0,
            }
        )
        + "\n"
    )
    raw_before = tree_digest(root / "data" / "raw")
    report = build(root)
    assert not report.success and not report.materialized
    assert "zz-broken.jsonl: row 1: column 'created_at' is not a timestamp" in report.failures[0]
    assert not (root / "data" / "raw_documents").exists()
    assert not (root / "data" / "raw_documents.dvc").exists()
    assert list_snapshots(root) == []
    assert tree_digest(root / "data" / "raw") == raw_before


def test_an_unknown_exempt_filter_stops_the_build_before_anything_is_pinned(tmp_path: Path) -> None:
    root = make_project(tmp_path / "exempt", filters={"exempt": {"no_such_filter": ["code"]}})
    report = build(root)
    assert not report.success and not report.materialized
    assert "filters.exempt names unknown filter(s) ['no_such_filter']" in report.failures[0]
    assert not (root / "data" / "raw_documents").exists()
    assert not (root / "data" / "raw.dvc").exists() and list_snapshots(root) == []
