"""Atomic publication of stage folders and byte-deterministic Parquet."""

from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.store.datasets import read_shard, staged_folder, write_parquet


def test_equal_tables_give_identical_bytes(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    write_parquet(table, tmp_path / "one.parquet")
    write_parquet(pa.table({"a": [1, 2, 3], "b": ["x", "y", None]}), tmp_path / "two.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


def test_success_replaces_the_folder(tmp_path: Path) -> None:
    final = tmp_path / "stage"
    with staged_folder(final) as staging:
        write_parquet(pa.table({"a": [1]}), staging / "part-00000.parquet")
        assert not final.exists()
    with staged_folder(final) as staging:
        write_parquet(pa.table({"a": [2]}), staging / "part-00000.parquet")
    assert read_shard(final, 0).column("a").to_pylist() == [2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stage"]


def test_failure_leaves_the_published_folder_untouched(tmp_path: Path) -> None:
    final = tmp_path / "stage"
    with staged_folder(final) as staging:
        write_parquet(pa.table({"a": [1]}), staging / "part-00000.parquet")
    with pytest.raises(RuntimeError), staged_folder(final) as staging:
        write_parquet(pa.table({"a": [99]}), staging / "part-00000.parquet")
        raise RuntimeError("shard 3 failed")
    assert read_shard(final, 0).column("a").to_pylist() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stage"]


def test_missing_shard_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"part-00004\.parquet: dataset file missing"):
        read_shard(tmp_path, 4)
