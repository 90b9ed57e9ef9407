"""Split, statistics and mix kernels on small hand-built shards."""

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.kernels.mixing.mix import MixError, mix_shard, plan_rates, times_drawn
from corpus_platform.kernels.splitting.leakage import crossing_keys, crossing_pairs
from corpus_platform.kernels.splitting.split import (
    SplitPlan,
    bucket_bounds,
    entity_components,
    split_of,
    split_shard,
)
from corpus_platform.kernels.splitting.temporal import Cutoffs
from corpus_platform.kernels.statistics.fit import (
    Moments,
    histogram_edges,
    merge_partials,
    shard_histograms,
    shard_partial,
    split_fingerprint,
    statistics_document,
)

RATIOS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def rows_table(n: int, entities: int) -> pa.Table:
    return pa.table(
        {
            "doc_id": [f"d{i:05d}" for i in range(n)],
            "entity": [f"e{i % entities}" for i in range(n)],
            "source": ["web" if i % 3 else "code" for i in range(n)],
            "x": [float(i % 17) for i in range(n)],
            "cluster_id": [f"d{i:05d}" for i in range(n)],
        }
    )


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


def test_split_is_the_same_on_rerun(tmp_path: Path) -> None:
    write_parquet(rows_table(500, 40), tmp_path / "up" / "part-00000.parquet")
    for name in ("a", "b"):
        split_shard(0, tmp_path / "up", tmp_path / name, SplitPlan("group", RATIOS, 5))
    for split in RATIOS:
        a = (tmp_path / "a" / split / "part-00000.parquet").read_bytes()
        assert a == (tmp_path / "b" / split / "part-00000.parquet").read_bytes()


def test_merged_moments_equal_direct_computation() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(5, 3, 10_001)
    parts = np.array_split(values, 7)
    merged = Moments()
    for part in parts:
        merged = merged.merge(Moments.of(part))
    assert merged.count == values.size
    assert math.isclose(merged.mean, values.mean(), rel_tol=1e-12)
    assert math.isclose(merged.std, values.std(), rel_tol=1e-12)
    assert (merged.minimum, merged.maximum) == (values.min(), values.max())
    with_nan = Moments.of(np.array([1.0, np.nan, 3.0]))
    assert (with_nan.count, with_nan.mean) == (2, 2.0)


def test_partials_merge_in_shard_order_and_fingerprint_the_rows(tmp_path: Path) -> None:
    table = rows_table(100, 10)
    write_parquet(table.slice(0, 40), tmp_path / "t" / "part-00000.parquet")
    write_parquet(table.slice(40), tmp_path / "t" / "part-00001.parquet")
    partials = [shard_partial(s, tmp_path / "t", ("x",)) for s in (1, 0)]
    merged = merge_partials(partials, ("x",))["x"]
    assert math.isclose(merged.mean, np.mean(table.column("x").to_numpy()), rel_tol=1e-12)
    reordered = split_fingerprint(list(reversed(partials)))
    assert split_fingerprint(partials) == reordered
    write_parquet(table.slice(41), tmp_path / "t" / "part-00001.parquet")  # one row less
    changed = [shard_partial(s, tmp_path / "t", ("x",)) for s in (0, 1)]
    assert split_fingerprint(changed) != reordered


def test_mix_rates_and_draws(tmp_path: Path) -> None:
    rates = plan_rates({"web": 1000, "code": 100}, {"web": 0.5, "code": 0.5}, None)
    assert rates == {"code": 1.0, "web": 0.1}
    upsampled = plan_rates({"web": 1000, "code": 100}, {"web": 0.5, "code": 0.5}, 400)
    assert upsampled["code"] == 2.0
    assert plan_rates({"web": 3}, {}, None) == {"web": 1.0}
    with pytest.raises(MixError, match=r"source\(s\) \['books'\] with no train rows"):
        plan_rates({"web": 10}, {"web": 0.5, "books": 0.5}, None)
    assert times_drawn("d1", 2.0, 1) == 2
    assert {times_drawn(f"d{i}", 0.5, 1) for i in range(50)} == {0, 1}


def test_mix_shard_hits_the_proportions(tmp_path: Path) -> None:
    write_parquet(rows_table(30_000, 100), tmp_path / "train" / "part-00000.parquet")
    rates = plan_rates({"web": 20_000, "code": 10_000}, {"web": 0.5, "code": 0.5}, None)
    drawn = mix_shard(0, tmp_path / "train", tmp_path / "mix", rates, seed=3)
    total = sum(drawn.values())
    assert abs(drawn["web"] / total - 0.5) < 0.02
    mixed = read_shard(tmp_path / "mix", 0)
    assert sum(mixed.column("times_drawn").to_pylist()) == total


def test_histograms_and_text_statistics(tmp_path: Path) -> None:
    table = pa.table(
        {
            "doc_id": ["a", "b", "c", "d"],
            "x": [0.0, 1.0, 2.0, 10.0],
            "text": ["red blue", "red red green", None, "blue"],
        }
    )
    write_parquet(table.slice(0, 2), tmp_path / "t" / "part-00000.parquet")
    write_parquet(table.slice(2), tmp_path / "t" / "part-00001.parquet")
    partials = [shard_partial(s, tmp_path / "t", ("x",), with_text=True) for s in (0, 1)]
    merged = merge_partials(partials, ("x",))
    edges = {"x": histogram_edges(merged["x"], 5)}
    assert edges["x"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    counts = [shard_histograms(s, tmp_path / "t", edges)["x"] for s in (0, 1)]
    assert np.sum(counts, axis=0).tolist() == [2, 1, 0, 0, 1]
    doc = statistics_document(
        partials, ("x",), "train", {"x": (edges["x"], [2, 1, 0, 0, 1])}, 2, True
    )
    assert doc["text"]["document_frequency_top_k"] == [["blue", 2], ["red", 2]]
    assert doc["text"]["documents"] == 3 and doc["text"]["words"]["maximum"] == 3.0
    assert doc["fitted_on"] == {
        "split": "train",
        "rows": 4,
        "fingerprint": split_fingerprint(partials),
    }
