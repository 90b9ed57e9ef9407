"""Step 2: band keys grouped across shards into candidate pairs; exact keys read by partition."""

from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import (
    iter_shards,
    read_scratch,
    scratch_part_path,
    write_parquet,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.engine.graph import gathered, scatter_to
from corpus_platform.kernels.dedup.params import (
    MAX_BUCKET_PAIRS,
    DedupParams,
)


def _bucket_pairs(members: list[str]) -> list[tuple[str, str]]:
    members = sorted(set(members))
    if len(members) > MAX_BUCKET_PAIRS:
        return [(members[0], m) for m in members[1:]]
    return [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]


@dataclass(frozen=True)
class Collisions:
    """The (band, key) buckets holding more than one row: pairs of rows from the buckets of
    two (an ``(n, 2)`` array, smaller row first), and the rows of each larger bucket."""

    pairs: np.ndarray
    larger: list[np.ndarray]


def colliding_rows(band: np.ndarray, key: np.ndarray, row: np.ndarray) -> Collisions:
    """The buckets of rows that share a (band, key), by sorting (no hashing of strings, no
    per-bucket lists for the many buckets of one or two)."""
    order = np.lexsort((row, key, band))
    band, key, row = band[order], key[order], row[order]
    same = (band[1:] == band[:-1]) & (key[1:] == key[:-1])
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    sizes = np.diff(np.append(starts, len(row)))
    two = starts[sizes == 2]
    larger = [row[a : a + n] for a, n in zip(starts[sizes > 2], sizes[sizes > 2], strict=True)]
    return Collisions(np.stack([row[two], row[two + 1]], axis=1), larger)


def doc_ids_at(scratch: Path, rows: set[int]) -> dict[int, str]:
    """The doc ids behind band-row numbers (``shard << 32 | position``)."""
    by_shard: dict[int, list[int]] = defaultdict(list)
    for row in rows:
        by_shard[row >> 32].append(row)
    found = {}
    for shard, wanted in sorted(by_shard.items()):
        ids = read_scratch(scratch_part_path(scratch / "sketches", shard)).column("doc_id")
        found.update({row: ids[row & 0xFFFFFFFF].as_py() for row in wanted})
    return found


CANDIDATE_SCHEMA = pa.schema(
    [
        ("doc_a", pa.string()),
        ("doc_b", pa.string()),
        ("shard_a", pa.int32()),
        ("shard_b", pa.int32()),
    ]
)


def candidate_file(scratch: Path, group: int) -> Path:
    """Where one band group's candidate pairs are written."""
    return scratch / "candidates" / f"group-{group:05d}.parquet"


ID_SCHEMA = pa.schema([("doc_id", pa.string())])


def group_band_keys(group: int, scratch: Path, num_shards: int, params: DedupParams) -> int:
    """One band group's candidate pairs, named by doc id (a < b) with each row's shard, sorted,
    written to :func:`candidate_file`, and the group's candidate rows scattered by shard to
    ``candidate-ids/`` (:func:`candidate_ids`); return the pairs written.

    An engine task: one band group's keys are in memory at a time, as three numeric arrays.
    """
    folder = scratch / "bands" / f"group-{group}"
    keys = pa.concat_tables([t for _, t in iter_shards(folder, num_shards)])
    band, key, row = (keys.column(c).to_numpy() for c in ("band", "key", "row"))
    del keys
    found = colliding_rows(band, key, row)
    distinct = np.unique(found.pairs, axis=0)
    rows = {int(r) for r in distinct.reshape(-1)} | {int(r) for b in found.larger for r in b}
    names = doc_ids_at(scratch, rows)
    shard = {name: row >> 32 for row, name in names.items()}  # a band row is shard << 32 | pos
    pairs = {(min(names[a], names[b]), max(names[a], names[b])) for a, b in distinct.tolist()}
    for bucket in found.larger:
        pairs.update(_bucket_pairs([names[int(r)] for r in bucket]))
    ordered = sorted(pairs)
    firsts, seconds = [a for a, _ in ordered], [b for _, b in ordered]
    table = pa.table(
        [firsts, seconds, [shard[a] for a in firsts], [shard[b] for b in seconds]],
        schema=CANDIDATE_SCHEMA,
    )
    write_parquet(table, candidate_file(scratch, group))
    linked = sorted({*firsts, *seconds})
    owner = np.array([shard[d] for d in linked], dtype=np.int64)
    ids = pa.table([pa.array(linked, pa.string())], schema=ID_SCHEMA)
    scatter_to(ids, owner, scratch / "candidate-ids", group, num_shards)
    return len(ordered)


def candidate_ids(scratch: Path, shard: int) -> pa.Array:
    """The doc ids of ``shard`` that are in at least one candidate pair, sorted."""
    ids = gathered(scratch / "candidate-ids", shard, ID_SCHEMA).column("doc_id")
    return pc.unique(ids.combine_chunks()).sort() if len(ids) else pa.array([], pa.string())


def candidate_groups(scratch: Path) -> list[int]:
    """The band groups whose candidate files :func:`group_band_keys` wrote."""
    paths = (scratch / "candidates").glob("group-*.parquet")
    return sorted(int(p.name.removeprefix("group-").split(".")[0]) for p in paths)


def group_candidates(
    scratch: Path, num_shards: int, params: DedupParams, engine: Engine | None = None
) -> None:
    """Write the candidate pairs under ``scratch/candidates``, one file per band group: one
    engine task per band group (:func:`group_band_keys`); nothing comes back to the caller."""
    for folder in ("candidates", "candidate-ids"):
        shutil.rmtree(scratch / folder, ignore_errors=True)
    (engine or LocalEngine()).map_shards(
        partial(group_band_keys, scratch=scratch, num_shards=num_shards, params=params),
        range(len(params.band_groups())),
    )


def exact_key_partition(scratch: Path, num_shards: int, part: int, partitions: int) -> pa.Table:
    """The (doc_id, key) rows of every shard whose exact key falls in partition ``part``
    (``key hash mod partitions``)."""
    tables = []
    for _, table in iter_shards(scratch / "keys", num_shards, ["doc_id", "key"]):
        if partitions > 1:
            owner = [int(k[-8:], 16) % partitions for k in table.column("key").to_pylist()]
            table = table.filter(pa.array(np.array(owner) == part))
        tables.append(table)
    return pa.concat_tables(tables)
