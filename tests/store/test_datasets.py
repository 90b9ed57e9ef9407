"""Atomic publication of stage folders and byte-deterministic Parquet."""

from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.store.datasets import candidate_folder, promote, recover_stage_folders


def test_equal_tables_give_identical_bytes(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    write_parquet(table, tmp_path / "one.parquet")
    write_parquet(pa.table({"a": [1, 2, 3], "b": ["x", "y", None]}), tmp_path / "two.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


def test_a_promoted_candidate_replaces_the_folder(tmp_path: Path) -> None:
    final = tmp_path / "data" / "stage"
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [1]}), staging / "part-00000.parquet")
    assert not final.exists()  # a candidate is not published until promoted
    promote(final)
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [2]}), staging / "part-00000.parquet")
    assert read_shard(final, 0).column("a").to_pylist() == [1]
    promote(final)
    assert read_shard(final, 0).column("a").to_pylist() == [2]
    assert sorted(p.name for p in final.parent.iterdir()) == ["stage"]


def test_a_failed_write_leaves_the_published_folder_untouched(tmp_path: Path) -> None:
    final = tmp_path / "data" / "stage"
    with candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [1]}), staging / "part-00000.parquet")
    promote(final)
    with pytest.raises(RuntimeError), candidate_folder(final) as staging:
        write_parquet(pa.table({"a": [99]}), staging / "part-00000.parquet")
        raise RuntimeError("shard 3 failed")
    assert read_shard(final, 0).column("a").to_pylist() == [1]
    assert sorted(p.name for p in final.parent.iterdir()) == ["stage"]


def test_leftovers_of_an_interrupted_build_are_cleaned_or_put_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / ".staging-a").mkdir(parents=True)
    (data / ".previous-b").mkdir()  # died between the two renames: b is missing
    (data / ".previous-c").mkdir()
    (data / "c").mkdir()
    actions = recover_stage_folders(tmp_path)
    assert len(actions) == 3 and any("restored data/b" in a for a in actions)
    assert sorted(p.name for p in data.iterdir()) == ["b", "c"]


def test_missing_shard_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"part-00004\.parquet: dataset file missing"):
        read_shard(tmp_path, 4)
