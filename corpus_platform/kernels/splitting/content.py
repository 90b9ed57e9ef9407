"""Content enough to leak: which duplicate clusters and similar pairs may join entities.

A similar pair or a duplicate cluster keeps two entities together because a model evaluated on
one side could have memorised the text it saw on the other. Boilerplate with almost no content
("New upstream release", three words and one word 5-gram) is copied by thousands of authors: as a
link it chains them all into one component that no split can place, and as a leak it teaches a
model nothing. ``split.min_link_shingles`` is the line: a text with fewer distinct word n-grams
(``dedup.shingle_size``, under ``dedup.normalization``: the sets Jaccard compares) than that is
too short to link or to leak.

- A similar pair links (and, across splits, leaks) only when both texts reach the minimum.
- A row without text (an exact duplicate by ``dedup.columns``) is never too short: its cluster
  links as before.
- A duplicate cluster links only when its kept representative does (every member is a duplicate
  of it: exact, or at ``dedup.threshold``); a pair end that was dropped as a duplicate is measured
  by its cluster's representative.

The split's links (:mod:`~.links`, :mod:`~.append`) and every leak check
(:mod:`~.leakage`, :mod:`~.touched`, :mod:`~.recall`) apply the same rule, so what the split
keeps apart is exactly what the checks look for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.shards import part_path, read_parquet, shard_files, write_parquet
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup.minhash import normalized_shingle_sets, shingle_sets
from corpus_platform.kernels.dedup.params import DedupParams
from corpus_platform.kernels.dedup.verify import sorted_jaccard


def shingle_counts(texts: list[str | None], params: DedupParams) -> np.ndarray:
    """The number of distinct word n-grams of each text (0 for a missing text)."""
    sets = shingle_sets([t or "" for t in texts], params.shingle_size, params.normalization)
    counts = np.diff(sets.offsets).astype(np.int64)
    counts[[i for i, t in enumerate(texts) if not t]] = 0
    return counts


PREFIX_WORDS = 64  # words of a long text looked at first when only "short or not" is asked


def too_short(texts: list[str | None], params: DedupParams) -> np.ndarray:
    """Whether each text has fewer than ``params.min_shingles`` distinct word n-grams, exactly as
    ``shingle_counts(texts, params) < params.min_shingles`` for every text but a missing one
    (None: never too short, it always links). Only the first ``PREFIX_WORDS`` normalized words
    of a longer text are shingled first: their windows are windows of the whole text, so enough
    of them settles it; a text they leave unsettled is shingled whole."""
    normalized = [params.normalization.spaced(t) if t else "" for t in texts]  # apply's words
    cut = max(PREFIX_WORDS, params.shingle_size)
    heads, cropped = [], np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(normalized):
        words = text.split(maxsplit=cut)
        cropped[i] = len(words) > cut
        heads.append(" ".join(words[:cut]) if cropped[i] else text)
    counts = np.diff(normalized_shingle_sets(heads, params.shingle_size).offsets)
    unsettled = np.flatnonzero(cropped & (counts < params.min_shingles))
    if len(unsettled):
        whole = [normalized[i] for i in unsettled.tolist()]
        counts[unsettled] = np.diff(normalized_shingle_sets(whole, params.shingle_size).offsets)
    counts[[i for i, t in enumerate(texts) if not t]] = 0
    return (counts < params.min_shingles) & np.array([t is not None for t in texts], dtype=bool)


def is_leak(x: np.ndarray, y: np.ndarray, threshold: float, min_shingles: int) -> bool:
    """Whether two sorted shingle sets are a pair the split keeps apart: both have
    ``min_shingles`` n-grams and their Jaccard reaches ``threshold``."""
    if min(len(x), len(y)) < min_shingles:
        return False
    return sorted_jaccard(x, y) >= threshold


def short_rows(shard: int, upstream: Path, wanted: pa.Array, params: DedupParams) -> list[str]:
    """The doc ids among ``wanted`` of one shard of ``upstream`` (every file: generations, or raw
    batches of a folder kept by batch) whose text has fewer than ``params.min_shingles``
    distinct n-grams; only the files holding one of them are read for their texts. An engine
    task.

    ``wanted`` spans the corpus, so it is narrowed to this shard's ids once (a set of the
    shard's ids, looked up by every wanted id) before any file is matched against it: a
    lookup table of ``wanted`` built per file would cost the corpus size times the number of
    files, which grows with the corpus too."""
    files = shard_files(part_path(upstream, shard))
    ids = [pq.read_table(f, columns=["doc_id"]).column("doc_id") for f in files]
    if not ids or not len(wanted):
        return []
    mine = pc.filter(wanted, pc.is_in(wanted, value_set=pa.chunked_array(ids).combine_chunks()))
    if not len(mine):
        return []
    found: list[str] = []
    texts: list[str | None] = []
    for file, file_ids in zip(files, ids, strict=True):
        if not pc.any(pc.is_in(file_ids, value_set=mine)).as_py():
            continue
        table = read_parquet(file, ["doc_id", "text"])  # texts put back where stored once
        table = table.filter(pc.is_in(table.column("doc_id"), value_set=mine))
        found += table.column("doc_id").to_pylist()
        texts += table.column("text").to_pylist()  # a row without text always links
    if not found:
        return []
    return sorted(found[i] for i in np.flatnonzero(too_short(texts, params)).tolist())


def representatives(memberships: pa.Table) -> pa.Table:
    """doc_id -> the representative of its cluster, for every dropped member of
    ``memberships`` (columns doc_id, representative, kept)."""
    dropped = memberships.filter(pc.invert(memberships.column("kept")))
    return dropped.select(["doc_id", "representative"])


def measured_ends(pairs: pa.Table, stand_in: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Each pair end's measured row: the end itself, or its cluster's representative when the
    end was dropped (``stand_in``: doc_id -> representative)."""
    ends = []
    for column in ("doc_a", "doc_b"):
        index = pc.index_in(pairs.column(column), value_set=stand_in.column("doc_id"))
        mapped = pc.take(stand_in.column("representative"), index)
        values = pc.coalesce(mapped, pairs.column(column))
        ends.append(values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values)
    return ends[0], ends[1]


def measured_ids(memberships: pa.Table, pairs: pa.Table, stand_in: pa.Table) -> pa.Array:
    """The rows the too-short rule measures: the representatives of ``memberships``'
    clusters and the pairs' measured ends (``stand_in``: :func:`representatives`), distinct."""
    first, second = measured_ends(pairs, stand_in)
    named = [memberships.column("representative"), first, second]
    return pc.unique(pa.chunked_array([c for n in named for c in _chunks(n)], pa.string()))


def short_link_ids(
    memberships: pa.Table,
    pairs: pa.Table,
    upstream: Path,
    num_shards: int,
    params: DedupParams,
    engine: Engine,
    stand_in: pa.Table | None = None,
) -> pa.Array:
    """The rows, among the representatives of ``memberships``' clusters and the pairs'
    measured ends, whose text in ``upstream`` is too short to link (none when
    ``params.min_shingles`` is 0). ``stand_in``: dropped doc_id -> representative for the pair
    ends (:func:`representatives`), when ``memberships`` are not all of them."""
    if params.min_shingles <= 0:
        return pa.array([], pa.string())
    if stand_in is None:
        stand_in = representatives(memberships)
    wanted = measured_ids(memberships, pairs, stand_in)
    find = partial(short_rows, upstream=upstream, wanted=wanted, params=params)
    found = engine.map_shards(find, range(num_shards))
    return pa.array(sorted({doc for part in found for doc in part}), pa.string())


def _chunks(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def linking_pairs(pairs: pa.Table, stand_in: pa.Table, short: pa.Array) -> pa.Array:
    """Which of ``pairs`` carry enough content to link: neither measured end (``stand_in``:
    dropped doc_id -> representative) is ``short``."""
    first, second = measured_ends(pairs, stand_in)
    return pc.invert(pc.or_(pc.is_in(first, short), pc.is_in(second, short)))


MEMBER_COLUMNS = ["cluster_id", "doc_id", "representative", "kept"]
EMPTY_MEMBERS = pa.table(
    {"cluster_id": [], "doc_id": [], "representative": [], "kept": []},
    schema=pa.schema([(c, pa.string()) for c in MEMBER_COLUMNS[:3]] + [("kept", pa.bool_())]),
)


@dataclass(frozen=True)
class LinkFiles:
    """Where the similar pairs and duplicate-cluster memberships a link rule judges are read
    from. The tables grow with the corpus, so the engine's tasks read them for themselves and
    the Dagster process holds none of them (:func:`find_short`, :mod:`~.links`)."""

    pairs: tuple[Path, ...]  # similar-pair files (columns doc_a, doc_b, ...)
    members: tuple[Path, ...]  # the memberships whose clusters are judged
    every_member: tuple[Path, ...] = ()  # every membership, when ``members`` are not all

    def read(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The judged memberships (columns cluster_id, doc_id, representative, kept), the
        similar pairs, and doc_id -> representative of every dropped member
        (:func:`representatives`), each file read once."""
        pairs = pa.concat_tables([read_parquet(f) for f in self.pairs], promote_options="default")
        members = _members(self.members)
        every = _members(self.every_member) if self.every_member else members
        return members, pairs, representatives(every)


def _members(files: tuple[Path, ...]) -> pa.Table:
    return pa.concat_tables([read_parquet(f, MEMBER_COLUMNS) for f in files] or [EMPTY_MEMBERS])


WANTED = "wanted.parquet"


def write_wanted(_: int, links: LinkFiles, out: Path) -> int:
    """Engine task: write to ``out/wanted.parquet`` the rows the too-short rule measures (the
    clusters' representatives and the pairs' measured ends); return how many."""
    wanted = measured_ids(*links.read())
    write_parquet(pa.table({"doc_id": wanted.sort()}), out / WANTED)
    return len(wanted)


def write_short_rows(shard: int, upstream: Path, folder: Path, params: DedupParams) -> int:
    """Engine task: :func:`short_rows` of one shard for the ids in ``folder/wanted.parquet``,
    written to that shard's file under ``folder``; return how many."""
    wanted = read_parquet(folder / WANTED).column("doc_id").combine_chunks()
    short = short_rows(shard, upstream, wanted, params)
    write_parquet(pa.table({"doc_id": pa.array(short, pa.string())}), part_path(folder, shard))
    return len(short)


def find_short(
    links: LinkFiles,
    upstream: Path,
    num_shards: int,
    params: DedupParams,
    engine: Engine,
    folder: Path,
) -> Path:
    """:func:`short_link_ids` read and written by the engine's tasks: the ids of the rows too
    short to link, one file a shard under ``folder`` (read back by :func:`read_short`)."""
    folder.mkdir(parents=True, exist_ok=True)
    if params.min_shingles <= 0:
        empty = pa.table({"doc_id": pa.array([], pa.string())})
        for shard in range(num_shards):
            write_parquet(empty, part_path(folder, shard))
        return folder
    engine.map_shards(partial(write_wanted, links=links, out=folder), [0])
    find = partial(write_short_rows, upstream=upstream, folder=folder, params=params)
    engine.map_shards(find, range(num_shards))
    return folder


def read_short(folder: Path, num_shards: int) -> pa.Array:
    """The ids :func:`find_short` wrote, sorted."""
    tables = [read_parquet(part_path(folder, s)) for s in range(num_shards)]
    return pc.unique(pa.concat_tables(tables).column("doc_id")).sort()
