"""The leak checks of an appended split: what the new generation touches, against every row.

An append writes generation ``g`` of each split beside the published files, which it keeps byte
for byte (the stability check proves it). Every published row passed these checks when it was
published, so a leak in the candidate has a new row at one end: a new row whose entity or
duplicate cluster has a row in another split, or a similar pair (at the split's threshold) with
a new row whose two ends sit in train and a held-out split. These functions look only there, new
rows against every row, published or new, and so give the verdict of the full check
(:mod:`corpus_platform.kernels.splitting.leakage`) at the cost of the new rows. The similar pairs
are those the dedup stage found for the new rows against its index of every row (one candidate
generation serves the split and its checks); each crossing pair's Jaccard is measured again on
the split's own texts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import shard_generation_files
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, read_parquet
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.dedup.minhash import shingle_sets
from corpus_platform.kernels.splitting.content import is_leak
from corpus_platform.kernels.splitting.leakage import (
    MAX_EXAMPLES,
    CrossingReport,
    NeighbourReport,
)

HELD_OUT = ("validation", "test")


def split_tables(
    split_root: Path, num_shards: int, columns: list[str], generation: int | None, new: bool
) -> Iterator[tuple[int, pa.Table]]:
    """(split index, table) of the files of generation ``generation`` of every split
    (``new``), or of every other generation (``not new``); every file for ``None``."""
    for index, name in enumerate(SPLITS):
        for shard in range(num_shards):
            path = part_path(split_root / name, shard)
            for file in shard_generation_files(path, generation, new):
                yield index, read_parquet(file, columns)


def _keyed(index: int, keys: pa.Array | pa.ChunkedArray) -> pa.Table:
    keys = pc.unique(keys).cast(pa.string())
    return pa.table({"key": keys, "split": pa.array([index] * len(keys), pa.int8())})


def crossing_keys_touched(
    split_root: Path,
    num_shards: int,
    column: str,
    kind: str,
    generation: int,
    exempt: pa.Array | None = None,
) -> CrossingReport:
    """Keys of ``column`` (entities, duplicate clusters) of the new generation's rows found in
    more than one split, counting every row of the candidate that holds them; keys ``exempt``
    (duplicate clusters too short to leak) are not looked at."""
    new = [
        _keyed(i, t.column(column))
        for i, t in split_tables(split_root, num_shards, [column], generation, True)
    ]
    parts = [_keyed(0, pa.array([], pa.string())), *new]
    keys = pc.unique(pa.concat_tables(parts).column("key"))
    if exempt is not None:
        keys = pc.filter(keys, pc.invert(pc.is_in(keys, exempt)))
        parts = [p.filter(pc.is_in(p.column("key"), keys)) for p in parts]
    for index, table in split_tables(split_root, num_shards, [column], generation, False):
        values = table.column(column)
        parts.append(_keyed(index, pc.filter(values, pc.is_in(values, keys))))
    seen = (
        pa.concat_tables(parts)
        .group_by("key", use_threads=False)
        .aggregate([("split", "count_distinct")])
    )
    crossing = seen.filter(pc.greater(seen.column("split_count_distinct"), 1)).column("key")
    examples = pc.take(crossing, pc.sort_indices(crossing)[:MAX_EXAMPLES]).to_pylist()
    return CrossingReport(
        f"{kind} of generation {generation}'s rows", len(keys), len(crossing), tuple(examples)
    )


def _where(split_root: Path, num_shards: int, ids: pa.Array) -> pa.Table:
    """(doc_id, text, split index) of the candidate's rows among ``ids``, every generation."""
    found = [pa.table({"doc_id": pa.array([], pa.string()), "text": pa.array([], pa.string())})]
    found[0] = found[0].append_column("split", pa.array([], pa.int8()))
    for index, table in split_tables(split_root, num_shards, ["doc_id", "text"], None, True):
        table = table.filter(pc.is_in(table.column("doc_id"), ids))
        found.append(table.append_column("split", pa.array([index] * len(table), pa.int8())))
    return pa.concat_tables(found, promote_options="default")


def _leaks(a: str | None, b: str | None, params: DedupParams, threshold: float) -> bool:
    """Both texts carry ``params.min_shingles`` n-grams and their Jaccard reaches
    ``threshold`` (0: any pair with enough content)."""
    sets = shingle_sets([a or "", b or ""], params.shingle_size, params.normalization)
    return is_leak(sets.row(0), sets.row(1), threshold, params.min_shingles)


def crossing_pairs_touched(
    split_root: Path, num_shards: int, pairs: pa.Table, generation: int, params: DedupParams
) -> tuple[CrossingReport, NeighbourReport]:
    """The similar pairs with a new row (``pairs``: those the dedup stage found for the rows of
    this generation) whose two ends are both in the candidate: (any two splits: the cluster
    check's pair count; a held-out row and a train row, their Jaccard measured again on the
    split's texts at or above ``params.pair_threshold``: the neighbour check)."""
    ids = pc.unique(pa.chunked_array([pairs["doc_a"], pairs["doc_b"]], pa.string()))
    where = _where(split_root, num_shards, ids)
    present = pairs.select(["doc_a", "doc_b"])
    for side in ("a", "b"):
        named = where.rename_columns([f"doc_{side}", f"text_{side}", f"split_{side}"])
        present = present.join(named, f"doc_{side}", join_type="inner", use_threads=False)
    present = present.sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])
    crossing = present.filter(pc.not_equal(present["split_a"], present["split_b"]))
    texts = zip(crossing["text_a"].to_pylist(), crossing["text_b"].to_pylist(), strict=True)
    linking = pa.array([_leaks(a, b, params, 0.0) for a, b in texts], pa.bool_())
    crossing = crossing.filter(linking)  # pairs too short to leak link nothing
    train, held = SPLITS.index("train"), {SPLITS.index(n) for n in HELD_OUT}
    neighbour: dict[str, str] = {}
    for row in crossing.to_pylist():
        ends = sorted((row[f"split_{s}"], row[f"doc_{s}"], row[f"text_{s}"]) for s in "ab")
        (low, low_id, low_text), (high, high_id, high_text) = ends  # train sorts first
        if low != train or high not in held:
            continue
        if _leaks(low_text, high_text, params, params.pair_threshold):
            neighbour[high_id] = min(low_id, neighbour.get(high_id, low_id))
    firsts, seconds = crossing["doc_a"].to_pylist(), crossing["doc_b"].to_pylist()
    pair_examples = tuple(f"{a}~{b}" for a, b in zip(firsts, seconds, strict=True))
    examples = tuple(f"{h}~{neighbour[h]}" for h in sorted(neighbour)[:MAX_EXAMPLES])
    tables = split_tables(split_root, num_shards, ["doc_id"], generation, True)
    new_rows = sum(len(t) for _, t in tables)
    return (
        CrossingReport(
            "similar pairs with a new row",
            len(present),
            len(crossing),
            pair_examples[:MAX_EXAMPLES],
        ),
        NeighbourReport(new_rows, len(present), len(neighbour), examples),
    )
