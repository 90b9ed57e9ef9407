"""An append's candidates: new rows against each other and against the index of published rows.

Steps 1 to 3 of an append (:mod:`corpus_platform.kernels.dedup.append_clusters` runs them), each
an engine task that reads and writes the append's scratch folder:

1. :func:`sketch_new_shard`: one shard's rows of the new raw batches sketched as a build from
   scratch sketches them (exact keys, shingles, MinHash, band keys) and written to the index as
   the new generation.
2. :func:`published_hits`: one shard of the published index, its rows that share a band key or an
   exact key with a new row.
3. :func:`append_candidates`: one band group's candidate pairs with at least one new row (new
   with new, new with published), buckets above ``MAX_BUCKET_PAIRS`` linked as a star around
   their smallest doc id as in a build from scratch; :func:`exact_links`: every new row with an
   exact key another row has, linked to the smallest doc id holding it.

A published pair of rows is never a candidate again: what the published snapshot decided about
it stands.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import (
    HASH_FILE_OPTIONS,
    batch_part_path,
    iter_shards,
    part_path,
    read_parquet,
    read_shard,
    write_parquet,
)
from corpus_platform.kernels.dedup.candidates import colliding_rows, doc_ids_at
from corpus_platform.kernels.dedup.index import band_columns, write_index_shard
from corpus_platform.kernels.dedup.params import MAX_BUCKET_PAIRS, DedupParams
from corpus_platform.kernels.dedup.signatures import SketchFiles, sketch_table

OLD = np.uint64(1) << np.uint64(63)  # band rows of published rows: OLD | their index
HIT_SCHEMA = pa.schema([("band", pa.int16()), ("key", pa.uint64()), ("doc_id", pa.string())])
EXACT_SCHEMA = pa.schema([("key", pa.string()), ("doc_id", pa.string())])
LINK_SCHEMA = pa.schema(
    [
        ("doc_a", pa.string()),
        ("doc_b", pa.string()),
        ("old_a", pa.bool_()),
        ("old_b", pa.bool_()),
    ]
)


def sketch_new_shard(
    shard: int,
    upstream: Path,
    batches: tuple[str, ...],
    scratch: Path,
    params: DedupParams,
    index: Path,
    generation: int,
) -> int:
    """Sketch one shard's rows of the raw batches ``batches`` (keys of ``filtered_documents``'
    batch files) into ``scratch`` and write them to ``index`` as generation ``generation``;
    return the rows read."""
    tables = [read_parquet(batch_part_path(upstream, shard, b)) for b in batches]
    table = pa.concat_tables(tables, promote_options="default")
    out = SketchFiles.of_shard(scratch, shard, len(params.band_groups()))
    sketch_table(table, shard, params, out)
    write_index_shard(shard, scratch, index, params, generation)
    return len(table)


def new_keys(_: int, scratch: Path, num_shards: int, params: DedupParams) -> None:
    """Every band key and exact key of the new rows, distinct, to ``new-keys/`` (what each
    :func:`published_hits` task looks up). An engine task."""
    bands = []
    for group in range(len(params.band_groups())):
        folder = scratch / "bands" / f"group-{group}"
        tables = [t.select(["band", "key"]) for _, t in iter_shards(folder, num_shards)]
        bands.append(
            pa.concat_tables(tables).group_by(["band", "key"], use_threads=False).aggregate([])
        )
    write_parquet(pa.concat_tables(bands), scratch / "new-keys" / "bands.parquet")
    keys = pa.concat_tables([t for _, t in iter_shards(scratch / "keys", num_shards, ["key"])])
    write_parquet(
        keys.group_by("key", use_threads=False).aggregate([]),
        scratch / "new-keys" / "exact.parquet",
    )


def published_hits(shard: int, index: Path, scratch: Path, bands: int) -> int:
    """The rows of one shard of the published index sharing a band key or an exact key with a
    new row, to ``hits/`` and ``exact-hits/``; return the band hits. An engine task."""
    wanted = read_parquet(scratch / "new-keys" / "bands.parquet")
    table = read_shard(index, shard) if part_path(index, shard).exists() else None
    found, exact = [HIT_SCHEMA.empty_table()], EXACT_SCHEMA.empty_table()
    matrix = band_columns(table, bands) if table is not None else None
    if matrix is not None and table is not None:
        ids = table.column("doc_id")
        band_of, keys_of = wanted.column("band").to_numpy(), wanted.column("key").to_numpy()
        for band in range(bands):
            rows = np.flatnonzero(np.isin(matrix[:, band], keys_of[band_of == band]))
            if len(rows):
                hit = {"band": np.full(len(rows), band, np.int16), "key": matrix[rows, band]}
                hit["doc_id"] = ids.take(pa.array(rows))
                found.append(pa.table(hit, schema=HIT_SCHEMA))
        keys = read_parquet(scratch / "new-keys" / "exact.parquet").column("key")
        exact = table.select(["key", "doc_id"]).filter(pc.is_in(table.column("key"), keys))
    hits = pa.concat_tables(found)
    write_parquet(hits, part_path(scratch / "hits", shard), **HASH_FILE_OPTIONS)
    write_parquet(exact.cast(EXACT_SCHEMA), part_path(scratch / "exact-hits", shard))
    return len(hits)


def _pairs(members: list[tuple[str, bool]]) -> list[tuple[str, str, bool, bool]]:
    """The pairs of one bucket with at least one new row: every pair, or (above
    ``MAX_BUCKET_PAIRS`` members) the star around the smallest doc id; (a, b, a old, b old)."""
    members = sorted(set(members))
    if len(members) > MAX_BUCKET_PAIRS:
        first = members[0]
        pairs = [(first, m) for m in members[1:]]
    else:
        pairs = [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]
    return [(a, b, old_a, old_b) for (a, old_a), (b, old_b) in pairs if not (old_a and old_b)]


def append_candidates(group: int, scratch: Path, num_shards: int, params: DedupParams) -> int:
    """One band group's candidate pairs with at least one new row, named by doc id (a < b),
    distinct and sorted, to ``candidates/group-N``; return how many. An engine task."""
    folder = scratch / "bands" / f"group-{group}"
    new = pa.concat_tables([t for _, t in iter_shards(folder, num_shards)])
    span = params.band_groups()[group]
    hits = pa.concat_tables([t for _, t in iter_shards(scratch / "hits", num_shards)])
    band_in = hits.column("band")
    hits = hits.filter(pc.and_(pc.greater_equal(band_in, span.start), pc.less(band_in, span.stop)))
    old_ids = pc.unique(hits.column("doc_id")).sort()
    old_rows = OLD | pc.index_in(hits.column("doc_id"), value_set=old_ids).to_numpy().astype(
        np.uint64
    )
    band = np.concatenate([new.column("band").to_numpy(), hits.column("band").to_numpy()])
    key = np.concatenate([new.column("key").to_numpy(), hits.column("key").to_numpy()])
    row = np.concatenate([new.column("row").to_numpy(), old_rows])
    found = colliding_rows(band, key, row)
    buckets = [*(found.pairs.tolist()), *(b.tolist() for b in found.larger)]
    rows = {r for bucket in buckets for r in bucket}
    names = doc_ids_at(scratch, {r for r in rows if r < int(OLD)})
    olds = old_ids.to_pylist()
    names |= {r: olds[r - int(OLD)] for r in rows if r >= int(OLD)}
    pairs = {
        pair
        for bucket in buckets
        if any(r < int(OLD) for r in bucket)
        for pair in _pairs([(names[r], r >= int(OLD)) for r in bucket])
    }
    table = pa.Table.from_pylist(
        [dict(zip(LINK_SCHEMA.names, p, strict=True)) for p in sorted(pairs)], schema=LINK_SCHEMA
    )
    write_parquet(table, scratch / "candidates" / f"group-{group:05d}.parquet")
    return len(table)


def exact_links(_: int, scratch: Path, num_shards: int) -> int:
    """Every new row whose exact key another row holds (new or published), linked to the
    smallest doc id holding it, to ``exact-links.parquet``; return how many. An engine task."""
    new = pa.concat_tables(
        [t for _, t in iter_shards(scratch / "keys", num_shards, ["key", "doc_id"])]
    ).cast(EXACT_SCHEMA)
    old = pa.concat_tables([t for _, t in iter_shards(scratch / "exact-hits", num_shards)])
    rows = pa.concat_tables(
        [
            new.append_column("old", pa.array([False] * len(new))),
            old.append_column("old", pa.array([True] * len(old), pa.bool_())),
        ]
    )
    smallest = rows.group_by("key", use_threads=False).aggregate(
        [("doc_id", "min"), ("doc_id", "count")]
    )
    shared = smallest.filter(pc.greater(smallest.column("doc_id_count"), 1))
    joined = rows.filter(pc.invert(rows.column("old"))).join(
        shared, "key", join_type="inner", use_threads=False
    )
    joined = joined.filter(pc.not_equal(joined.column("doc_id"), joined.column("doc_id_min")))
    heads = joined.column("doc_id_min")
    head_old = pc.is_in(heads, old.column("doc_id"))
    table = pa.table(
        [joined.column("doc_id"), heads, pa.array([False] * len(joined)), head_old],
        schema=LINK_SCHEMA,
    ).sort_by([("doc_a", "ascending"), ("doc_b", "ascending")])
    write_parquet(table, scratch / "exact-links.parquet")
    return len(table)
