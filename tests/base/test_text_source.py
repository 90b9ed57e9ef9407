"""A stage that stores no text gets it back from the stage its rows were made from."""

from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.generations import (
    TextSource,
    columns_but_text,
    generation_path,
    with_texts,
)
from corpus_platform.base.shards import write_parquet


def split_rows(ids: list[str]) -> pa.Table:
    return pa.table(
        {
            "doc_id": ids,
            "text": [f"text of {i} ✓" for i in ids],
            "source": ["web"] * len(ids),
            "f1": [float(len(i)) for i in ids],
        }
    )


def write_split(folder: Path) -> None:
    write_parquet(split_rows(["a", "b", "c"]), generation_path(folder, 0, 0))
    write_parquet(split_rows(["d", "e"]), generation_path(folder, 0, 1))
    write_parquet(split_rows(["f"]), generation_path(folder, 0, 2))


def without_text(table: pa.Table) -> pa.Table:
    return table.drop_columns(["text"])


def test_the_text_comes_back_in_its_place_for_every_generation_or_some(tmp_path: Path) -> None:
    write_split(tmp_path / "split")
    whole = pa.concat_tables(
        [split_rows(["a", "b", "c"]), split_rows(["d", "e"]), split_rows(["f"])]
    )
    rows = with_texts(without_text(whole), 0, TextSource(tmp_path / "split"))
    assert rows.equals(whole)
    assert rows.column_names == ["doc_id", "text", "source", "f1"]
    later = pa.concat_tables([split_rows(["d", "e"]), split_rows(["f"])])
    assert with_texts(without_text(later), 0, TextSource(tmp_path / "split", (1, 2))).equals(later)


def test_rows_that_are_not_the_sources_fail_with_the_file_and_the_fix(tmp_path: Path) -> None:
    write_split(tmp_path / "split")
    other = without_text(split_rows(["d", "e"]))
    with pytest.raises(CorpusError, match=r"part-00000\.parquet.*corpus run --full"):
        with_texts(other, 0, TextSource(tmp_path / "split", (0,)))
    reordered = without_text(split_rows(["b", "a", "c"]))
    with pytest.raises(CorpusError, match="same order"):
        with_texts(reordered, 0, TextSource(tmp_path / "split", (0,)))


def test_a_table_with_text_or_a_source_without_text_is_left_as_it_is(tmp_path: Path) -> None:
    write_split(tmp_path / "split")
    rows = split_rows(["a", "b", "c"])
    assert with_texts(rows, 0, TextSource(tmp_path / "split", (1,))) is rows
    assert with_texts(without_text(rows), 0, None).column_names == ["doc_id", "source", "f1"]
    tabular = without_text(rows)
    write_parquet(tabular, generation_path(tmp_path / "tabular", 0, 0))
    assert with_texts(tabular, 0, TextSource(tmp_path / "tabular")) is tabular


def test_rows_whose_source_shard_is_missing_fail_unless_there_are_none(tmp_path: Path) -> None:
    rows = without_text(split_rows(["a"]))
    with pytest.raises(CorpusError, match=r"missing, and 1 rows.*corpus run --full"):
        with_texts(rows, 0, TextSource(tmp_path / "nowhere"))
    assert with_texts(rows.slice(0, 0), 0, TextSource(tmp_path / "nowhere")).num_rows == 0


def write_filtered(folder: Path) -> None:
    """A stage kept by raw batch: two batch files of shard 0."""
    write_parquet(split_rows(["a", "b", "c"]), folder / "part-00000.parquet" / "one.parquet")
    write_parquet(split_rows(["d", "e"]), folder / "part-00000.parquet" / "two.parquet")


def test_rows_kept_from_a_source_get_their_texts_by_doc_id(tmp_path: Path) -> None:
    write_filtered(tmp_path / "filtered")
    kept = pa.concat_tables([split_rows(["e"]), split_rows(["a", "c"])])  # some rows, any order
    source = TextSource(tmp_path / "filtered", some_rows=True)
    rows = with_texts(without_text(kept), 0, source)
    assert rows.equals(kept)
    assert rows.column_names == ["doc_id", "text", "source", "f1"]
    one = TextSource(tmp_path / "filtered", batches=("one",), some_rows=True)
    assert with_texts(without_text(split_rows(["b"])), 0, one).equals(split_rows(["b"]))


def test_a_kept_row_missing_from_the_batches_named_fails_with_the_file_and_the_fix(
    tmp_path: Path,
) -> None:
    write_filtered(tmp_path / "filtered")
    one = TextSource(tmp_path / "filtered", batches=("one",), some_rows=True)
    with pytest.raises(CorpusError, match=r"1 of the 2 rows .*\['d'\].*corpus run --full"):
        with_texts(without_text(split_rows(["a", "d"])), 0, one)
    strict = TextSource(tmp_path / "filtered")  # all the rows, in order, or an error
    with pytest.raises(CorpusError, match="same order"):
        with_texts(without_text(split_rows(["a", "b"])), 0, strict)


def test_columns_but_text_names_every_column_of_the_shard_but_the_text(tmp_path: Path) -> None:
    write_filtered(tmp_path / "filtered")
    assert columns_but_text(tmp_path / "filtered" / "part-00000.parquet") == [
        "doc_id",
        "source",
        "f1",
    ]
