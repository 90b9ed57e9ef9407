"""Exact and MinHash near-duplicate detection, staged like datatrove's pipeline.

Every stage streams through scratch files, one per logical shard, so memory does not grow with
the corpus beyond the grouping of band keys:

1. :func:`signature_shard`: per shard, the exact key of every row (content hash of the normalized
   text, or of ``dedup.columns`` for rows without text), and for rows with text the word n-gram
   shingle hashes, a MinHash signature (datasketch's permutations, computed a batch at a time
   by :mod:`corpus_platform.kernels.minhash`) and one LSH key per band, bands written in
   ``BAND_GROUPS`` separate groups.
2. :func:`candidate_pairs`: band keys grouped across shards, one band group at a time; rows
   sharing a key are candidate pairs.
3. :func:`score_pairs`: each candidate pair verified by the exact Jaccard similarity of its two
   shingle sets (or, with ``dedup.verify: false``, the MinHash estimate), loading two shards'
   sketches at a time.
4. :func:`build_clusters`: union-find over exact-duplicate groups and pairs at or above the
   dedup threshold. A cluster is named by its smallest doc_id.
5. :func:`choose_representatives`: the member kept per cluster: the highest ``quality_score``
   from the filter stage, ties by smallest doc_id (``dedup.keep: quality``, the default), or
   simply the smallest doc_id (``dedup.keep: smallest_id``).
6. :func:`membership_table` and :func:`write_dedup_shard`: the membership side table (cluster,
   member, representative, kept, quality, estimated similarity to the representative), then per
   shard the kept rows (every row in annotate mode) stamped with their cluster id.

The LSH layout makes a pair at the split's similarity threshold (itself below the dedup
threshold) a candidate with probability ``LSH_RECALL`` (99.99%), so the same pass yields the
"similar pairs" the split stage uses to keep near-neighbours on one side. Every output is
sorted by doc id: identical for any number of workers and any number of logical shards.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasketch import MinHashLSH

from corpus_platform.config import CorpusConfig
from corpus_platform.kernels import minhash
from corpus_platform.kernels.hashing import (
    DEFAULT_NORMALIZATION,
    TextNormalization,
    ids_by_shard,
    shard_of,
    stable_hex,
)
from corpus_platform.kernels.minhash import ShingleSets, shingle_sets
from corpus_platform.kernels.unionfind import UnionFind
from corpus_platform.store.datasets import (
    HASH_FILE_OPTIONS,
    count_rows,
    iter_batches,
    iter_shards,
    part_path,
    read_shard,
    write_batches,
    write_parquet,
)

LSH_RECALL = 0.9999  # with verification: chance a pair at the pair threshold is a candidate
MAX_BUCKET_PAIRS = 64  # buckets larger than this are linked as a star around their first member
BAND_GROUPS = 8  # band keys are grouped an eighth of the bands at a time
BATCH_ROWS = 2048  # rows sketched (and streamed back) at a time


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """The chance that two rows of Jaccard ``similarity`` share at least one band key."""
    return 1.0 - (1.0 - similarity**rows) ** bands


@cache
def recall_bands(threshold: float, num_perm: int, recall: float = LSH_RECALL) -> tuple[int, int]:
    """(bands, rows per band) with the most rows per band (the fewest dissimilar candidates)
    whose chance of making a pair at ``threshold`` a candidate is at least ``recall``.

    Raises:
        ValueError: when even one row per band misses the recall (too few permutations).
    """
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if candidate_probability(threshold, bands, rows) >= recall:
            return bands, rows
    raise ValueError(
        f"dedup.num_perm {num_perm} cannot find pairs at Jaccard {threshold} with recall "
        f"{recall}; raise dedup.num_perm"
    )


@cache
def optimal_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """datasketch's (bands, rows) minimising false positives plus false negatives at
    ``threshold`` (computed once per setting: it integrates numerically)."""
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


@dataclass(frozen=True)
class DedupParams:
    """Everything a dedup run depends on."""

    num_perm: int
    shingle_size: int
    threshold: float
    pair_threshold: float
    seed: int
    mode: str = "drop"
    columns: tuple[str, ...] = ()
    normalization: TextNormalization = field(default_factory=TextNormalization)
    keep: str = "quality"
    verify: bool = True
    groups: int = BAND_GROUPS  # band groups: more for a corpus whose band keys exceed memory

    def for_rows(self, rows: int, memory_mb: int) -> DedupParams:
        """These parameters with enough band groups for ``rows`` rows' band keys to be grouped
        within ``memory_mb`` (results do not depend on the grouping)."""
        needed = partitions_for(rows * self.bands[0], BAND_ROW_BYTES, memory_mb)
        return replace(self, groups=max(BAND_GROUPS, needed))

    def __post_init__(self) -> None:
        if not 0.0 < self.pair_threshold <= self.threshold < 1.0:
            raise ValueError("need 0 < pair_threshold <= threshold < 1")

    @classmethod
    def from_config(cls, config: CorpusConfig) -> DedupParams:
        """The dedup settings of a corpus.yaml; pairs are kept down to the split's threshold."""
        dedup = config.dedup
        return cls(
            num_perm=dedup.num_perm,
            shingle_size=dedup.shingle_size,
            threshold=dedup.threshold,
            pair_threshold=config.split.similarity_threshold,
            seed=config.seed,
            mode=dedup.mode,
            columns=dedup.columns,
            normalization=TextNormalization(**dedup.normalization.model_dump()),
            keep=dedup.keep,
            verify=dedup.verify,
        )

    @property
    def bands(self) -> tuple[int, int]:
        """(bands, rows per band). With verification, the layout that makes a pair at
        ``pair_threshold`` a candidate with probability ``LSH_RECALL`` (verification removes the
        extra candidates); without, datasketch's optimum for ``pair_threshold``, since the
        MinHash estimate then decides alone."""
        if self.verify:
            return recall_bands(self.pair_threshold, self.num_perm)
        return optimal_bands(self.pair_threshold, self.num_perm)

    def band_groups(self) -> list[range]:
        """The bands split into ``groups`` contiguous groups, grouped one at a time."""
        bands = self.bands[0]
        edges = np.linspace(0, bands, min(self.groups, bands) + 1).round().astype(int)
        return [range(int(a), int(b)) for a, b in pairwise(edges)]


def sketch(normalized: list[str], params: DedupParams) -> tuple[ShingleSets, np.ndarray]:
    """The shingle sets and MinHash signatures (one row of ``num_perm`` uint32) of texts
    already normalized by ``params.normalization``."""
    sets = minhash.normalized_shingle_sets(normalized, params.shingle_size)
    return sets, minhash.signatures(sets, params.num_perm, params.seed)


def signatures(texts: list[str], params: DedupParams) -> np.ndarray:
    """MinHash signatures, one row of ``num_perm`` uint32 per text."""
    return sketch([params.normalization.apply(t) for t in texts], params)[1]


def normalized_texts(table: pa.Table, params: DedupParams) -> list[str | None]:
    """Every row's text normalized as ``dedup.normalization`` says (None where no text)."""
    apply = params.normalization.apply
    return [None if t is None else apply(t) for t in table.column("text").to_pylist()]


def exact_keys(
    table: pa.Table, params: DedupParams, normalized: list[str | None] | None = None
) -> pa.Array:
    """The exact-duplicate key of every row: the hash of the normalized text for rows with text;
    for rows without text, a hash of the ``dedup.columns`` values (null when none are set).
    ``normalized``: the rows' texts already normalized (:func:`normalized_texts`), if at hand."""
    texts = normalized_texts(table, params) if normalized is None else normalized
    values = [table.column(c).to_pylist() for c in params.columns]
    keys = []
    for i, text in enumerate(texts):
        if text is not None:
            keys.append(stable_hex(text))
        elif params.columns:
            keys.append("cols:" + stable_hex(json.dumps([v[i] for v in values], default=str)))
        else:
            keys.append(None)
    return pa.array(keys, pa.string())


def _quality(table: pa.Table) -> pa.Array:
    if "quality_score" in table.column_names:
        return pc.fill_null(table.column("quality_score"), 0.0)
    return pa.array(np.ones(len(table)), pa.float64())


SKETCH_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("entity", pa.string()),
        ("signature", pa.binary()),
        ("shingles", pa.list_(pa.uint64())),
    ]
)
BAND_SCHEMA = pa.schema([("band", pa.int16()), ("key", pa.uint64()), ("row", pa.uint64())])


def _sketch_batches(
    table: pa.Table,
    normalized: list[str],
    shard: int,
    params: DedupParams,
    band_rows: list[list[pa.Table]],
) -> Iterator[pa.Table]:
    """Sketch ``table`` (rows with text; ``normalized``: their normalized texts) ``BATCH_ROWS``
    at a time; band keys go to ``band_rows``.

    A band row names its document by ``shard << 32 | position`` in the shard's sketch file, so
    grouping band keys never holds doc id strings.
    """
    bands, rows = params.bands
    for start in range(0, len(table), BATCH_ROWS):
        batch = table.slice(start, BATCH_ROWS)
        sets, sigs = sketch(normalized[start : start + BATCH_ROWS], params)
        keys = minhash.band_keys(sigs, bands, rows)
        positions = (np.uint64(shard) << np.uint64(32)) + np.arange(
            start, start + len(batch), dtype=np.uint64
        )
        for number, group in enumerate(params.band_groups()):
            band_rows[number].append(
                pa.table(
                    {
                        "band": np.tile(
                            np.arange(group.start, group.stop, dtype=np.int16), len(batch)
                        ),
                        "key": keys[:, group.start : group.stop].reshape(-1),
                        "row": np.repeat(positions, len(group)),
                    },
                    schema=BAND_SCHEMA,
                )
            )
        yield pa.table(
            {
                "doc_id": batch.column("doc_id"),
                "entity": batch.column("entity"),
                "signature": pa.array([s.tobytes() for s in sigs], pa.binary()),
                "shingles": pa.ListArray.from_arrays(pa.array(sets.offsets), pa.array(sets.values)),
            },
            schema=SKETCH_SCHEMA,
        )


def signature_shard(
    shard: int, upstream: Path, scratch: Path, params: DedupParams, as_shard: int | None = None
) -> int:
    """Write one shard's exact keys, sketches and band keys to ``scratch``; return rows signed.

    ``as_shard``: the number the shard's scratch files (and band rows) carry, when several
    folders are sketched into one scratch (the held-out neighbour search); ``shard`` by default.
    """
    table = read_shard(upstream, shard)
    shard = shard if as_shard is None else as_shard
    normalized = normalized_texts(table, params)
    keyed = pa.table(
        {
            "doc_id": table.column("doc_id"),
            "entity": table.column("entity"),
            "key": exact_keys(table, params, normalized),
            "quality_score": _quality(table),
        }
    )
    write_parquet(
        keyed.filter(pc.is_valid(keyed.column("key"))), part_path(scratch / "keys", shard)
    )
    table = table.filter(pc.is_valid(table.column("text")))
    band_rows: list[list[pa.Table]] = [[] for _ in params.band_groups()]
    with_text = [text for text in normalized if text is not None]
    sketches = _sketch_batches(table, with_text, shard, params, band_rows)
    signed = write_batches(
        sketches, SKETCH_SCHEMA, part_path(scratch / "sketches", shard), **HASH_FILE_OPTIONS
    )
    for number, tables in enumerate(band_rows):
        band_table = pa.concat_tables(tables) if tables else BAND_SCHEMA.empty_table()
        path = part_path(scratch / "bands" / f"group-{number}", shard)
        write_parquet(band_table, path, **HASH_FILE_OPTIONS)
    return signed


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
        ids = read_shard(scratch / "sketches", shard, ["doc_id"]).column("doc_id")
        found.update({row: ids[row & 0xFFFFFFFF].as_py() for row in wanted})
    return found


def candidate_pairs(scratch: Path, num_shards: int, params: DedupParams) -> list[tuple[str, str]]:
    """Pairs of doc ids that share at least one band key, sorted, each once (a < b).

    One band group's keys are in memory at a time, as three numeric arrays.
    """
    row_pairs: list[np.ndarray] = []
    larger: list[np.ndarray] = []
    for number in range(len(params.band_groups())):
        folder = scratch / "bands" / f"group-{number}"
        keys = pa.concat_tables([t for _, t in iter_shards(folder, num_shards)])
        band, key, row = (keys.column(c).to_numpy() for c in ("band", "key", "row"))
        del keys
        found = colliding_rows(band, key, row)
        row_pairs.append(np.unique(found.pairs, axis=0))
        larger += found.larger
    distinct = np.unique(np.concatenate(row_pairs), axis=0) if row_pairs else np.empty((0, 2))
    rows = {int(r) for r in distinct.reshape(-1)} | {int(r) for b in larger for r in b}
    names = doc_ids_at(scratch, rows)
    pairs = {(min(names[a], names[b]), max(names[a], names[b])) for a, b in distinct.tolist()}
    for bucket in larger:
        pairs.update(_bucket_pairs([names[int(r)] for r in bucket]))
    return sorted(pairs)


KEY_ROW_BYTES = 256  # an exact key row while grouping: id and key strings, hash table, lists
BAND_ROW_BYTES = 64  # a band key row while grouping: 18 bytes, the sort order and copies


def partitions_for(rows: int, row_bytes: int, memory_mb: int) -> int:
    """How many parts a grouping of ``rows`` must be cut into for one part to fit in half of
    ``memory_mb`` (the other half is for what the step keeps)."""
    return max(1, math.ceil(rows * row_bytes / ((memory_mb << 20) // 2)))


def exact_duplicate_groups(scratch: Path, num_shards: int, partitions: int = 1) -> list[list[str]]:
    """Groups (size > 1) of doc ids with equal exact keys (see :func:`exact_keys`), sorted.

    Keys are grouped one partition (``key hash mod partitions``) at a time, each read from
    every shard, so memory holds one partition's keys.
    """
    groups: list[list[str]] = []
    for part in range(partitions):
        tables = []
        for _, table in iter_shards(scratch / "keys", num_shards, ["doc_id", "key"]):
            if partitions > 1:
                owner = [int(k[-8:], 16) % partitions for k in table.column("key").to_pylist()]
                table = table.filter(pa.array(np.array(owner) == part))
            tables.append(table)
        hashes = pa.concat_tables(tables)
        grouped = hashes.group_by("key").aggregate([("doc_id", "list"), ("doc_id", "count")])
        grouped = grouped.filter(pc.greater(grouped.column("doc_id_count"), 1))
        groups += grouped.column("doc_id_list").to_pylist()
    return sorted(sorted(g) for g in groups)


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair with its Jaccard similarity and the rows' entities."""

    doc_a: str
    doc_b: str
    entity_a: str
    entity_b: str
    similarity: float


def shingle_set(
    text: str, size: int, normalization: TextNormalization = DEFAULT_NORMALIZATION
) -> frozenset[int]:
    """64-bit hashes of the distinct word shingles of a text."""
    return frozenset(shingle_sets([text], size, normalization).values.tolist())


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    """Exact Jaccard similarity of two shingle sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted arrays of distinct shingle hashes."""
    if len(a) > len(b):
        a, b = b, a
    if len(a) == 0:
        return 1.0 if len(b) == 0 else 0.0
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    common = int(np.count_nonzero(b[at] == a))
    return common / (len(a) + len(b) - common)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The MinHash estimate of Jaccard similarity: the fraction of equal signature slots."""
    return float(np.count_nonzero(a == b)) / len(a)


def load_sketches(
    scratch: Path, shard: int, wanted: set[str], field: str
) -> dict[str, tuple[str, np.ndarray]]:
    """(entity, ``field``) of the ``wanted`` rows of one shard, streamed batch by batch;
    ``field`` is ``"shingles"`` (sorted shingle hashes) or ``"signature"`` (MinHash)."""
    keep = pa.array(sorted(wanted), pa.string())
    found = {}
    for batch in iter_batches(part_path(scratch / "sketches", shard), ["doc_id", "entity", field]):
        batch = batch.filter(pc.is_in(batch.column("doc_id"), keep))
        if not batch.num_rows:
            continue
        ids, entities = (batch.column(c).to_pylist() for c in ("doc_id", "entity"))
        values = batch.column(field).combine_chunks()
        if field == "signature":
            rows = [np.frombuffer(b, dtype=np.uint32) for b in values.to_pylist()]
        else:  # offsets index the list's whole value buffer, whatever the slice
            flat, ends = values.values.to_numpy(zero_copy_only=False), values.offsets.to_numpy()
            rows = [flat[ends[i] : ends[i + 1]] for i in range(len(ids))]
        found.update(zip(ids, zip(entities, rows, strict=True), strict=True))
    return found


class SketchCache:
    """Candidate rows' sketches per shard, kept while they fit in ``budget_bytes`` (least
    recently used shard evicted first), so verification reads each shard once when the
    candidates fit in memory and stays within the budget when they do not."""

    def __init__(self, scratch: Path, wanted: dict[int, set[str]], field: str, budget_bytes: int):
        self.scratch, self.wanted, self.field, self.budget = scratch, wanted, field, budget_bytes
        self.loaded: dict[int, dict[str, tuple[str, np.ndarray]]] = {}
        self.sizes: dict[int, int] = {}

    def shard(self, shard: int) -> dict[str, tuple[str, np.ndarray]]:
        """The wanted rows of ``shard`` (loaded, and others evicted, as needed)."""
        if shard in self.loaded:
            self.loaded[shard] = self.loaded.pop(shard)  # most recently used last
            return self.loaded[shard]
        rows = load_sketches(self.scratch, shard, self.wanted[shard], self.field)
        size = sum(values.nbytes for _, values in rows.values())
        while self.loaded and sum(self.sizes.values()) + size > self.budget:
            oldest = next(iter(self.loaded))
            del self.loaded[oldest], self.sizes[oldest]
        self.loaded[shard], self.sizes[shard] = rows, size
        return rows


def score_pairs(
    pairs: list[tuple[str, str]],
    scratch: Path,
    num_shards: int,
    params: DedupParams,
    memory_mb: int = 1024,
) -> list[ScoredPair]:
    """Score candidate pairs: exact Jaccard of their shingle sets (the MinHash estimate when
    ``params.verify`` is off), in sorted pair order.

    Pairs are taken block by block, one pair of shards at a time; the candidate rows' sketches
    are kept in a :class:`SketchCache` of ``memory_mb``.
    """
    blocks: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    wanted: dict[int, set[str]] = defaultdict(set)
    for a, b in pairs:
        shard_a, shard_b = shard_of(a, num_shards), shard_of(b, num_shards)
        blocks[(min(shard_a, shard_b), max(shard_a, shard_b))].append((a, b))
        wanted[shard_a].add(a)
        wanted[shard_b].add(b)
    field, measure = (
        ("shingles", sorted_jaccard) if params.verify else ("signature", estimated_jaccard)
    )
    cache = SketchCache(scratch, wanted, field, memory_mb << 20)
    scored = []
    for (first, second), block in sorted(blocks.items()):
        mine, theirs = cache.shard(first), cache.shard(second)  # held for the block
        for a, b in block:
            (entity_a, x), (entity_b, y) = (
                (mine if a in mine else theirs)[a],
                (mine if b in mine else theirs)[b],
            )
            scored.append(ScoredPair(a, b, entity_a, entity_b, measure(x, y)))
    scored.sort(key=lambda p: (p.doc_a, p.doc_b))
    return scored


def build_clusters(
    exact: list[list[str]], scored: list[ScoredPair], threshold: float
) -> dict[str, str]:
    """Union exact groups and pairs with similarity >= ``threshold``; map every member of a
    cluster (size > 1) to the cluster id, its smallest doc_id."""
    links = UnionFind()
    for group in exact:
        links.union_all((group[0], member) for member in group[1:])
    for pair in scored:
        if pair.similarity >= threshold:
            links.union(pair.doc_a, pair.doc_b)
    return {member: root for root, members in links.groups().items() for member in members}


@dataclass(frozen=True)
class MemberInfo:
    """A cluster member's entity and quality score, from the exact-key files."""

    entity: str
    quality: float


def member_info(doc_ids: set[str], scratch: Path, num_shards: int) -> dict[str, MemberInfo]:
    """Entity and quality score of each of ``doc_ids`` (every keyed row is in ``keys/``)."""
    wanted = pa.array(sorted(doc_ids), pa.string())
    found: dict[str, MemberInfo] = {}
    columns = ["doc_id", "entity", "quality_score"]
    for _, table in iter_shards(scratch / "keys", num_shards, columns):
        hit = table.filter(pc.is_in(table.column("doc_id"), wanted))
        for doc_id, entity, quality in zip(
            *(hit.column(c).to_pylist() for c in columns), strict=True
        ):
            found[doc_id] = MemberInfo(entity, quality)
    return found


def choose_representatives(
    cluster_of: dict[str, str], info: dict[str, MemberInfo], keep: str
) -> dict[str, str]:
    """The member kept per cluster id: highest quality score, ties by smallest doc_id
    (``keep="quality"``), or the smallest doc_id (``keep="smallest_id"``)."""
    best: dict[str, tuple[float, str]] = {}
    for doc_id, cluster in cluster_of.items():
        rank = (-info[doc_id].quality if keep == "quality" else 0.0, doc_id)
        if cluster not in best or rank < best[cluster]:
            best[cluster] = rank
    return {cluster: rank[1] for cluster, rank in best.items()}


def similarity_to_representative(
    cluster_of: dict[str, str], representative: dict[str, str], scratch: Path, num_shards: int
) -> dict[str, float]:
    """Each member's MinHash-estimated Jaccard similarity to its cluster's kept row (1.0 for the
    representative itself and for rows without text, which only exact keys can join)."""
    rep_signature = {}
    for shard, wanted in ids_by_shard(representative.values(), num_shards):
        found = load_sketches(scratch, shard, wanted, "signature")
        rep_signature.update({d: signature for d, (_, signature) in found.items()})
    similarity = {doc_id: 1.0 for doc_id in cluster_of}
    for shard, wanted in ids_by_shard(cluster_of, num_shards):
        for doc_id, (_, signature) in load_sketches(scratch, shard, wanted, "signature").items():
            rep = rep_signature.get(representative[cluster_of[doc_id]])
            if rep is not None:
                similarity[doc_id] = estimated_jaccard(signature, rep)
    return similarity


def membership_table(
    cluster_of: dict[str, str],
    representative: dict[str, str],
    similarity: dict[str, float],
    info: dict[str, MemberInfo],
    mode: str,
) -> pa.Table:
    """The cluster membership side table, sorted by (cluster_id, doc_id)."""
    rows = sorted((c, d) for d, c in cluster_of.items())
    reps = [representative[c] for c, _ in rows]
    return pa.table(
        {
            "cluster_id": pa.array([c for c, _ in rows], pa.string()),
            "doc_id": pa.array([d for _, d in rows], pa.string()),
            "entity": pa.array([info[d].entity for _, d in rows], pa.string()),
            "representative": pa.array(reps, pa.string()),
            "kept": pa.array(
                [mode == "annotate" or d == r for (_, d), r in zip(rows, reps, strict=True)],
                pa.bool_(),
            ),
            "quality_score": pa.array([info[d].quality for _, d in rows], pa.float64()),
            "similarity": pa.array([similarity[d] for _, d in rows], pa.float64()),
        }
    )


@dataclass(frozen=True)
class DedupResult:
    """Everything decided about duplicates: scored pairs, clusters and their kept rows."""

    scored: list[ScoredPair]
    cluster_of: dict[str, str]
    representative: dict[str, str]
    similarity: dict[str, float]
    info: dict[str, MemberInfo]

    def membership(self, mode: str) -> pa.Table:
        """The membership side table (see :func:`membership_table`)."""
        return membership_table(
            self.cluster_of, self.representative, self.similarity, self.info, mode
        )


def cluster_documents(
    scratch: Path, num_shards: int, params: DedupParams, memory_mb: int = 1024
) -> DedupResult:
    """Steps 2 to 5 over the scratch files that :func:`signature_shard` wrote for every shard;
    verification keeps at most ``memory_mb`` of candidate sketches."""
    candidates = candidate_pairs(scratch, num_shards, params)
    scored = score_pairs(candidates, scratch, num_shards, params, memory_mb)
    rows = count_rows(scratch / "keys", num_shards)
    exact = exact_duplicate_groups(
        scratch, num_shards, partitions_for(rows, KEY_ROW_BYTES, memory_mb)
    )
    cluster_of = build_clusters(exact, scored, params.threshold)
    info = member_info(set(cluster_of), scratch, num_shards)
    representative = choose_representatives(cluster_of, info, params.keep)
    similarity = similarity_to_representative(cluster_of, representative, scratch, num_shards)
    return DedupResult(scored, cluster_of, representative, similarity, info)


def pairs_table(scored: list[ScoredPair], min_similarity: float) -> pa.Table:
    """Similar pairs at or above ``min_similarity``, for the split stage."""
    kept = [p for p in scored if p.similarity >= min_similarity]
    return pa.table(
        {
            "doc_a": pa.array([p.doc_a for p in kept], pa.string()),
            "doc_b": pa.array([p.doc_b for p in kept], pa.string()),
            "entity_a": pa.array([p.entity_a for p in kept], pa.string()),
            "entity_b": pa.array([p.entity_b for p in kept], pa.string()),
            "similarity": pa.array([p.similarity for p in kept], pa.float64()),
        }
    )


def write_dedup_shard(shard: int, upstream: Path, staging: Path, mode: str) -> tuple[int, int]:
    """Write one shard's kept rows with a ``cluster_id`` column, reading the shard's decisions
    from the membership table in ``staging/clusters``; return (rows in, rows kept)."""
    table = read_shard(upstream, shard)
    members = read_shard(staging / "clusters", shard, ["doc_id", "cluster_id", "kept"])
    cluster_of = dict(
        zip(
            members.column("doc_id").to_pylist(),
            members.column("cluster_id").to_pylist(),
            strict=True,
        )
    )
    dropped = {
        d
        for d, kept in zip(
            members.column("doc_id").to_pylist(), members.column("kept").to_pylist(), strict=True
        )
        if not kept
    }
    ids = table.column("doc_id").to_pylist()
    table = table.append_column(
        "cluster_id", pa.array([cluster_of.get(d, d) for d in ids], pa.string())
    )
    if mode == "drop":
        table = table.filter(pa.array([d not in dropped for d in ids], pa.bool_()))
    write_parquet(table, part_path(staging, shard))
    return len(ids), len(table)


def kept_duplicate_pairs(
    pairs: pa.Table, folder: Path, num_shards: int, threshold: float, mode: str
) -> tuple[int, list[str]]:
    """Audit a published dedup stage against its own similar-pairs table.

    Returns the number of pairs at or above ``threshold`` and up to ten offenders
    ``a~b``: pairs whose two rows are both in the published rows (drop mode) or both there
    under different cluster ids (annotate mode).
    """
    close = pairs.filter(pc.greater_equal(pairs.column("similarity"), threshold))
    ids_a, ids_b = close.column("doc_a").to_pylist(), close.column("doc_b").to_pylist()
    wanted = pa.array(sorted({*ids_a, *ids_b}), pa.string())
    cluster_of: dict[str, str] = {}
    for _, table in iter_shards(folder, num_shards, ["doc_id", "cluster_id"]):
        table = table.filter(pc.is_in(table.column("doc_id"), wanted))
        cluster_of.update(
            zip(*(table.column(c).to_pylist() for c in ("doc_id", "cluster_id")), strict=True)
        )
    offenders = [
        f"{a}~{b}"
        for a, b in zip(ids_a, ids_b, strict=True)
        if a in cluster_of
        and b in cluster_of
        and (mode == "drop" or cluster_of[a] != cluster_of[b])
    ]
    return len(close), offenders


def cluster_sizes(cluster_of: dict[str, str]) -> dict[int, int]:
    """Histogram: cluster size -> number of clusters."""
    sizes: dict[str, int] = defaultdict(int)
    for cluster in cluster_of.values():
        sizes[cluster] += 1
    histogram: dict[int, int] = defaultdict(int)
    for size in sizes.values():
        histogram[size] += 1
    return dict(sorted(histogram.items()))
