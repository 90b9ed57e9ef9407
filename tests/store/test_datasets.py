"""Atomic publication of stage folders and byte-deterministic Parquet."""

from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.store.datasets import (
    candidate_folder,
    forget_input_pointers,
    keep_input_pointers,
    promote,
    recover_stage_folders,
    restore_input_pointers,
    roll_back,
    settle,
)


def test_equal_tables_give_identical_bytes(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    write_parquet(table, tmp_path / "one.parquet")
    write_parquet(pa.table({"a": [1, 2, 3], "b": ["x", "y", None]}), tmp_path / "two.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


def publish(final: Path, value: int) -> None:
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [value]}), staging / "part-00000.parquet")
    promote(final)
    (final.parent / f"{final.name}.dvc").write_text(f"pointer {value}")
    settle(final)


def test_a_promoted_candidate_replaces_the_folder(tmp_path: Path) -> None:
    final = tmp_path / "data" / "stage"
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [1]}), staging / "part-00000.parquet")
    assert not final.exists()  # a candidate is not published until promoted
    publish(final, 1)
    publish(final, 2)
    assert read_shard(final, 0).column("a").to_pylist() == [2]
    assert sorted(p.name for p in final.parent.iterdir()) == ["stage", "stage.dvc"]


def test_a_failed_write_leaves_the_published_folder_untouched(tmp_path: Path) -> None:
    final = tmp_path / "data" / "stage"
    publish(final, 1)
    with pytest.raises(RuntimeError), candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [99]}), staging / "part-00000.parquet")
        raise RuntimeError("shard 3 failed")
    assert read_shard(final, 0).column("a").to_pylist() == [1]
    assert sorted(p.name for p in final.parent.iterdir()) == ["stage", "stage.dvc"]


def test_a_rolled_back_publication_restores_folder_and_pointer(tmp_path: Path) -> None:
    final = tmp_path / "data" / "stage"
    publish(final, 1)
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [2]}), staging / "part-00000.parquet")
    promote(final)
    (final.parent / "stage.dvc").write_text("pointer 2")  # pinning moved it, then failed
    roll_back(final)
    assert read_shard(final, 0).column("a").to_pylist() == [1]
    assert (final.parent / "stage.dvc").read_text() == "pointer 1"
    assert sorted(p.name for p in final.parent.iterdir()) == ["stage", "stage.dvc"]


def test_leftovers_of_an_interrupted_build_are_cleaned_or_rolled_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / ".staging-a").mkdir(parents=True)
    (data / ".staging-a.dvc").write_text("the candidate's pointer, pinned beside its checks")
    (data / ".staging-c.dvc").write_text("a candidate's pointer without its folder")
    (data / "c.dvc.partial").write_text("a pointer being moved into place")
    publish(data / "b", 1)
    with candidate_folder(data / "b") as staging:
        write_parquet(pa.table({"a": [2]}), staging / "part-00000.parquet")
    promote(data / "b")  # the build dies here, before pinning ends
    (data / "b.dvc").write_text("pointer 2")
    actions = recover_stage_folders(tmp_path)
    assert actions == [
        "removed the unfinished candidate data/.staging-a",
        "restored data/b and its pointer from an unfinished publish",
    ]
    assert read_shard(data / "b", 0).column("a").to_pylist() == [1]
    assert (data / "b.dvc").read_text() == "pointer 1"
    assert sorted(p.name for p in data.iterdir()) == ["b", "b.dvc"]


def test_input_pointers_recorded_before_a_publication_come_back_after_a_crash(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    (data / "eval").mkdir()
    (data / "raw.dvc").write_text("outs:\n- md5: old.dir\n  path: raw\n")
    keep_input_pointers(tmp_path, "raw_documents", [data / "raw", data / "eval" / "set.jsonl"])
    # the build pins the inputs, then dies before the publication ends
    (data / "raw.dvc").write_text("outs:\n- md5: new.dir\n  path: raw\n")
    (data / "eval" / "set.jsonl.dvc").write_text("outs:\n- md5: e\n  path: set.jsonl\n")

    actions = recover_stage_folders(tmp_path)

    assert actions == ["restored the pointers of raw_documents's inputs from an unfinished publish"]
    assert (data / "raw.dvc").read_text() == "outs:\n- md5: old.dir\n  path: raw\n"
    assert not (data / "eval" / "set.jsonl.dvc").exists()  # it had no pointer before
    assert sorted(p.name for p in data.iterdir()) == ["eval", "raw", "raw.dvc"]
    assert recover_stage_folders(tmp_path) == []


def test_a_finished_publication_keeps_its_input_pointers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    keep_input_pointers(tmp_path, "raw_documents", [data / "raw"])
    (data / "raw.dvc").write_text("pointer 2")
    forget_input_pointers(tmp_path, "raw_documents")
    assert recover_stage_folders(tmp_path) == []
    assert not restore_input_pointers(tmp_path, "raw_documents")
    assert (data / "raw.dvc").read_text() == "pointer 2"


def test_missing_shard_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"part-00004\.parquet: dataset file missing"):
        read_shard(tmp_path, 4)
