"""Split kernels on small hand-built shards: components, modes, windows, rerun."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.generations import generation_path
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.kernels.splitting.crossing import crossing_keys
from corpus_platform.kernels.splitting.leakage import crossing_pairs
from corpus_platform.kernels.splitting.split import (
    SplitPlan,
    bucket_bounds,
    split_of,
    split_shard,
)
from corpus_platform.kernels.splitting.temporal import Cutoffs
from tests.kernels.splitting.reference_components import entity_components
from tests.shardtools import rows_table

RATIOS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def pairs(*links: tuple[str, str, str, str]) -> pa.Table:
    names = ["doc_a", "doc_b", "entity_a", "entity_b"]
    return pa.table({name: [link[i] for link in links] for i, name in enumerate(names)})


def test_components_link_entities_through_similar_pairs_and_clusters() -> None:
    comps = entity_components(pairs(("d1", "d2", "e9", "e3"), ("d4", "d5", "e3", "e7")))
    assert comps == {"e3": "e3", "e7": "e3", "e9": "e3"}
    clusters = pa.table({"cluster_id": ["c1", "c1", "c2"], "entity": ["e8", "e5", "e6"]})
    linked = entity_components(pairs(("d1", "d2", "e9", "e3")), clusters)
    assert linked == {"e3": "e3", "e9": "e3", "e5": "e5", "e8": "e5"}


def test_time_group_keeps_rows_only_inside_their_split_window(tmp_path: Path) -> None:
    day = 86_400_000_000
    table = rows_table(400, 20).append_column(
        "timestamp", pa.array([i * day for i in range(400)], pa.timestamp("us", tz="UTC"))
    )
    write_parquet(table, tmp_path / "up" / "part-00000.parquet")
    cutoffs = Cutoffs(validation=(320 * day, ""), test=(360 * day, ""), gap=0)
    placed = split_shard(
        0, tmp_path / "up", tmp_path / "tg", SplitPlan("time_group", RATIOS, 5, {}, cutoffs)
    )
    assert placed["outside_window"] > 0 and sum(placed.values()) == 400
    assert crossing_keys(tmp_path / "tg", 1, "entity", "entities").passed
    dropped = read_shard(tmp_path / "tg" / "dropped", 0)
    assert set(dropped.column("reason").to_pylist()) == {"outside_window"}
    for name, (low, high) in {
        "train": (0, 320),
        "validation": (320, 360),
        "test": (360, 400),
    }.items():
        days = [
            t.timestamp() // 86_400
            for t in read_shard(tmp_path / "tg" / name, 0).column("timestamp").to_pylist()
        ]
        assert all(low <= d < high for d in days), name


def test_bucket_bounds_cover_everything() -> None:
    bounds = bucket_bounds(RATIOS)
    assert bounds == [("train", 8000), ("validation", 9000), ("test", 10000)]
    assert [split_of(b, bounds) for b in (0, 7999, 8000, 9999)] == [
        "train",
        "train",
        "validation",
        "test",
    ]


def test_group_split_keeps_entities_together_and_row_split_leaks(tmp_path: Path) -> None:
    write_parquet(rows_table(3000, 150), tmp_path / "up" / "part-00000.parquet")
    comps = entity_components(pairs(("d00000", "d00001", "e0", "e1")))
    sizes = split_shard(
        0, tmp_path / "up", tmp_path / "group", SplitPlan("group", RATIOS, 5, comps)
    )
    assert sum(sizes.values()) == 3000
    group = crossing_keys(tmp_path / "group", 1, "entity", "entities")
    assert group.passed and group.total == 150
    assert abs(sizes["train"] / 3000 - 0.8) < 0.1
    split_shard(0, tmp_path / "up", tmp_path / "row", SplitPlan("row", RATIOS, 5))
    row = crossing_keys(tmp_path / "row", 1, "entity", "entities")
    assert not row.passed and row.crossing > 100
    assert row.describe().startswith(f"entities in more than one split: {row.crossing} of 150")
    linked = pairs(("d00000", "d00001", "e0", "e1"))
    assert crossing_pairs(tmp_path / "group", 1, linked).passed


def test_crossing_pairs_detects_a_split_pair(tmp_path: Path) -> None:
    write_parquet(pa.table({"doc_id": ["a"]}), tmp_path / "s" / "train" / "part-00000.parquet")
    write_parquet(pa.table({"doc_id": ["b"]}), tmp_path / "s" / "test" / "part-00000.parquet")
    write_parquet(
        pa.table({"doc_id": pa.array([], pa.string())}),
        tmp_path / "s" / "validation" / "part-00000.parquet",
    )
    report = crossing_pairs(tmp_path / "s", 1, pairs(("a", "b", "x", "y"), ("a", "gone", "x", "z")))
    assert (report.total, report.crossing, report.examples) == (1, 1, ("a~b",))


def test_crossing_pairs_finds_each_row_in_the_shard_of_its_id(tmp_path: Path) -> None:
    """Rows sit in the logical shard of their doc id; pairs across shards and splits are found
    and counted as a plain Python lookup counts them."""
    shards, where = 4, {}
    for i in range(200):
        where[f"doc-{i:03d}"] = ("train", "validation", "test")[i % 3]
    for split in ("train", "validation", "test"):
        for shard in range(shards):
            ids = [
                d for d, s in sorted(where.items()) if s == split and shard_of(d, shards) == shard
            ]
            write_parquet(
                pa.table({"doc_id": pa.array(ids, pa.string())}),
                tmp_path / "s" / split / f"part-{shard:05d}.parquet",
            )
    links = [(f"doc-{i:03d}", f"doc-{(i * 7 + 3) % 200:03d}") for i in range(0, 200, 5)]
    links.append(("doc-000", "doc-gone"))
    report = crossing_pairs(tmp_path / "s", shards, pairs(*((a, b, "x", "y") for a, b in links)))
    present = [(a, b) for a, b in links if a in where and b in where]
    crossing = sorted(f"{a}~{b}" for a, b in present if where[a] != where[b])
    assert len({shard_of(d, shards) for pair in present for d in pair}) == shards
    assert (report.total, report.crossing) == (len(present), len(crossing))
    assert list(report.examples) == crossing[:10]


def test_split_is_the_same_on_rerun(tmp_path: Path) -> None:
    write_parquet(rows_table(500, 40), tmp_path / "up" / "part-00000.parquet")
    for name in ("a", "b"):
        split_shard(0, tmp_path / "up", tmp_path / name, SplitPlan("group", RATIOS, 5))
    for split in RATIOS:
        a = generation_path(tmp_path / "a" / split, 0, 0).read_bytes()
        assert a == generation_path(tmp_path / "b" / split, 0, 0).read_bytes()
