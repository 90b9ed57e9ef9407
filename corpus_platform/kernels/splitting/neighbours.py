"""Held-out rows with a train neighbour, from the band keys the dedup stage already grouped.

The dedup stage sketches every filtered row and keeps, per shard, its LSH band keys and the
position of each row (doc id and the hash of its exact text). The split's rows are a subset of
those rows with the same texts, so the held-out neighbour check need not sketch them again:
each split shard's band rows are taken from the dedup stage's files and renumbered as two
virtual shards (train, held-out), then grouped band group by band group like the fresh search
(:func:`kernels.splitting.leakage.cross_candidates`). A split row the dedup stage did not
sketch with the same text (a hand-edited candidate, a row changed since) is sketched here, so
the answer never depends on what was reused. Candidates are confirmed by the exact Jaccard of
shingle sets computed from the split's own texts.

The band layout must match: :func:`band_layout` is what band keys depend on, saved beside the
reused files and compared before any reuse.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import stable_hexes
from corpus_platform.base.shards import (
    HASH_FILE_OPTIONS,
    SCRATCH_OPTIONS,
    part_path,
    read_json,
    read_shard,
    write_json,
    write_parquet,
)
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.kernels.dedup import BAND_SCHEMA, DedupParams, minhash, sketch
from corpus_platform.kernels.splitting.leakage import (
    MAX_EXAMPLES,
    NeighbourReport,
    cross_candidates,
    nearest_train_neighbours,
)

LAYOUT_FILE = "band_layout.json"
LOW_32 = np.uint64(0xFFFFFFFF)


def band_layout(params: DedupParams, num_shards: int) -> dict:
    """Everything a row's band keys and its shard depend on."""
    return {
        "num_perm": params.num_perm,
        "shingle_size": params.shingle_size,
        "seed": params.seed,
        "bands": list(params.bands),
        "normalization": asdict(params.normalization),
        "num_shards": num_shards,
    }


def save_band_layout(folder: Path, params: DedupParams, num_shards: int) -> None:
    """Record the layout and the band groups of the band keys in ``folder`` (the ``bands/``
    folder of a dedup scratch)."""
    groups = [[g.start, g.stop] for g in params.band_groups()]
    write_json({**band_layout(params, num_shards), "groups": groups}, folder / LAYOUT_FILE)


def reusable_groups(folder: Path, params: DedupParams, num_shards: int) -> list[range] | None:
    """The band groups of the band keys in ``folder`` when their layout is this one, else None."""
    path = folder / LAYOUT_FILE
    if not path.is_file():
        return None
    saved = read_json(path)
    groups = saved.pop("groups")
    if saved != band_layout(params, num_shards):
        return None
    return [range(start, stop) for start, stop in groups]


def _text_rows(split_root: Path, folders: tuple[str, ...], shard: int) -> pa.Table:
    """``doc_id`` and ``text`` of the rows with text of one shard of ``folders``, in order."""
    tables = [read_shard(split_root / name, shard, ["doc_id", "text"]) for name in folders]
    table = pa.concat_tables(tables)
    return table.filter(pc.is_valid(table.column("text")))


def remap_shard(
    shard: int,
    dedup: Path,
    split_root: Path,
    held_out: tuple[str, ...],
    scratch: Path,
    params: DedupParams,
    groups: list[range],
    num_shards: int,
) -> tuple[int, int]:
    """Band rows of split shard ``shard`` as virtual shards ``shard`` (train) and
    ``num_shards + shard`` (held-out) under ``scratch``, with their doc ids in ``ids/``.

    Rows whose doc id and exact text the dedup stage sketched (``dedup``: its ``positions/``
    and ``bands/``) take its band keys; the others are sketched here. Returns (held-out rows,
    rows sketched afresh)."""
    known = read_shard(dedup / "positions", shard)
    known_at = {d: i for i, d in enumerate(known.column("doc_id").to_pylist())}
    known_hash = known.column("text_hash").to_pylist()
    side_of = np.full(len(known), -1, dtype=np.int64)  # dedup position -> virtual shard
    new_of = np.zeros(len(known), dtype=np.int64)  # dedup position -> position there
    fresh: list[tuple[int, np.ndarray, np.ndarray]] = []  # (virtual, positions, band keys)
    held_rows = sketched = 0
    for side, folders in ((0, ("train",)), (1, held_out)):
        virtual = side * num_shards + shard
        rows = _text_rows(split_root, folders, shard)
        ids, hashes = rows.column("doc_id").to_pylist(), stable_hexes(rows.column("text"))
        write_parquet(
            pa.table({"doc_id": pa.array(ids, pa.string())}), part_path(scratch / "ids", virtual)
        )
        held_rows += len(ids) if side else 0
        unknown = []
        for position, (doc_id, text_hash) in enumerate(zip(ids, hashes, strict=True)):
            old = known_at.get(doc_id)
            if old is not None and known_hash[old] == text_hash:
                side_of[old], new_of[old] = virtual, position
            else:
                unknown.append(position)
        if unknown:
            texts = rows.column("text").take(pa.array(unknown, pa.int64())).to_pylist()
            spaced = [params.normalization.spaced(text) for text in texts]
            keys = minhash.band_keys(sketch(spaced, params)[1], *params.bands)
            fresh.append((virtual, np.array(unknown, dtype=np.uint64), keys))
            sketched += len(unknown)
    for number, group in enumerate(groups):
        cached = read_shard(dedup / "bands" / f"group-{number}", shard)
        position = (cached.column("row").to_numpy() & LOW_32).astype(np.int64)
        for virtual in (shard, num_shards + shard):
            keep = side_of[position] == virtual
            row = (np.uint64(virtual) << np.uint64(32)) + new_of[position[keep]].astype(np.uint64)
            parts = [
                pa.table(
                    {
                        "band": cached.column("band").filter(pa.array(keep)),
                        "key": cached.column("key").filter(pa.array(keep)),
                        "row": row,
                    },
                    schema=BAND_SCHEMA,
                )
            ]
            parts += [
                _band_table(positions, keys, group, virtual)
                for v, positions, keys in fresh
                if v == virtual
            ]
            path = part_path(scratch / "bands" / f"group-{number}", virtual)
            write_parquet(pa.concat_tables(parts), path, **HASH_FILE_OPTIONS)
    return held_rows, sketched


def _band_table(positions: np.ndarray, keys: np.ndarray, group: range, virtual: int) -> pa.Table:
    """Band rows of freshly sketched rows for the bands of ``group``."""
    rows = (np.uint64(virtual) << np.uint64(32)) + positions
    return pa.table(
        {
            "band": np.tile(np.arange(group.start, group.stop, dtype=np.int16), len(rows)),
            "key": keys[:, group.start : group.stop].reshape(-1),
            "row": np.repeat(rows, len(group)),
        },
        schema=BAND_SCHEMA,
    )


def extract_candidate_texts(
    virtual: int,
    pairs_file: Path,
    scratch: Path,
    split_root: Path,
    held_out: tuple[str, ...],
    num_shards: int,
) -> int:
    """Copy the candidate rows of one virtual shard (``position``, ``doc_id``, ``text``) to
    ``scratch/candidate-texts/``, reading its split shard once; return the rows copied. The
    verification then reads these small files, never a whole shard per pair of shards."""
    pairs = np.load(pairs_file)
    side = 0 if virtual < num_shards else 1  # train, held-out
    rows = pairs[:, 1 - side]  # a pair is (held-out row, train row)
    positions = np.unique((rows[(rows >> np.uint64(32)) == virtual] & LOW_32).astype(np.int64))
    out = part_path(scratch / "candidate-texts", virtual)
    ids = read_shard(scratch / "ids", virtual).column("doc_id")
    wanted = ids.take(pa.array(positions, pa.int64()))
    folders = held_out if side else ("train",)
    table = _text_rows(split_root, folders, virtual % num_shards)
    table = table.filter(pc.is_in(table.column("doc_id"), wanted))
    at = dict(zip(wanted.to_pylist(), positions.tolist(), strict=True))
    order = [at[d] for d in table.column("doc_id").to_pylist()]
    write_parquet(
        table.append_column("position", pa.array(order, pa.int64())).sort_by("position"),
        out,
        **SCRATCH_OPTIONS,
    )
    return len(table)


def _shingles_of(
    scratch: Path, virtual: int, positions: np.ndarray, params: DedupParams
) -> dict[int, tuple[str, np.ndarray]]:
    """position -> (doc_id, sorted shingle hashes) for the candidate rows of a virtual shard at
    ``positions``."""
    rows = read_shard(scratch / "candidate-texts", virtual)
    rows = rows.filter(pc.is_in(rows.column("position"), pa.array(np.unique(positions))))
    sets = minhash.shingle_sets(
        rows.column("text").to_pylist(), params.shingle_size, params.normalization
    )
    ids, positions = rows.column("doc_id").to_pylist(), rows.column("position").to_pylist()
    return {p: (ids[i], sets.row(i)) for i, p in enumerate(positions)}


def verify_by_text(
    scratch: Path,
    pairs: np.ndarray,
    split_root: Path,
    held_out: tuple[str, ...],
    num_shards: int,
    params: DedupParams,
    engine: Engine | None = None,
) -> dict[str, str]:
    """Held-out doc_id -> its smallest train neighbour id, for the candidate pairs whose exact
    shingle Jaccard, from the split's own texts, reaches ``params.pair_threshold``. Each
    virtual shard holding candidates is read once (on the engine) for its candidate rows'
    texts; a held-out shard's and a train shard's candidate rows are in memory at a time."""
    pairs_file = scratch / "candidate-pairs.npy"
    np.save(pairs_file, pairs)
    shards = np.unique(pairs >> np.uint64(32)).tolist()
    (engine or LocalEngine()).map_shards(
        partial(
            extract_candidate_texts,
            pairs_file=pairs_file,
            scratch=scratch,
            split_root=split_root,
            held_out=held_out,
            num_shards=num_shards,
        ),
        shards,
    )
    load = partial(_shingles_of, scratch, params=params)
    return nearest_train_neighbours(pairs, load, params.pair_threshold, params.min_shingles, engine)


def held_out_neighbours_from_bands(
    split_root: Path,
    num_shards: int,
    params: DedupParams,
    held_out: tuple[str, ...],
    dedup: Path,
    groups: list[range],
    scratch: Path,
    engine: Engine | None = None,
) -> tuple[NeighbourReport, int]:
    """Held-out rows with a train row at or above ``params.pair_threshold``, reusing the dedup
    stage's band keys in ``dedup`` (whose layout :func:`reusable_groups` accepted). Returns the
    report and how many split rows had to be sketched afresh."""
    remap = partial(
        remap_shard,
        dedup=dedup,
        split_root=split_root,
        held_out=held_out,
        scratch=scratch,
        params=params,
        groups=groups,
        num_shards=num_shards,
    )
    done = (engine or LocalEngine()).map_shards(remap, range(num_shards))
    pairs = cross_candidates(scratch, 2 * num_shards, num_shards, len(groups), engine)
    neighbour = verify_by_text(scratch, pairs, split_root, held_out, num_shards, params, engine)
    examples = tuple(f"{held}~{neighbour[held]}" for held in sorted(neighbour)[:MAX_EXAMPLES])
    found = tuple(sorted(neighbour.items()))
    report = NeighbourReport(sum(h for h, _ in done), len(pairs), len(neighbour), examples, found)
    return report, sum(s for _, s in done)
