"""The shared array helpers."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.arrays import distinct, list_parts, one_array, utf8_slices
from corpus_platform.base.shards import read_scratch, write_in_order, write_parquet, write_scratch


def test_distinct_equals_numpy_unique() -> None:
    rng = np.random.default_rng(5)
    for values in (
        rng.integers(0, 50, 10_000),
        rng.integers(0, 2**62, 1_000).astype(np.uint64),
        np.array([], dtype=np.int64),
        np.array([7]),
    ):
        assert np.array_equal(distinct(values), np.unique(values))


def test_utf8_slices_are_the_texts_bytes_in_the_order_asked() -> None:
    texts = ["plain", None, "naïve café", "", "日本語 text", "last"]
    chunked = pa.chunked_array(
        [pa.array(texts[:2], pa.string()), pa.array(texts[2:5]), pa.array(texts[5:])]
    )
    order = np.array([5, 2, 0, 1, 4, 3, 2])
    expected = [(texts[i] or "").encode("utf-8") for i in order]
    assert [bytes(b) for b in utf8_slices(chunked, order)] == expected
    sliced = pa.array(texts, pa.large_string()).slice(2, 3)  # a slice's own offsets
    assert [bytes(b) for b in utf8_slices(sliced, np.array([2, 0]))] == [
        "日本語 text".encode(),
        "naïve café".encode(),
    ]


def test_write_in_order_is_the_file_of_the_reordered_table(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "key": [f"k{i}" for i in range(2500)],
            "text": [" ".join(["word"] * int(n)) for n in rng.integers(1, 40, 2500)],
            "draw": pa.array(rng.integers(0, 3, 2500), pa.int32()),
        }
    )
    order = rng.permutation(2500).astype(np.uint64)  # as Arrow's sort_indices gives them
    write_parquet(table.take(order), tmp_path / "taken.parquet", row_group_size=1024)
    chunked = pa.concat_tables([table.slice(0, 700), table.slice(700, 1), table.slice(701)])
    for name, rows in (("whole", table), ("chunked", chunked)):
        write_in_order(rows, order, tmp_path / f"{name}.parquet", 1024)
        written = (tmp_path / f"{name}.parquet").read_bytes()
        assert written == (tmp_path / "taken.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "chunked.parquet").metadata.num_row_groups == 3


def test_one_array_keeps_a_single_chunk_and_concatenates_several(tmp_path: Path) -> None:
    """A column of one chunk comes back as that chunk, its buffers not copied (a slice keeps
    its offset, so offsets still index the whole values); several chunks are concatenated."""
    lists = pa.array([[1, 2], [3], [], [4, 5, 6]], pa.list_(pa.uint64()))
    sliced = pa.chunked_array([lists.slice(1, 3)])
    alone = one_array(sliced)
    assert alone.buffers()[1].address == lists.buffers()[1].address and alone.offset == 1
    flat, ends = alone.values.to_numpy(), alone.offsets.to_numpy()
    assert [flat[ends[i] : ends[i + 1]].tolist() for i in range(3)] == [[3], [], [4, 5, 6]]
    two = one_array(pa.chunked_array([lists.slice(0, 1), lists.slice(3, 1)]))
    assert two.to_pylist() == [[1, 2], [4, 5, 6]] and two.offset == 0
    assert one_array(pa.chunked_array([], pa.string())).to_pylist() == []
    assert one_array(lists) is lists
    values, offsets = list_parts(sliced)  # the slice's own values, offsets from 0
    assert values.tolist() == [3, 4, 5, 6] and offsets.tolist() == [0, 1, 1, 4]
    empty = list_parts(pa.chunked_array([], pa.list_(pa.uint64())))
    assert empty[0].tolist() == [] and empty[1].tolist() == [0]
    table = pa.table({"shingles": lists, "doc_id": ["a", "b", "c", "d"]})
    write_scratch(table, tmp_path / "sets.arrow")
    assert read_scratch(tmp_path / "sets.arrow").equals(table)
