"""Component statistics and the cut of oversize components on hand-built graphs."""

import random
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.shards import part_path, read_shard, write_parquet
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.splitting.components import (
    Links,
    SimilarPair,
    largest_placed,
    link_graph,
    scan_members,
)
from corpus_platform.kernels.splitting.cut import (
    OversizeError,
    bucket_assigner,
    cut_component,
    greedy_cover,
    piece_share,
)
from corpus_platform.kernels.splitting.split import SplitPlan, split_shard
from tests.kernels.splitting.reference_components import (
    component_report,
    entity_components,
    plan_components,
    scan_entities,
)

RATIOS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def pair(a: str, b: str, similarity: float) -> SimilarPair:
    """A pair of rows each named by its entity and one more character."""
    return SimilarPair(a, b, a[:-1], b[:-1], similarity)


def pairs_table(pairs: list[SimilarPair]) -> pa.Table:
    names = ("doc_a", "doc_b", "entity_a", "entity_b", "similarity")
    return pa.table({n: [getattr(p, n) for p in pairs] for n in names})


def clusters_table(members: list[tuple[str, str]]) -> pa.Table:
    return pa.table({"cluster_id": [c for c, _ in members], "entity": [e for _, e in members]})


# e1 and e2 share a duplicate cluster; similar pairs chain e2-e3-e4 (e1-e4 closes a cycle);
# e5-e6 is a second component; e7 and e8 are linked to nobody.
GRAPH = Links(
    clusters=(("e1", "e1"), ("e1", "e2"), ("e1", "e2")),
    pairs=(
        pair("e2a", "e3a", 0.7),
        pair("e3a", "e4a", 0.65),
        pair("e1a", "e4b", 0.61),
        pair("e5a", "e6a", 0.7),
    ),
)
ROWS = {"e1": 3, "e2": 1, "e3": 0, "e4": 2, "e5": 1, "e6": 1, "e7": 4, "e8": 1}


def test_link_graph_names_components_and_counts_joins_by_kind() -> None:
    graph = link_graph(GRAPH)
    assert graph.component_of == {
        "e1": "e1",
        "e2": "e1",
        "e3": "e1",
        "e4": "e1",
        "e5": "e5",
        "e6": "e5",
    }
    # clusters are taken first: e1-e2 is a cluster join, e2-e3 and e3-e4 pair joins, and
    # e1~e4 closes a cycle (no join); cluster + pair joins = entities - 1
    assert graph.joins == {"e1": (1, 2), "e5": (0, 1)}


def test_link_graph_agrees_with_entity_components_whatever_the_link_order() -> None:
    rng = random.Random(7)
    entities = [f"u{i:02d}" for i in range(40)]
    pairs = [pair(f"{a}x", f"{b}y", 0.7) for a, b in (rng.sample(entities, 2) for _ in range(30))]
    members = [(f"c{rng.randrange(8)}", rng.choice(entities)) for _ in range(20)]
    expected = entity_components(pairs_table(pairs), clusters_table(members))
    links = Links.from_tables(pairs_table(pairs), clusters_table(members))
    assert link_graph(links).component_of == expected
    shuffled = Links.from_tables(pairs_table(pairs[::-1]), clusters_table(members[::-1]))
    assert link_graph(shuffled) == link_graph(links)


def test_component_report_histogram_largest_and_oversize() -> None:
    report = component_report(link_graph(GRAPH), ROWS, max_share=0.4, top=2)
    assert (report.rows, report.components) == (13, 4)
    # components by rows: e1 6 (e1..e4), e7 4, e5 2, e8 1; bins are powers of two
    assert report.histogram == ((1, 1, 1, 1), (2, 3, 1, 2), (4, 7, 2, 10))
    assert [s.name for s in report.largest] == ["e1", "e7"]
    giant = report.largest[0]
    assert (giant.rows, giant.entities, giant.share) == (6, 4, pytest.approx(6 / 13))
    # 6 rows over 3 entities with rows: 3 rows joined by a shared entity
    assert (giant.entity_joins, giant.cluster_joins, giant.pair_joins) == (3, 1, 2)
    lone = report.largest[1]
    assert (lone.rows, lone.entities, lone.entity_joins, lone.pair_joins) == (4, 1, 3, 0)
    assert [s.name for s in report.oversize] == ["e1"]  # 6/13 > 0.4 >= 4/13
    filled = report.with_samples({"e1": ("e1a", "e1b", "e2a")})
    line = filled.oversize[0].describe()
    assert line.startswith("component 'e1': 6 rows (46.2% of rows), 4 entities")
    assert "1 duplicate-cluster and 2 similar-pair links, e.g. e1a, e1b, e2a" in line
    assert component_report(link_graph(GRAPH), ROWS, max_share=0.5, top=2).oversize == ()


def test_scans_read_rows_per_entity_samples_and_present_ids(tmp_path: Path) -> None:
    shards = [
        pa.table({"doc_id": ["e1c", "e2a", "e7a"], "entity": ["e1", "e2", "e7"]}),
        pa.table({"doc_id": ["e1a", "e1b", "e4a", "e7b"], "entity": ["e1", "e1", "e4", "e7"]}),
    ]
    for shard, table in enumerate(shards):
        write_parquet(table, part_path(tmp_path, shard))
    assert scan_entities(tmp_path, 2) == {"e1": 3, "e2": 1, "e4": 1, "e7": 2}
    component_of = link_graph(GRAPH).component_of
    samples, present = scan_members(tmp_path, 2, component_of, {"e1", "e7"}, {"e1a", "gone"})
    assert samples == {"e1": ("e1a", "e1b", "e1c"), "e7": ("e7a", "e7b")}
    assert present == {"e1a"}


@pytest.mark.parametrize(
    ("edges", "cover"),
    [
        ([], []),
        ([("hub", "a"), ("hub", "b"), ("c", "hub")], ["hub"]),
        ([("a", "b"), ("b", "c"), ("c", "d")], ["b", "c"]),  # b and c tie: b first, then c-d
        ([("a", "b"), ("a", "b"), ("x", "y")], ["a", "x"]),
    ],
)
def test_greedy_cover(edges: list[tuple[str, str]], cover: list[str]) -> None:
    assert greedy_cover(edges) == cover
    assert greedy_cover(edges[::-1]) == cover


def test_piece_share_keeps_three_deviations_within_the_tolerance() -> None:
    # 0.08**2 / (9 * 0.16 * 0.68): train's r(1-r) = 0.16 is the largest spread
    assert piece_share(0.05, 0.08, RATIOS, 0.68) == pytest.approx(0.0064 / 0.9792)
    assert piece_share(0.05, 0.08, RATIOS, 0.01) == 0.05  # capped at the share cap


# a chain of six one-row entities; c and d share a duplicate cluster
CHAIN = Links(
    clusters=(("c", "d"),),
    pairs=(
        pair("a1", "b1", 0.75),
        pair("b1", "c1", 0.65),
        pair("c1", "d1", 0.79),
        pair("d1", "e1", 0.70),
        pair("e1", "f1", 0.62),
    ),
)
ONE_ROW = dict.fromkeys("abcdef", 1)
ALL_IDS = {f"{e}1" for e in "abcdef"}


def test_cut_rejoins_parts_strongest_first_and_drops_the_bridging_rows() -> None:
    # parts {a} {b} {c,d} {e} {f}; pieces up to 2 rows: a-b (0.75) joins, d-e (0.70) and
    # b-c (0.65) would make 3, e-f (0.62) joins
    assign = {"a": "train", "c": "test", "e": "train"}.__getitem__
    cut = cut_component("a", ONE_ROW, CHAIN, ALL_IDS, 3, 2, assign)
    assert cut.pieces == {"a": "a", "b": "a", "c": "c", "d": "c", "e": "e", "f": "e"}
    assert (cut.piece_count, cut.largest_piece) == (3, 2)
    assert cut.split_rows == {"train": 4, "validation": 0, "test": 2}
    assert cut.bridges == ("b1", "d1")  # b1~c1 and d1~e1 cross train and test
    same = cut_component("a", ONE_ROW, CHAIN, ALL_IDS, 3, 2, lambda piece: "train")
    assert same.bridges == () and same.pieces == cut.pieces  # pairs within a split leak nothing


def test_cut_ignores_pairs_whose_row_was_deduplicated_away() -> None:
    assign = {"a": "train", "c": "test", "e": "train", "f": "validation"}.__getitem__
    cut = cut_component("a", ONE_ROW, CHAIN, ALL_IDS - {"e1"}, 3, 2, assign)
    assert cut.pieces["e"] == "e" and cut.pieces["f"] == "f"  # no live pair joins them
    assert cut.bridges == ("b1",)


def test_cut_never_separates_an_entity_or_a_cluster() -> None:
    rows = {**ONE_ROW, "b": 2}  # b also wrote b2, similar to c1
    links = Links(CHAIN.clusters, (*CHAIN.pairs, pair("b2", "c1", 0.64)))
    # pieces up to 3 rows: a+b (0.75) and c+d+e (0.70); b-c and e-f would overflow
    assign = {"a": "train", "c": "test", "f": "test"}.__getitem__
    cut = cut_component("a", rows, links, ALL_IDS | {"b2"}, 4, 3, assign)
    assert cut.pieces == {"a": "a", "b": "a", "c": "c", "d": "c", "e": "c", "f": "f"}
    assert cut.bridges == ("c1",)  # c1 covers both b1~c1 and b2~c1; b's rows stay together
    with pytest.raises(OversizeError, match=r"part 'c' of 2 rows .* raise split\.max_component"):
        cut_component("a", ONE_ROW, CHAIN, ALL_IDS, 1, 1, assign)


def test_cut_leaves_no_live_pair_across_splits_and_ignores_link_order() -> None:
    rng = random.Random(3)
    entities = [f"n{i:03d}" for i in range(120)]
    rows = {e: rng.randint(1, 3) for e in entities}
    docs = {e: [f"{e}r{k}" for k in range(n)] for e, n in rows.items()}
    pairs = [
        SimilarPair(rng.choice(docs[a]), rng.choice(docs[b]), a, b, round(rng.uniform(0.6, 0.8), 3))
        for a, b in pairwise(entities)
        for _ in range(2)
    ]
    clusters = tuple((a, b) for a, b in zip(entities[::10], entities[1::10], strict=True))
    present = {d for ids in docs.values() for d in ids}
    assign = bucket_assigner(RATIOS, 11)
    cut = cut_component("n000", rows, Links(clusters, tuple(pairs)), present, 30, 12, assign)
    where = {e: assign(p) for e, p in cut.pieces.items()}
    for p in pairs:
        crosses = where[p.entity_a] != where[p.entity_b]
        assert not crosses or p.doc_a in cut.bridges or p.doc_b in cut.bridges
    for a, b in clusters:
        assert cut.pieces[a] == cut.pieces[b]
    assert cut.largest_piece <= 12 and 0 < len(cut.bridges) < 60
    reordered = Links(clusters[::-1], tuple(pairs[::-1]))
    assert cut_component("n000", rows, reordered, present, 30, 12, assign) == cut


def write_chain_stage(folder: Path, num_shards: int) -> tuple[pa.Table, pa.Table]:
    """A split input of 150 rows where a chain of 30 entities (2 rows each) holds 60; k00 and
    k01 also share a duplicate cluster."""
    ids = [f"k{i:02d}r{r}" for i in range(30) for r in range(2)]
    ids += [f"z{i:03d}r0" for i in range(90)]
    table = pa.table({"doc_id": ids, "entity": [d.split("r")[0] for d in ids]})
    for shard in range(num_shards):
        mine = pa.array([i % num_shards == shard for i in range(len(ids))])
        write_parquet(table.filter(mine), part_path(folder, shard))
    chain = [
        SimilarPair(f"k{i:02d}r0", f"k{i + 1:02d}r1", f"k{i:02d}", f"k{i + 1:02d}", 0.7)
        for i in range(29)
    ]
    return pairs_table(chain), clusters_table([("k00r0", "k00"), ("k00r0", "k01")])


def test_plan_fails_or_cuts_the_giant_component_whatever_the_shards(tmp_path: Path) -> None:
    pairs, clusters = write_chain_stage(tmp_path / "up", 3)
    failing = plan_components(pairs, clusters, tmp_path / "up", 3, SplitConfig(), 5)
    assert failing.error is not None and failing.bridges == frozenset()
    assert failing.error.startswith("1 component(s) above split.max_component_share 0.05 of 150")
    assert (
        "component 'k00': 60 rows (40.0% of rows), 30 entities, joined by 30 shared-entity, "
        "1 duplicate-cluster and 28 similar-pair links, e.g. k00r0, k00r1, k01r0"
    ) in failing.error
    assert failing.error.endswith("Set split.oversize: cut or raise split.max_component_share")
    cutting = SplitConfig(oversize="cut", max_component_share=0.1, tolerance=0.1)
    plan = plan_components(pairs, clusters, tmp_path / "up", 3, cutting, 5)
    assert plan.error is None and len(plan.cuts) == 1
    cut = plan.cuts[0]
    assert plan.bridges == frozenset(cut.bridges) and cut.bridges
    # pieces of at most 0.1**2 / (9 * 0.16 * 0.4) of 150 rows = 2 rows: one entity each
    assert plan.piece_share == pytest.approx(0.01 / 0.576)
    assert (cut.piece_count, cut.largest_piece) == (29, 4)  # k00 + k01 is one part
    assert plan.components["k05"] == "k05" and plan.components["k01"] == "k00"
    assert "z001" not in plan.components  # unlinked entities are their own components
    write_chain_stage(tmp_path / "one", 1)
    assert plan_components(pairs, clusters, tmp_path / "one", 1, cutting, 5) == plan
    uncuttable = SplitConfig(oversize="cut", max_component_share=0.02)
    refused = plan_components(pairs, clusters, tmp_path / "up", 3, uncuttable, 5)
    assert refused.error is not None and "its part 'k00' of 4 rows" in refused.error


def test_bridge_rows_go_to_dropped_with_their_reason(tmp_path: Path) -> None:
    table = pa.table({"doc_id": ["a1", "b1", "c1"], "entity": ["a", "b", "c"]})
    write_parquet(table, part_path(tmp_path / "up", 0))
    plan = SplitPlan("group", RATIOS, 5, {}, bridges=frozenset({"b1"}))
    placed = split_shard(0, tmp_path / "up", tmp_path / "out", plan)
    assert placed["bridge"] == 1 and sum(placed.values()) == 3
    dropped = read_shard(tmp_path / "out" / "dropped", 0)
    assert dropped.column("doc_id").to_pylist() == ["b1"]
    assert dropped.column("reason").to_pylist() == ["bridge"]
    placed_component = largest_placed(tmp_path / "out", 1)
    assert placed_component is not None and placed_component.total_rows == 2
    assert placed_component.name == "a" and placed_component.share == 0.5
