"""Array helpers shared by the kernels: sorted distinct values, a 64-bit bit mixer, the UTF-8
bytes of Arrow texts in a chosen order, a column as one array."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

MIX_1, MIX_2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)


def distinct(values: np.ndarray, runs: bool = False) -> np.ndarray:
    """``values`` sorted, each once: ``np.unique`` without its hash table (numpy 2's default
    for integers), which is several times slower than a sort on long arrays. ``runs``: the
    values come in long ascending runs (keys led by an ascending owner), which a stable sort
    (timsort) merges in about half a quicksort's time."""
    ordered = np.sort(values, kind="stable" if runs else "quicksort")
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def avalanche64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, element-wise (a bijection that spreads every bit)."""
    x = x ^ (x >> np.uint64(33))
    x = x * MIX_1
    x = x ^ (x >> np.uint64(33))
    x = x * MIX_2
    return x ^ (x >> np.uint64(33))


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``values`` as one array: an array, or a column's only chunk, as it is (a slice, maybe);
    the chunks concatenated only when there are several. ``combine_chunks`` copies a single
    chunk too, into fresh memory: 1.2 s for a 400 MB column of shingle lists."""
    if isinstance(values, pa.Array):
        return values
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()


def list_parts(lists: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """The values of a list column end to end and its int64 offsets into them (``offsets[0]``
    is 0, so list ``i`` is ``values[offsets[i]:offsets[i + 1]]``), without a copy of the
    values: a slice's offsets index its parent's whole value buffer, which is cut to the slice's
    own values here."""
    array = one_array(lists)
    offsets = array.offsets.to_numpy().astype(np.int64)
    values = array.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
    return values, offsets - offsets[0]


def chunk_rows(lengths: list[int], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For row numbers ``rows`` of chunks of ``lengths`` rows laid end to end: each row's chunk
    and its row number inside that chunk."""
    starts = np.cumsum([0, *lengths], dtype=np.int64)
    rows = np.asarray(rows, np.int64)  # unsigned row numbers less a start would be floats
    owners = np.searchsorted(starts, rows, side="right") - 1
    return owners, rows - starts[owners]


def utf8_slices(texts: pa.Array | pa.ChunkedArray, order: np.ndarray) -> Iterator[memoryview]:
    """The UTF-8 bytes of ``texts[i]`` (string or large_string) for each ``i`` of ``order`` (an
    empty slice for a null), as views of the arrays' own buffers: nothing is copied or decoded,
    so writing a shard's texts in another order costs no second copy of them. Views stay valid
    while ``texts`` lives."""
    from corpus_platform.base.words import text_buffers

    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    views = []
    for chunk in chunks:
        data, offsets = text_buffers(chunk)
        valid = (
            chunk.is_valid().to_numpy(zero_copy_only=False)
            if chunk.null_count
            else np.ones(len(chunk), np.bool_)
        )
        views.append((memoryview(data), offsets, valid))
    owners, rows = chunk_rows([len(c) for c in chunks], order)
    for owner, row in zip(owners.tolist(), rows.tolist(), strict=True):
        data, offsets, valid = views[owner]
        yield data[offsets[row] : offsets[row + 1]] if valid[row] else data[0:0]
