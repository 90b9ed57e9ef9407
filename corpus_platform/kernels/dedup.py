"""Exact and MinHash near-duplicate detection, staged like datatrove's pipeline.

1. :func:`signature_shard`: per shard, word n-gram shingles, a datasketch MinHash per row and
   one LSH band key per band, written to scratch files.
2. :func:`candidate_pairs`: band keys grouped across shards; rows sharing a key are candidates.
3. :func:`score_pairs`: each candidate pair verified by the exact Jaccard similarity of its two
   shingle sets, so MinHash's estimation noise costs no precision.
4. :func:`build_clusters`: union-find over exact-duplicate groups and pairs at or above the dedup
   threshold. A cluster is named by its smallest doc_id, which is also its representative.
5. :func:`write_dedup_shard`: per shard, keep representatives (or everyone, in annotate mode) and
   stamp every row with its cluster id.

The LSH is tuned a little below the split's similarity threshold (itself below the dedup
threshold), so the same pass yields, with high recall, the "similar pairs" the split stage uses
to keep near-neighbours on one side.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from datasketch import MinHash, MinHashLSH

from corpus_platform.config import CorpusConfig
from corpus_platform.kernels.hashing import normalize_text, stable_hex
from corpus_platform.kernels.unionfind import UnionFind
from corpus_platform.store.datasets import iter_shards, part_path, read_shard, write_parquet

LSH_MARGIN = 0.1  # the LSH targets pair_threshold - 0.1 to raise recall at the threshold
MAX_BUCKET_PAIRS = 64  # buckets larger than this are linked as a star around their first member


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

    def __post_init__(self) -> None:
        if not 0.0 < self.pair_threshold <= self.threshold < 1.0:
            raise ValueError("need 0 < pair_threshold <= threshold < 1")

    @classmethod
    def from_config(cls, config: CorpusConfig) -> DedupParams:
        """The dedup settings of a corpus.yaml; pairs are kept down to the split's threshold."""
        return cls(
            num_perm=config.dedup.num_perm,
            shingle_size=config.dedup.shingle_size,
            threshold=config.dedup.threshold,
            pair_threshold=config.split.similarity_threshold,
            seed=config.seed,
            mode=config.dedup.mode,
            columns=config.dedup.columns,
        )

    @property
    def lsh_threshold(self) -> float:
        """The Jaccard the LSH bands target: below ``pair_threshold`` so that pairs at the
        threshold are almost always candidates (exact verification removes the extras)."""
        return max(0.1, self.pair_threshold - LSH_MARGIN)

    @property
    def bands(self) -> tuple[int, int]:
        """(bands, rows per band) that datasketch finds optimal for ``lsh_threshold``."""
        lsh = MinHashLSH(threshold=self.lsh_threshold, num_perm=self.num_perm)
        return lsh.b, lsh.r


def shingles(text: str, size: int) -> list[bytes]:
    """Distinct word ``size``-grams of the normalized text (the whole text if shorter)."""
    words = normalize_text(text).split()
    if len(words) <= size:
        return [" ".join(words).encode("utf-8")]
    grams = {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}
    return [g.encode("utf-8") for g in sorted(grams)]


def signatures(texts: list[str], params: DedupParams) -> np.ndarray:
    """MinHash signatures, one row of ``num_perm`` uint32 per text."""
    if not texts:
        return np.zeros((0, params.num_perm), dtype=np.uint32)
    hashes = MinHash.bulk(
        (shingles(t, params.shingle_size) for t in texts),
        num_perm=params.num_perm,
        seed=params.seed,
        hashfunc=xxhash.xxh32_intdigest,
    )
    return np.stack([m.hashvalues.astype(np.uint32) for m in hashes])


def band_keys(signature_rows: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """A 64-bit key per (row, band): the hash of that band's slice of the signature."""
    keys = np.empty((len(signature_rows), bands), dtype=np.uint64)
    for i, sig in enumerate(signature_rows):
        for b in range(bands):
            keys[i, b] = xxhash.xxh3_64_intdigest(sig[b * rows : (b + 1) * rows].tobytes(), seed=b)
    return keys


def exact_keys(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    """The exact-duplicate key of every row: the normalized content hash for rows with text;
    for rows without text, a hash of the configured columns' values (null when none are)."""
    texts = table.column("text").to_pylist()
    hashes = table.column("content_hash").to_pylist()
    values = [table.column(c).to_pylist() for c in columns]
    keys = []
    for i, (text, digest) in enumerate(zip(texts, hashes, strict=True)):
        if text is not None:
            keys.append(digest)
        elif columns:
            keys.append("cols:" + stable_hex(json.dumps([v[i] for v in values], default=str)))
        else:
            keys.append(None)
    return pa.array(keys, pa.string())


def signature_shard(shard: int, upstream: Path, scratch: Path, params: DedupParams) -> int:
    """Write one shard's exact keys, signatures and band keys to ``scratch``; return rows signed."""
    table = read_shard(upstream, shard)
    keyed = pa.table(
        {
            "doc_id": table.column("doc_id"),
            "entity": table.column("entity"),
            "key": exact_keys(table, params.columns),
        }
    )
    write_parquet(
        keyed.filter(pc.is_valid(keyed.column("key"))), part_path(scratch / "keys", shard)
    )
    table = table.filter(pc.is_valid(table.column("text")))
    sigs = signatures(table.column("text").to_pylist(), params)
    bands, rows = params.bands
    keys = band_keys(sigs, bands, rows)
    sig_table = pa.table(
        {
            "doc_id": table.column("doc_id"),
            "entity": table.column("entity"),
            "content_hash": table.column("content_hash"),
            "signature": pa.array([s.tobytes() for s in sigs], pa.binary()),
        }
    )
    write_parquet(sig_table, part_path(scratch / "signatures", shard))
    band_table = pa.table(
        {
            "band": pa.array(np.tile(np.arange(bands, dtype=np.int32), len(table))),
            "key": pa.array(keys.reshape(-1)),
            "doc_id": pa.array(
                np.repeat(np.array(table.column("doc_id").to_pylist(), dtype=object), bands),
                pa.string(),
            ),
        }
    )
    write_parquet(band_table, part_path(scratch / "bands", shard))
    return len(table)


def _bucket_pairs(members: list[str]) -> list[tuple[str, str]]:
    members = sorted(set(members))
    if len(members) > MAX_BUCKET_PAIRS:
        return [(members[0], m) for m in members[1:]]
    return [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]


def candidate_pairs(scratch: Path, num_shards: int) -> list[tuple[str, str]]:
    """Pairs of doc ids that share at least one band key, sorted, each once (a < b)."""
    tables = [t for _, t in iter_shards(scratch / "bands", num_shards)]
    bands = pa.concat_tables(tables)
    grouped = bands.group_by(["band", "key"]).aggregate([("doc_id", "list"), ("doc_id", "count")])
    grouped = grouped.filter(pc.greater(grouped.column("doc_id_count"), 1))
    pairs: set[tuple[str, str]] = set()
    for members in grouped.column("doc_id_list").to_pylist():
        pairs.update(_bucket_pairs(members))
    return sorted(pairs)


def exact_duplicate_groups(scratch: Path, num_shards: int) -> list[list[str]]:
    """Groups (size > 1) of doc ids with equal exact keys (see :func:`exact_keys`), sorted."""
    hashes = pa.concat_tables(
        [t for _, t in iter_shards(scratch / "keys", num_shards, ["doc_id", "key"])]
    )
    grouped = hashes.group_by("key").aggregate([("doc_id", "list"), ("doc_id", "count")])
    grouped = grouped.filter(pc.greater(grouped.column("doc_id_count"), 1))
    return sorted(sorted(g) for g in grouped.column("doc_id_list").to_pylist())


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair with its estimated Jaccard similarity and the rows' entities."""

    doc_a: str
    doc_b: str
    entity_a: str
    entity_b: str
    similarity: float


def shingle_set(text: str, size: int) -> frozenset[int]:
    """64-bit hashes of the distinct word shingles of a text."""
    return frozenset(xxhash.xxh3_64_intdigest(s) for s in shingles(text, size))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    """Exact Jaccard similarity of two shingle sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def score_pairs(
    pairs: list[tuple[str, str]], upstream: Path, num_shards: int, size: int
) -> list[ScoredPair]:
    """Verify candidate pairs by the exact Jaccard similarity of their shingle sets.

    Only the texts of rows that occur in a candidate pair are read and shingled.
    """
    wanted = pa.array(sorted({d for pair in pairs for d in pair}), pa.string())
    sets: dict[str, tuple[str, frozenset[int]]] = {}
    for _, table in iter_shards(upstream, num_shards, ["doc_id", "entity", "text"]):
        found = table.filter(pc.is_in(table.column("doc_id"), wanted))
        columns = (found.column(c).to_pylist() for c in ("doc_id", "entity", "text"))
        for doc_id, entity, text in zip(*columns, strict=True):
            sets[doc_id] = (entity, shingle_set(text, size))
    scored = []
    for a, b in pairs:
        (entity_a, set_a), (entity_b, set_b) = sets[a], sets[b]
        scored.append(ScoredPair(a, b, entity_a, entity_b, jaccard(set_a, set_b)))
    return scored


@dataclass(frozen=True)
class Clusters:
    """Duplicate clusters: every member's cluster id and similarity to its representative."""

    cluster_of: dict[str, str]
    similarity: dict[str, float]

    def dropped(self) -> set[str]:
        """Members that are not their cluster's representative."""
        return {doc for doc, cluster in self.cluster_of.items() if doc != cluster}


def build_clusters(exact: list[list[str]], scored: list[ScoredPair], threshold: float) -> Clusters:
    """Union exact groups and pairs with similarity >= ``threshold`` into named clusters."""
    links = UnionFind()
    for group in exact:
        links.union_all((group[0], member) for member in group[1:])
    best: dict[tuple[str, str], float] = {}
    for pair in scored:
        best[(pair.doc_a, pair.doc_b)] = pair.similarity
        if pair.similarity >= threshold:
            links.union(pair.doc_a, pair.doc_b)
    exact_pairs = {(g[0], m) for g in exact for m in g[1:]}
    cluster_of: dict[str, str] = {}
    similarity: dict[str, float] = {}
    for root, members in links.groups().items():
        for member in members:
            cluster_of[member] = root
            key = (root, member)
            similarity[member] = (
                1.0 if member == root or key in exact_pairs else best.get(key, float("nan"))
            )
    return Clusters(cluster_of=cluster_of, similarity=similarity)


def entities_of(doc_ids: set[str], scratch: Path, num_shards: int) -> dict[str, str]:
    """The entity of each of ``doc_ids``, read from the exact-key files (every keyed row)."""
    wanted = pa.array(sorted(doc_ids), pa.string())
    found: dict[str, str] = {}
    for _, table in iter_shards(scratch / "keys", num_shards, ["doc_id", "entity"]):
        hit = table.filter(pc.is_in(table.column("doc_id"), wanted))
        found.update(
            zip(hit.column("doc_id").to_pylist(), hit.column("entity").to_pylist(), strict=True)
        )
    return found


def membership_table(clusters: Clusters, mode: str, entity_of: dict[str, str]) -> pa.Table:
    """The cluster membership side table, sorted by (cluster_id, doc_id)."""
    rows = sorted((c, d) for d, c in clusters.cluster_of.items())
    return pa.table(
        {
            "cluster_id": pa.array([c for c, _ in rows], pa.string()),
            "doc_id": pa.array([d for _, d in rows], pa.string()),
            "entity": pa.array([entity_of[d] for _, d in rows], pa.string()),
            "kept": pa.array([mode == "annotate" or c == d for c, d in rows], pa.bool_()),
            "similarity": pa.array([clusters.similarity[d] for _, d in rows], pa.float64()),
        }
    )


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


def write_dedup_shard(
    shard: int, upstream: Path, staging: Path, cluster_of: dict[str, str], mode: str
) -> tuple[int, int]:
    """Write one shard's kept rows with a ``cluster_id`` column; return (rows in, rows kept)."""
    table = read_shard(upstream, shard)
    ids = table.column("doc_id").to_pylist()
    cluster_ids = [cluster_of.get(d, d) for d in ids]
    table = table.append_column("cluster_id", pa.array(cluster_ids, pa.string()))
    if mode == "drop":
        keep = pa.array([c == d for c, d in zip(cluster_ids, ids, strict=True)], pa.bool_())
        table = table.filter(keep)
    write_parquet(table, part_path(staging, shard))
    return len(ids), len(table)


def cluster_sizes(cluster_of: dict[str, str]) -> dict[int, int]:
    """Histogram: cluster size -> number of clusters."""
    sizes: dict[str, int] = defaultdict(int)
    for cluster in cluster_of.values():
        sizes[cluster] += 1
    histogram: dict[int, int] = defaultdict(int)
    for size in sizes.values():
        histogram[size] += 1
    return dict(sorted(histogram.items()))


def held_out_neighbours(
    split_root: Path, num_shards: int, params: DedupParams, held_out: tuple[str, ...]
) -> tuple[int, int, list[str]]:
    """Query every held-out row against a datasketch MinHashLSH index of the train split.

    An independent check of the clustering and the split: datasketch's own LSH index finds
    candidates (instead of the band grouping above), and each is confirmed by exact Jaccard.

    Returns:
        (held-out rows queried, rows with a train neighbour at or above the split threshold,
        up to ten examples ``held_out_id~train_id``).
    """
    index = MinHashLSH(threshold=params.lsh_threshold, num_perm=params.num_perm)
    train: dict[str, MinHash] = {}
    train_texts: dict[str, str] = {}
    for _, table in iter_shards(split_root / "train", num_shards, ["doc_id", "text"]):
        table = table.filter(pc.is_valid(table.column("text")))
        train_texts.update(
            zip(table.column("doc_id").to_pylist(), table.column("text").to_pylist(), strict=True)
        )
        for doc_id, sig in zip(
            table.column("doc_id").to_pylist(),
            signatures(table.column("text").to_pylist(), params),
            strict=True,
        ):
            train[doc_id] = MinHash(num_perm=params.num_perm, hashvalues=sig, scheme="affine32")
            index.insert(doc_id, train[doc_id])
    queried, hits, examples = 0, 0, []
    train_sets: dict[str, frozenset[int]] = {}
    for name in held_out:
        for _, table in iter_shards(split_root / name, num_shards, ["doc_id", "text"]):
            table = table.filter(pc.is_valid(table.column("text")))
            texts = table.column("text").to_pylist()
            ids = table.column("doc_id").to_pylist()
            for doc_id, text, sig in zip(ids, texts, signatures(texts, params), strict=True):
                queried += 1
                query = MinHash(num_perm=params.num_perm, hashvalues=sig, scheme="affine32")
                candidates = sorted(index.query(query))
                if not candidates:
                    continue
                mine = shingle_set(text, params.shingle_size)
                close = [
                    c
                    for c in candidates
                    if jaccard(mine, _train_set(c, train_sets, train_texts, params))
                    >= params.pair_threshold
                ]
                if close:
                    hits += 1
                    if len(examples) < 10:
                        examples.append(f"{doc_id}~{close[0]}")
    return queried, hits, examples


def _train_set(
    doc_id: str, cache: dict[str, frozenset[int]], texts: dict[str, str], params: DedupParams
) -> frozenset[int]:
    if doc_id not in cache:
        cache[doc_id] = shingle_set(texts[doc_id], params.shingle_size)
    return cache[doc_id]
