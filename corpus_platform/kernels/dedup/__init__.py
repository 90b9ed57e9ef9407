"""Exact and MinHash near-duplicate detection, staged like datatrove's pipeline.

Every stage streams through scratch files, one per logical shard, so memory does not grow with
the corpus beyond the grouping of band keys:

1. :func:`signature_shard`: per shard, the exact key of every row (content hash of the normalized
   text, or of ``dedup.columns`` for rows without text), and for rows with text the word n-gram
   shingle hashes, a MinHash signature (datasketch's permutations, computed a batch at a time
   by :mod:`corpus_platform.kernels.dedup.minhash`) and one LSH key per band, bands written in
   ``BAND_GROUPS`` separate groups.
2. :func:`group_candidates`: band keys grouped across shards, one band group per engine task;
   rows sharing a key are candidate pairs, written with their rows' shards, one file per group.
3. :func:`score_candidates`: each shard's candidate rows' sketches copied out once, the shards
   cut into contiguous ranges whose candidate rows fit a quarter of ``engine.memory_mb``, the
   pairs routed to their block (pair of ranges), then each block's pairs verified by the exact
   Jaccard similarity of their two shingle sets (or, with ``dedup.verify: false``, the MinHash
   estimate), one block per engine task; the scores stay on disk.
4. :func:`link_clusters`: connected components (:mod:`corpus_platform.engine.graph`, on the
   engine, partitioned through disk) of exact-duplicate keys and pairs at or above the dedup
   threshold, every edge written by an engine task. A cluster is named by its smallest doc_id.
5. Representatives: the member kept per cluster: the highest ``quality_score`` from the filter
   stage, ties by smallest doc_id (``dedup.keep: quality``, the default), or simply the smallest
   doc_id (``dedup.keep: smallest_id``).
6. The membership side table (cluster, member, representative, kept, quality, estimated
   similarity to the representative), then with :func:`write_dedup_shard` per shard the kept
   rows (every row in annotate mode) stamped with their cluster id.

The stage runs steps 2 to 6 with :func:`cluster_to_disk`; steps 5 and 6 run on the engine
(:mod:`corpus_platform.kernels.dedup.membership`), partitioned by cluster id through disk, so no
process holds a decision per row. ``tests/kernels/dedup/reference_clustering.py`` takes the
same decisions in one process, as the tests' reference.

The LSH layout makes a pair at the split's similarity threshold (itself below the dedup
threshold) a candidate with probability ``LSH_RECALL`` (99.99%), so the same pass yields the
"similar pairs" the split stage uses to keep near-neighbours on one side. Every output is
sorted by doc id: identical for any number of workers and any number of logical shards.
"""

from corpus_platform.kernels.dedup.audit import (
    kept_duplicate_pairs,
)
from corpus_platform.kernels.dedup.candidates import (
    Collisions,
    colliding_rows,
    doc_ids_at,
    group_band_keys,
    group_candidates,
)
from corpus_platform.kernels.dedup.clusters import (
    DiskClusters,
    cluster_to_disk,
    link_clusters,
    write_dedup_shard,
)
from corpus_platform.kernels.dedup.params import (
    BAND_GROUPS,
    BAND_ROW_BYTES,
    BATCH_ROWS,
    KEY_ROW_BYTES,
    LSH_RECALL,
    MAX_BUCKET_PAIRS,
    DedupParams,
    candidate_probability,
    optimal_bands,
    partitions_for,
    recall_bands,
)
from corpus_platform.kernels.dedup.signatures import (
    BAND_SCHEMA,
    SKETCH_SCHEMA,
    exact_keys,
    normalized_texts,
    signature_shard,
    sketch,
)
from corpus_platform.kernels.dedup.verify import (
    estimated_jaccard,
    score_block,
    score_candidates,
    sorted_jaccard,
)

__all__ = [
    "BAND_GROUPS",
    "BAND_ROW_BYTES",
    "BAND_SCHEMA",
    "BATCH_ROWS",
    "KEY_ROW_BYTES",
    "LSH_RECALL",
    "MAX_BUCKET_PAIRS",
    "SKETCH_SCHEMA",
    "Collisions",
    "DedupParams",
    "DiskClusters",
    "candidate_probability",
    "cluster_to_disk",
    "colliding_rows",
    "doc_ids_at",
    "estimated_jaccard",
    "exact_keys",
    "group_band_keys",
    "group_candidates",
    "kept_duplicate_pairs",
    "link_clusters",
    "normalized_texts",
    "optimal_bands",
    "partitions_for",
    "recall_bands",
    "score_block",
    "score_candidates",
    "signature_shard",
    "sketch",
    "sorted_jaccard",
    "write_dedup_shard",
]
