"""Raw batches: an append reads, filters and sketches only the new raw file, leaves every
published batch file byte-identical and equals a build of all the files from scratch; a raw file
that changed after it was ingested is an error naming it and the way out, and nothing published
moves; every raw file is a Dagster partition."""

import hashlib
import json
import shutil
from pathlib import Path

import dagster as dg

from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    RAW_DOCUMENTS,
    batch_key,
)
from corpus_platform.base.shards import read_all_shards, read_manifest
from corpus_platform.definitions import build_definitions
from corpus_platform.defs.batches import RAW_BATCHES, raw_file_names, sync_raw_batches
from corpus_platform.defs.filtering import assets as filtering_assets
from corpus_platform.defs.filtering.assets import filter_new_batches
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.schedules import BUILD_JOB
from corpus_platform.kernels.filtering.batch_summaries import to_record
from corpus_platform.runner import run_build
from corpus_platform.store.snapshots import current_snapshot
from tests.conftest import build, tree_digest
from tests.defs.test_append import WEB, append, new_authors_rows

BATCH_STAGES = [RAW_DOCUMENTS, FILTERED_DOCUMENTS]
MANIFEST = "_manifest.json"


def file_digests(folder: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``folder``."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def stage_files(root: Path) -> dict[str, str]:
    return {
        f"{stage}/{name}": digest
        for stage in BATCH_STAGES
        for name, digest in file_digests(root / "data" / stage).items()
    }


def test_an_append_reads_only_the_new_batch_and_rewrites_no_published_file(
    built_copy: Path, tmp_path: Path
) -> None:
    before = stage_files(built_copy)
    append(built_copy, "crawl-later.jsonl", new_authors_rows(built_copy, 40))
    report = build(built_copy, assets=[*BATCH_STAGES, DEDUPLICATED_DOCUMENTS])
    assert report.ok, report.render()

    raw, filtered = report.materialized[RAW_DOCUMENTS], report.materialized[FILTERED_DOCUMENTS]
    assert (raw["batches_read"], raw["batches_kept"]) == (1, 4)
    assert (filtered["batches_filtered"], filtered["batches_kept"]) == (1, 4)
    after = stage_files(built_copy)
    changed = sorted(n for n, d in before.items() if after.get(n) != d)
    assert changed == sorted(f"{stage}/{MANIFEST}" for stage in BATCH_STAGES)  # only those
    key = batch_key("web/crawl-later.jsonl")
    added = sorted(set(after) - set(before))
    shards = range(8)
    assert added == sorted(
        [f"{RAW_DOCUMENTS}/part-{s:05d}.parquet/{key}.parquet" for s in shards]
        + [f"{FILTERED_DOCUMENTS}/part-{s:05d}.parquet/{key}.parquet" for s in shards]
        + [f"{FILTERED_DOCUMENTS}/removed/part-{s:05d}.parquet/{key}.parquet" for s in shards]
        + [f"{FILTERED_DOCUMENTS}/_batches/{key}.json"]
    )
    manifest = json.loads((built_copy / "data" / RAW_DOCUMENTS / MANIFEST).read_text())
    assert manifest["rows_per_file"]["web/crawl-later.jsonl"] == 40

    fresh = tmp_path / "fresh"  # the same raw files built from scratch give the same bytes
    fresh.mkdir()
    for part in ("data/raw", "data/eval"):
        shutil.copytree(built_copy / part, fresh / part)
    shutil.copy(built_copy / "corpus.yaml", fresh / "corpus.yaml")
    scratch = build(fresh, assets=[*BATCH_STAGES, DEDUPLICATED_DOCUMENTS])
    assert scratch.ok, scratch.render()
    assert scratch.materialized[RAW_DOCUMENTS]["batches_read"] == 5
    for stage in BATCH_STAGES:
        assert tree_digest(fresh / "data" / stage) == tree_digest(built_copy / "data" / stage)
    # dedup appended a generation where the fresh build wrote one: the same rows and clusters
    assert dedup_rows(fresh) == dedup_rows(built_copy)
    assert (
        built_copy / "data" / DEDUPLICATED_DOCUMENTS / "part-00000.parquet" / "g00001.parquet"
    ).is_file()


def dedup_rows(root: Path) -> set[tuple[str, str]]:
    """The (doc_id, cluster_id) of every row deduplicated_documents kept, every generation."""
    table = read_all_shards(root / "data" / DEDUPLICATED_DOCUMENTS, 8)
    return set(zip(table["doc_id"].to_pylist(), table["cluster_id"].to_pylist(), strict=True))


def test_a_changed_raw_file_fails_naming_it_and_reingest_takes_it(built_copy: Path) -> None:
    published = built_copy / "data" / RAW_DOCUMENTS
    snapshot, before = current_snapshot(built_copy, published), stage_files(built_copy)
    crawl = built_copy / WEB / "crawl-0.jsonl"
    lines = crawl.read_text(encoding="utf-8").splitlines(keepends=True)
    crawl.write_text("".join(lines[:-1]), encoding="utf-8")  # one row less

    report = build(built_copy, assets=BATCH_STAGES)
    assert not report.ok
    text = report.render()
    assert "raw file web/crawl-0.jsonl changed after it was ingested" in text
    assert f"raw_documents snapshot {snapshot}" in text
    assert "corpus run --reingest web/crawl-0.jsonl" in text
    assert current_snapshot(built_copy, published) == snapshot
    assert stage_files(built_copy) == before  # nothing published moved

    again = run_build(
        built_copy,
        instance=dg.DagsterInstance.ephemeral(),
        assets=BATCH_STAGES,
        reingest=("web/crawl-0.jsonl",),
    )
    assert again.ok, again.render()
    assert (again.materialized[RAW_DOCUMENTS]["batches_read"]) == 1
    manifest = json.loads((published / MANIFEST).read_text())
    assert manifest["rows_per_file"]["web/crawl-0.jsonl"] == len(lines) - 1
    after = stage_files(built_copy)
    crawl_key = batch_key("web/crawl-0.jsonl")
    untouched = [n for n in before if crawl_key not in n and not n.endswith(MANIFEST)]
    assert untouched and all(after[n] == before[n] for n in untouched)
    assert any(after[n] != before[n] for n in before if crawl_key in n)


def test_each_raw_file_is_a_partition_and_a_run_of_one_adds_only_that_batch(
    built_copy: Path,
) -> None:
    rows = new_authors_rows(built_copy, 20)
    append(built_copy, "crawl-later-a.jsonl", rows[:10])
    append(built_copy, "crawl-later-b.jsonl", rows[10:])
    instance = dg.DagsterInstance.ephemeral()
    project = CorpusProject(root=str(built_copy))
    keys = sync_raw_batches(instance, raw_file_names(project))
    assert keys == sorted(keys) and "web/crawl-later-a.jsonl" in keys

    job = build_definitions(project).resolve_job_def(BUILD_JOB)
    one = job.execute_in_process(  # as the UI's "materialize" of one partition does
        instance=instance,
        asset_selection=[dg.AssetKey(stage) for stage in BATCH_STAGES],
        tags={"dagster/partition": "web/crawl-later-a.jsonl"},
        raise_on_error=False,
    )
    assert one.success
    manifest = json.loads((built_copy / "data" / RAW_DOCUMENTS / MANIFEST).read_text())
    assert manifest["rows_per_file"]["web/crawl-later-a.jsonl"] == 10
    assert "web/crawl-later-b.jsonl" not in manifest["rows_per_file"]  # waits for its partition
    filtered = json.loads((built_copy / "data" / FILTERED_DOCUMENTS / MANIFEST).read_text())
    assert sorted(filtered["batches"]) == sorted(manifest["batches"])
    for stage in BATCH_STAGES:
        assert instance.get_materialized_partitions(dg.AssetKey(stage)) == {
            "web/crawl-later-a.jsonl"
        }

    report = run_build(built_copy, instance=instance, assets=BATCH_STAGES)  # every partition
    assert report.ok, report.render()
    assert (report.materialized[RAW_DOCUMENTS]["batches_read"]) == 1  # only b was left
    for stage in BATCH_STAGES:
        assert instance.get_materialized_partitions(dg.AssetKey(stage)) == set(
            instance.get_dynamic_partitions(RAW_BATCHES.name)
        )
    (built_copy / WEB / "crawl-later-b.jsonl").unlink()  # a removed file leaves the partitions
    assert "web/crawl-later-b.jsonl" not in sync_raw_batches(instance, raw_file_names(project))


def test_filter_findings_do_not_depend_on_how_many_tasks_are_merged_at_once(
    built_copy: Path, tmp_path: Path, monkeypatch
) -> None:
    corpus = CorpusProject(root=str(built_copy))
    config = corpus.load()
    names = sorted(read_manifest(corpus.stage_dir(RAW_DOCUMENTS))["batches"])
    at_once = filter_new_batches(corpus, config, names, tmp_path / "at-once")
    monkeypatch.setattr(filtering_assets, "MERGE_EVERY", 1)  # one task's findings at a time
    one_by_one = filter_new_batches(corpus, config, names, tmp_path / "one-by-one")
    records = {n: to_record(s, "") for n, s in at_once.items()}
    assert len(names) * config.num_shards > 1 and all(r["samples"] for r in records.values())
    assert {n: to_record(s, "") for n, s in one_by_one.items()} == records
    assert (
        sum(r["rows_in"] for r in records.values())
        == read_manifest(corpus.stage_dir(RAW_DOCUMENTS))["rows"]
    )
