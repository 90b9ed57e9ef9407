"""The shared array helpers."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.arrays import distinct, utf8_slices
from corpus_platform.base.shards import write_in_order, write_parquet


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
