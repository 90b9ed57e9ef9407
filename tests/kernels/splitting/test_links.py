"""The split's links: memberships of dropped rows and similar pairs with a dropped end are left
out (``split.link_dropped: false``), clusters and pairs too short to leak are left out
(``split.min_link_shingles``), and both are counted."""

import re
import unicodedata
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import part_path, read_parquet, read_shard, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.dedup.minhash import shingle_sets
from corpus_platform.kernels.splitting.content import (
    is_leak,
    shingle_counts,
    short_rows,
    too_short,
)
from corpus_platform.kernels.splitting.links import split_links
from tests.realtext import real_texts

LONG = "the quick brown fox jumps over the lazy dog near the river bank at dawn today"
SHORT = "New upstream release."

# cluster c1: a kept, b and c dropped copies by other entities; c2: annotate-like, both kept;
# c3: boilerplate ("New upstream release.") kept as f, copied by g
MEMBERSHIPS = [
    [("c1", "a", "A", "a", True), ("c1", "b", "B", "a", False), ("c3", "f", "F", "f", True)],
    [("c1", "c", "C", "a", False), ("c2", "d", "D", "d", True), ("c2", "e", "E", "d", True)],
    [("c3", "g", "G", "f", False)],
]
TEXTS = [
    [("a", LONG), ("f", SHORT), ("x", LONG)],
    [("d", LONG), ("e", LONG), ("y", LONG)],
    [("h", SHORT)],
]
PAIRS = pa.table(
    {
        "doc_a": ["a", "b", "d", "g", "h"],
        "doc_b": ["x", "y", "e", "y", "x"],
        "entity_a": ["A", "B", "D", "G", "H"],
        "entity_b": ["X", "Y", "E", "Y", "X"],
        "similarity": [0.7, 0.65, 0.9, 0.6, 0.6],
    }
)


def write_inputs(root: Path) -> tuple[Path, Path, Path]:
    """Cluster memberships, the kept rows' texts and the similar pairs, three shards."""
    for shard, rows in enumerate(MEMBERSHIPS):
        cluster_id, doc_id, entity, representative, kept = zip(*rows, strict=True)
        table = pa.table(
            {
                "cluster_id": cluster_id,
                "doc_id": doc_id,
                "entity": entity,
                "representative": representative,
                "kept": kept,
            }
        )
        write_parquet(table, part_path(root / "clusters", shard))
    for shard, rows in enumerate(TEXTS):
        doc_id, text = zip(*rows, strict=True)
        write_parquet(pa.table({"doc_id": doc_id, "text": text}), part_path(root / "kept", shard))
    write_parquet(PAIRS, root / "pairs.parquet")
    return root / "clusters", root / "pairs.parquet", root / "kept"


def links(root: Path, link_dropped: bool, min_shingles: int):
    clusters, pairs, upstream = write_inputs(root)
    params = DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=min_shingles)
    return split_links(
        clusters, pairs, upstream, 3, root / "out", LocalEngine(), params, link_dropped
    )


def test_links_through_dropped_rows_are_left_out_and_counted(tmp_path: Path) -> None:
    kept_clusters, kept_pairs, removed, short = links(tmp_path, False, 0)
    assert removed.as_dict() == {"cluster_memberships": 3, "similar_pairs": 2}
    assert short.as_dict()["similar_pairs"] == 0
    assert read_shard(kept_clusters, 0).column("doc_id").to_pylist() == ["a", "f"]
    assert read_shard(kept_clusters, 1).column("doc_id").to_pylist() == ["d", "e"]
    assert read_shard(kept_clusters, 2).column("doc_id").to_pylist() == []
    assert read_parquet(kept_pairs).column("doc_a").to_pylist() == ["a", "d", "h"]


def test_links_too_short_to_leak_are_left_out_and_counted(tmp_path: Path) -> None:
    """The boilerplate cluster c3 links nothing; so does the pair with the short row h, and the
    pair whose dropped end g is measured by its representative f (short)."""
    kept_clusters, kept_pairs, removed, short = links(tmp_path, True, 10)
    assert short.as_dict() == {
        "min_link_shingles": 10,
        "duplicate_clusters": 1,
        "cluster_memberships": 2,
        "similar_pairs": 2,
    }
    assert removed.as_dict() == {"cluster_memberships": 3, "similar_pairs": 2}
    assert read_shard(kept_clusters, 0).column("doc_id").to_pylist() == ["a", "b"]
    assert read_shard(kept_clusters, 2).column("doc_id").to_pylist() == []
    assert read_parquet(kept_pairs).column("doc_a").to_pylist() == ["a", "b", "d"]


def test_shingle_counts_are_distinct_word_ngrams() -> None:
    params = DedupParams(128, 5, 0.8, 0.6, 0)
    counts = shingle_counts([LONG, SHORT, "", None, "a b c d e a b c d e"], params)
    # LONG: 16 words, 12 distinct 5-grams; SHORT: fewer words than 5, one shingle; the repeated
    # text has 6 windows but 5 distinct ones
    assert counts.tolist() == [12, 1, 0, 0, 5]


def test_too_short_says_what_the_whole_count_says() -> None:
    # texts longer than the prefix it shingles first: a repeated phrase (few distinct n-grams
    # however long), a text whose new n-grams only start after the prefix, real text, edge cases
    repeated = "a b c d e f " * 200
    late = "x " * 300 + " ".join(f"w{i}" for i in range(20))
    texts = [repeated, late, LONG, SHORT, "", None, "!!! ???", *real_texts(200)]
    for minimum in (0, 1, 5, 10, 40):
        params = DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=minimum)
        counts = shingle_counts(texts, params)
        expected = [c < minimum and t is not None for c, t in zip(counts, texts, strict=True)]
        assert too_short(texts, params).tolist() == expected
    assert too_short([late], DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=10)).tolist() == [False]
    assert too_short([repeated], DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=10)).tolist() == [
        True
    ]


def word_ngrams(text: str, size: int) -> set[tuple[str, ...]]:
    """Distinct casefolded word ``size``-grams (punctuation a boundary; a text of fewer words is
    one n-gram), written apart from the kernels."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_short_rows_of_a_shard_kept_in_many_batch_files(tmp_path: Path) -> None:
    # a shard folder kept by raw batch (one small file each, as filtered_documents keeps it):
    # the wanted ids span other shards too, some files hold none of them, some rows have no text
    texts = [LONG, SHORT, None, "", *real_texts(120)]
    rows = [(f"d{i:04d}", text) for i, text in enumerate(texts)]
    folder = part_path(tmp_path / "filtered", 0)
    for batch in range(0, len(rows), 9):
        chunk = rows[batch : batch + 9]
        table = pa.table({"doc_id": [d for d, _ in chunk], "text": [t for _, t in chunk]})
        write_parquet(table, folder / f"b{batch:04d}.parquet")
    wanted_rows = [row for i, row in enumerate(rows) if i % 3 != 1 and not 40 <= i < 60]
    wanted = pa.array(sorted([d for d, _ in wanted_rows] + ["elsewhere-1", "elsewhere-2"]))
    for minimum in (1, 5, 30, 200):
        params = DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=minimum)
        # counted apart from the kernel: distinct lowercase word 5-grams, punctuation a boundary
        expected = sorted(
            d for d, t in wanted_rows if t is not None and len(word_ngrams(t, 5)) < minimum
        )
        assert short_rows(0, tmp_path / "filtered", wanted, params) == expected
    params = DedupParams(128, 5, 0.8, 0.6, 0, min_shingles=5)
    assert short_rows(0, tmp_path / "filtered", pa.array(["elsewhere-1"]), params) == []
    assert short_rows(0, tmp_path / "filtered", pa.array([], pa.string()), params) == []


def test_is_leak_needs_the_threshold_and_the_content_on_both_sides() -> None:
    params = DedupParams(128, 5, 0.8, 0.6, 0)
    sets = shingle_sets([LONG, LONG, SHORT, SHORT], 5, params.normalization)
    assert is_leak(sets.row(0), sets.row(1), 0.6, 10)
    assert not is_leak(sets.row(2), sets.row(3), 0.6, 10)
    assert is_leak(sets.row(2), sets.row(3), 0.6, 0)
    assert not is_leak(sets.row(0), sets.row(2), 0.6, 0)
