"""Connected components through disk (large-star / small-star) against union-find."""

import itertools
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.hashing import shard_of
from corpus_platform.engine import LocalEngine
from corpus_platform.engine.graph import connected_components, write_edge_arrays
from corpus_platform.kernels.splitting.unionfind import UnionFind


def write_edges(edges: list[tuple[str, str]], work: Path, partitions: int) -> int:
    """The graph's edges (self-links dropped) as the first step's input; return their number."""
    first = pa.array([a for a, _ in edges], pa.string())
    second = pa.array([b for _, b in edges], pa.string())
    return write_edge_arrays(first, second, work, 0, partitions)


def expected(edges: list[tuple[str, str]]) -> dict[str, str]:
    links = UnionFind()
    links.union_all(edges)
    return {m: root for root, members in links.groups().items() for m in members}


def components(
    edges: list[tuple[str, str]], tmp_path: Path, partitions: int, out_shards: int = 4, engine=None
) -> tuple[dict[str, str], int]:
    work, out = tmp_path / "work", tmp_path / "out"
    write_edges(edges, work, partitions)
    rounds = connected_components(work, out, partitions, out_shards, engine)
    found = {}
    for shard in range(out_shards):
        table = pq.read_table(out / f"part-{shard:05d}.parquet")
        nodes = table.column("node").to_pylist()
        assert nodes == sorted(nodes)
        assert all(shard_of(n, out_shards) == shard for n in nodes)
        found.update(zip(nodes, table.column("component").to_pylist(), strict=True))
    return found, rounds


def random_graph(rng: random.Random, nodes: int, edges: int) -> list[tuple[str, str]]:
    names = [f"d{rng.randrange(10**9):09d}" for _ in range(nodes)]
    return [(rng.choice(names), rng.choice(names)) for _ in range(edges)]


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_random_graphs_match_union_find(tmp_path: Path, partitions: int) -> None:
    rng = random.Random(partitions)
    for trial in range(3):
        edges = random_graph(rng, 400, 300)
        found, _ = components(edges, tmp_path / str(trial), partitions)
        assert found == expected(edges)


def test_a_long_shuffled_chain_is_one_component_in_few_rounds(tmp_path: Path) -> None:
    rng = random.Random(7)
    names = [f"n{i:05d}" for i in range(3000)]
    rng.shuffle(names)
    edges = list(itertools.pairwise(names))
    rng.shuffle(edges)
    found, rounds = components(edges, tmp_path, 4)
    assert set(found.values()) == {"n00000"} and len(found) == 3000
    assert rounds < 40  # O(log^2 n) rounds, not O(n)


def test_stars_cliques_self_links_and_an_empty_graph(tmp_path: Path) -> None:
    star = [("hub", f"leaf{i}") for i in range(50)]
    clique = [(a, b) for a in "pqrs" for b in "pqrs"]
    found, _ = components(star + clique + [("alone", "alone")], tmp_path / "g", 3)
    assert found == expected(star + [(a, b) for a, b in clique if a != b])
    assert "alone" not in found and found["leaf7"] == "hub" and found["s"] == "p"
    assert components([], tmp_path / "empty", 2) == ({}, 1)


def test_two_workers_write_the_same_files_as_one(tmp_path: Path) -> None:
    edges = random_graph(random.Random(3), 300, 250)
    digests = []
    for workers in (1, 2):
        folder = tmp_path / f"w{workers}"
        components(edges, folder, 5, engine=LocalEngine(workers))
        digests.append([p.read_bytes() for p in sorted((folder / "out").iterdir())])
    assert digests[0] == digests[1]
