"""Dedup kernels: hand-built clusters with known answers."""

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.hashing import TextNormalization, content_hash, shard_of
from corpus_platform.base.shards import (
    part_path,
    read_scratch,
    read_shard,
    scratch_part_path,
    write_parquet,
    write_sharded,
)
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels import dedup
from corpus_platform.kernels.dedup import (
    DedupParams,
    colliding_rows,
    signature_shard,
    sorted_jaccard,
    write_dedup_shard,
)
from corpus_platform.kernels.dedup import signatures as signatures_module
from corpus_platform.kernels.dedup.candidates import candidate_ids
from corpus_platform.kernels.dedup.minhash import shingle_sets
from corpus_platform.kernels.dedup.verify import (
    SKETCH_ROW_BYTES,
    candidate_bytes,
    candidate_rows,
    range_blocks,
    read_sketches,
    shard_ranges,
)
from tests.kernels.dedup.reference_clustering import (
    MemberInfo,
    ScoredPair,
    build_clusters,
    candidate_pairs,
    choose_representatives,
    cluster_documents,
    exact_duplicate_groups,
    read_scored,
)
from tests.kernels.dedup.reference_jaccard import jaccard, shingle_set

PARAMS = DedupParams(num_perm=128, shingle_size=5, threshold=0.8, pair_threshold=0.6, seed=1)


def text(rng: random.Random, n: int = 150) -> str:
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n))


def edit(base: str, positions: list[int]) -> str:
    words = base.split()
    for p in positions:
        words[p] = "changed" + str(p)
    return " ".join(words)


def planted() -> dict[str, str]:
    rng = random.Random(0)
    base, other = text(rng), text(rng)
    return {
        "d1": base,
        "d0": "  " + base.upper(),  # exact duplicate after normalization
        "d2": edit(base, [20]),  # near duplicate, J ~ 0.93
        "d3": edit(base, [10, 40, 70, 100, 130]),  # similar, J ~ 0.7: a split link, not a dup
        "d4": other,
        "d5": text(rng),
    }


def write_corpus(
    folder: Path, docs: dict[str, str], shards: int, quality: dict[str, float]
) -> None:
    rows = sorted(docs.items())
    table = pa.table(
        {
            "doc_id": [d for d, _ in rows],
            "entity": [f"e-{d}" for d, _ in rows],
            "text": [t for _, t in rows],
            "content_hash": [content_hash(t) for _, t in rows],
            "quality_score": [quality.get(d, 0.5) for d, _ in rows],
        }
    )
    write_sharded(table, folder, shards)


def run(root: Path, params: DedupParams = PARAMS, shards: int = 1, **quality: float):
    write_corpus(root / "up", planted(), shards, quality)
    for shard in range(shards):
        signature_shard(shard, root / "up", root / "scratch", params)
    return cluster_documents(root / "scratch", shards, params)


def test_shingles_follow_the_normalization() -> None:
    def sets(a: str, b: str, normalization: TextNormalization) -> tuple[list[int], list[int]]:
        found = shingle_sets([a, b], 5, normalization)
        return found.row(0).tolist(), found.row(1).tolist()

    default = TextNormalization()
    first, second = sets("\uff21, b!", "a, B!", default)
    assert first == second and len(first) == 1  # NFKC folds the full-width letter, casefold
    first, second = sets("\uff21, b!", "a, B!", TextNormalization(unicode="none", casefold=False))
    assert first != second
    first, second = sets("Hello, World!", "hello world", TextNormalization(punctuation=True))
    assert first == second
    assert len(shingle_sets(["one two three four five six"], 5, default).row(0)) == 2


def test_planted_clusters_are_found_and_named_by_smallest_id(tmp_path: Path) -> None:
    result = run(tmp_path)
    assert exact_duplicate_groups(tmp_path / "scratch", 1) == [["d0", "d1"]]
    assert result.cluster_of == {"d0": "d0", "d1": "d0", "d2": "d0"}
    similar = {(p.doc_a, p.doc_b) for p in result.scored if p.similarity >= PARAMS.pair_threshold}
    assert ("d1", "d3") in similar  # the split must see the moderately similar row
    assert not any("d4" in pair or "d5" in pair for pair in similar)


def test_the_highest_quality_member_is_kept_ties_by_smallest_id(tmp_path: Path) -> None:
    result = run(tmp_path / "quality", d2=0.9)
    assert result.representative == {"d0": "d2"}
    membership = result.membership("drop").to_pylist()
    assert [(m["doc_id"], m["representative"], m["kept"]) for m in membership] == [
        ("d0", "d2", False),
        ("d1", "d2", False),
        ("d2", "d2", True),
    ]
    assert membership[2]["similarity"] == 1.0
    assert 0.8 < membership[0]["similarity"] < 1.0  # MinHash estimate against the kept row
    assert run(tmp_path / "tie").representative == {"d0": "d0"}
    by_id = replace(PARAMS, keep="smallest_id")
    assert run(tmp_path / "by_id", by_id, d2=0.9).representative == {"d0": "d0"}


def test_choose_representatives_rule() -> None:
    info = {d: MemberInfo("e", q) for d, q in {"a": 0.2, "b": 0.7, "c": 0.7, "x": 0.1}.items()}
    cluster_of = {"a": "a", "b": "a", "c": "a", "x": "x"}
    assert choose_representatives(cluster_of, info, "quality") == {"a": "b", "x": "x"}
    assert choose_representatives(cluster_of, info, "smallest_id") == {"a": "a", "x": "x"}


def test_clusters_do_not_depend_on_the_number_of_shards(tmp_path: Path) -> None:
    one, five = run(tmp_path / "one", shards=1), run(tmp_path / "five", shards=5)
    assert {shard_of(d, 5) for d in planted()} != {0}  # the rows really are spread out
    assert one.cluster_of == five.cluster_of
    assert one.scored == five.scored
    assert one.membership("drop").equals(five.membership("drop"))


def test_drop_and_annotate_modes(tmp_path: Path) -> None:
    result = run(tmp_path)
    for mode in ("drop", "annotate"):
        write_sharded(result.membership(mode), tmp_path / mode / "clusters", 1)
        write_dedup_shard(0, tmp_path / "up", tmp_path / mode, mode)
    dropped, annotated = read_shard(tmp_path / "drop", 0), read_shard(tmp_path / "annotate", 0)
    assert dropped.column("doc_id").to_pylist() == ["d0", "d3", "d4", "d5"]
    assert len(annotated) == 6
    assert annotated.column("cluster_id").to_pylist()[:4] == ["d0", "d0", "d0", "d3"]


def test_cluster_names_do_not_depend_on_pair_order(tmp_path: Path) -> None:
    pairs = [ScoredPair("b", "c", "x", "y", 0.9), ScoredPair("a", "c", "x", "y", 0.85)]
    low = [ScoredPair("d", "e", "x", "y", 0.79)]
    forward = build_clusters([["f", "g"]], pairs + low, 0.8, tmp_path / "forward", 2)
    backward = build_clusters([["f", "g"]], [*low, *reversed(pairs)], 0.8, tmp_path / "back", 3)
    assert forward == backward == {"a": "a", "b": "a", "c": "a", "f": "f", "g": "f"}


def test_params_validate() -> None:
    with pytest.raises(ValueError, match="pair_threshold"):
        DedupParams(num_perm=64, shingle_size=5, threshold=0.5, pair_threshold=0.7, seed=1)


def test_pairs_are_scored_by_exact_jaccard(tmp_path: Path) -> None:
    result = run(tmp_path)
    texts = planted()
    assert result.scored
    for pair in result.scored:
        exact = jaccard(shingle_set(texts[pair.doc_a], 5), shingle_set(texts[pair.doc_b], 5))
        assert pair.similarity == exact
    assert dedup.candidate_probability(PARAMS.pair_threshold, *PARAMS.bands) >= dedup.LSH_RECALL


def test_lsh_layout_reaches_the_recall_target_with_the_fewest_bands() -> None:
    assert dedup.recall_bands(0.6, 128) == (42, 3)
    assert dedup.candidate_probability(0.6, 32, 4) < dedup.LSH_RECALL  # one more row misses
    with pytest.raises(ValueError, match="raise dedup"):
        dedup.recall_bands(0.05, 16)


def test_without_verification_pairs_carry_the_minhash_estimate(tmp_path: Path) -> None:
    estimated = replace(PARAMS, verify=False)
    assert estimated.bands == dedup.optimal_bands(PARAMS.pair_threshold, PARAMS.num_perm)
    result = run(tmp_path, estimated)
    texts = planted()
    for pair in result.scored:
        exact = jaccard(shingle_set(texts[pair.doc_a], 5), shingle_set(texts[pair.doc_b], 5))
        assert pair.similarity == pytest.approx(exact, abs=0.15)
        assert pair.similarity * 128 == round(pair.similarity * 128)  # slots of 128 agree


def test_sorted_jaccard_matches_set_jaccard() -> None:
    a, b = np.array([1, 3, 5, 7], np.uint64), np.array([3, 4, 5], np.uint64)
    assert sorted_jaccard(a, b) == jaccard(frozenset(a.tolist()), frozenset(b.tolist())) == 2 / 5
    assert sorted_jaccard(b, a) == 2 / 5
    empty = np.array([], np.uint64)
    beyond = np.array([9], np.uint64)  # larger than every value of ``a``: no false match
    assert sorted_jaccard(a, beyond) == 0.0 and sorted_jaccard(a, empty) == 0.0
    assert sorted_jaccard(empty, empty) == 1.0


def test_band_groups_cover_every_band_once() -> None:
    groups = PARAMS.band_groups()
    assert [b for g in groups for b in g] == list(range(PARAMS.bands[0]))
    assert len(groups) == 8


def test_normalization_decides_exact_duplicates(tmp_path: Path) -> None:
    docs = {"a": "Hello, world! " * 30, "b": "hello world " * 30, "c": "HELLO, WORLD! " * 30}
    table = pa.table(
        {
            "doc_id": list(docs),
            "entity": list(docs),
            "text": list(docs.values()),
            "content_hash": [content_hash(t) for t in docs.values()],
        }
    )
    write_parquet(table, part_path(tmp_path / "up", 0))
    whitespace = TextNormalization(tokens="whitespace")
    cases = {
        "default": (PARAMS, [["a", "b", "c"]]),
        "whitespace": (replace(PARAMS, normalization=whitespace), [["a", "c"]]),
        "punctuation": (
            replace(PARAMS, normalization=replace(whitespace, punctuation=True)),
            [["a", "b", "c"]],
        ),
        "case": (replace(PARAMS, normalization=TextNormalization(casefold=False)), []),
    }
    for name, (params, groups) in cases.items():
        signature_shard(0, tmp_path / "up", tmp_path / name, params)
        assert exact_duplicate_groups(tmp_path / name, 1) == groups, name


def test_tabular_rows_deduplicate_on_configured_columns(tmp_path: Path) -> None:
    table = pa.table(
        {
            "doc_id": ["e1", "e2", "e3", "e4"],
            "entity": ["u1", "u1", "u1", "u2"],
            "text": pa.nulls(4, pa.string()),
            "content_hash": [content_hash(None)] * 4,
            "price": [9.5, 9.5, 3.0, 9.5],
        }
    )
    write_parquet(table, tmp_path / "up" / "part-00000.parquet")
    tabular = replace(PARAMS, columns=("entity", "price"))
    signature_shard(0, tmp_path / "up", tmp_path / "with", tabular)
    assert exact_duplicate_groups(tmp_path / "with", 1) == [["e1", "e2"]]
    result = cluster_documents(tmp_path / "with", 1, tabular)
    assert result.cluster_of == {"e1": "e1", "e2": "e1"}
    assert result.similarity == {"e1": 1.0, "e2": 1.0}
    signature_shard(0, tmp_path / "up", tmp_path / "without", PARAMS)
    assert exact_duplicate_groups(tmp_path / "without", 1) == []


def test_colliding_rows_are_the_buckets_of_more_than_one_row() -> None:
    band = np.array([0, 0, 1, 0, 1, 0, 2, 2, 2], np.int16)
    key = np.array([7, 9, 7, 7, 7, 5, 3, 3, 3], np.uint64)
    row = np.array([13, 11, 12, 10, 14, 15, 18, 16, 17], np.uint64)
    found = colliding_rows(band, key, row)
    # same key in another band is another bucket; buckets of two become row pairs
    assert found.pairs.tolist() == [[10, 13], [12, 14]]
    assert [bucket.tolist() for bucket in found.larger] == [[16, 17, 18]]


def test_sketching_in_small_batches_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = run(tmp_path / "whole", shards=2)
    monkeypatch.setattr(signatures_module, "BATCH_ROWS", 2)
    batched = run(tmp_path / "batched", shards=2)
    assert batched.scored == whole.scored and batched.cluster_of == whole.cluster_of
    sketches = scratch_part_path(tmp_path / "batched" / "scratch" / "sketches", 0)
    assert len(read_scratch(sketches)) > 2
    assert pa.ipc.open_file(pa.memory_map(str(sketches))).num_record_batches > 1


def test_verification_scores_the_same_for_any_workers_and_ranges(tmp_path: Path) -> None:
    write_corpus(tmp_path / "up", planted(), 4, {})
    scored, blocks = {}, {}
    for workers, memory_mb in ((1, 1024), (2, 1024), (2, 0)):  # 0: ranges as small as can be
        scratch = tmp_path / f"scratch{workers}-{memory_mb}"
        for shard in range(4):
            signature_shard(shard, tmp_path / "up", scratch, PARAMS)
        engine = LocalEngine(workers)
        pairs = candidate_pairs(scratch, 4, PARAMS, engine)
        counted = dedup.score_candidates(scratch, 4, PARAMS, engine, memory_mb=memory_mb)
        scored[workers, memory_mb] = read_scored(scratch)
        assert [(p.doc_a, p.doc_b) for p in scored[workers, memory_mb]] == pairs
        assert counted.candidates == counted.kept == len(pairs)
        blocks[workers, memory_mb] = len(list((scratch / "scored").glob("part-*.parquet")))
        similar = dedup.score_candidates(scratch, 4, PARAMS, min_similarity=0.6)
        assert similar.candidates == len(pairs) and read_scored(scratch) == [
            p for p in scored[workers, memory_mb] if p.similarity >= 0.6
        ]
    assert len(set(map(tuple, scored.values()))) == 1 and len(scored[1, 1024]) >= 3
    assert blocks[1, 1024] in (6, 10) and blocks[2, 0] == 10  # 3 or 4 ranges; 4 shards alone
    by_pair = {(p.doc_a, p.doc_b): p.similarity for p in scored[1, 1024]}
    texts = planted()
    for (a, b), similarity in by_pair.items():
        assert similarity == jaccard(shingle_set(texts[a], 5), shingle_set(texts[b], 5))


def test_shard_ranges_hold_the_budget_and_give_at_least_three_ranges() -> None:
    assert shard_ranges([10] * 9, 1000) == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # a third of all
    assert shard_ranges([10] * 8, 1000) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert shard_ranges([10] * 8, 35) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert shard_ranges([10] * 4, 15) == [0, 1, 2, 3]
    assert shard_ranges([50, 1, 1, 1], 10) == [0, 1, 1, 1]  # a shard over the budget alone
    assert shard_ranges([0, 0], 10) == [0, 0] and shard_ranges([], 10) == []
    assert range_blocks([0, 0, 1]) == [(0, 0), (0, 1), (1, 1)] and range_blocks([]) == []


def test_grouping_in_parts_changes_nothing(tmp_path: Path) -> None:
    write_corpus(tmp_path / "up", planted(), 3, {})
    many = replace(PARAMS, groups=40)
    for shard in range(3):
        signature_shard(shard, tmp_path / "up", tmp_path / "few", PARAMS)
        signature_shard(shard, tmp_path / "up", tmp_path / "many", many)
    assert len(many.band_groups()) == 40 > len(PARAMS.band_groups())
    assert candidate_pairs(tmp_path / "many", 3, many) == candidate_pairs(
        tmp_path / "few", 3, PARAMS
    )
    whole = exact_duplicate_groups(tmp_path / "few", 3)
    assert whole and exact_duplicate_groups(tmp_path / "few", 3, partitions=5) == whole


def test_band_groups_grow_with_rows_beyond_the_memory_budget() -> None:
    assert PARAMS.for_rows(1000, 1024).groups == dedup.BAND_GROUPS
    assert PARAMS.for_rows(10**8, 64).groups > dedup.BAND_GROUPS
    assert dedup.partitions_for(10**6, 256, 64) == 8


def test_candidate_rows_are_read_from_the_sketch_file_as_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring reads a shard's candidate rows from its sketch file, mapped: candidate_bytes
    writes their positions once (exactly the rows a candidate pair names) and counts what they
    hold (8 bytes a shingle, or the signature's bytes, and a fixed cost a row); read_sketches
    takes those rows, each shingle set a view of the file's buffer (no copy). Sketch files of
    several record batches: positions run on across them."""
    monkeypatch.setattr(signatures_module, "BATCH_ROWS", 2)
    write_corpus(tmp_path / "up", planted(), 2, {})
    scratch = tmp_path / "scratch"
    for shard in range(2):
        signature_shard(shard, tmp_path / "up", scratch, PARAMS)
    candidate_pairs(scratch, 2, PARAMS, LocalEngine(1))
    for shard in range(2):
        path = scratch_part_path(scratch / "sketches", shard)
        assert pa.ipc.open_file(path).num_record_batches > 1
        every = read_sketches(path, "shingles")
        held = candidate_bytes(shard, scratch, PARAMS)
        rows = candidate_rows(scratch, shard)
        kept = read_sketches(path, "shingles", rows)
        assert sorted(kept) == candidate_ids(scratch, shard).to_pylist()
        assert 0 < len(kept) < len(every) and len(rows) == len(kept)
        for doc_id, (entity, shingles) in kept.items():
            assert entity == every[doc_id][0]
            assert np.array_equal(shingles, every[doc_id][1])
            assert not shingles.flags.owndata
        signatures = read_sketches(path, "signature", rows)
        assert sorted(signatures) == sorted(kept)
        assert all(len(row) == PARAMS.num_perm for _, row in signatures.values())
        assert held == sum(SKETCH_ROW_BYTES + 8 * len(s) for _, s in kept.values())
        unverified = replace(PARAMS, verify=False)
        signed = sum(SKETCH_ROW_BYTES + 4 * PARAMS.num_perm for _ in kept)
        assert candidate_bytes(shard, scratch, unverified) == signed
