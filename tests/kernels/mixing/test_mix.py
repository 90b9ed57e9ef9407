"""Mix kernels on small hand-built shards: rates, draws and proportions."""

from pathlib import Path

import pytest

from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.kernels.mixing.mix import draw_shard, times_drawn
from corpus_platform.kernels.mixing.plan import MixError, plan_mix
from tests.shardtools import rows_table


def test_mix_rates_and_draws(tmp_path: Path) -> None:
    halves = {"web": 0.5, "code": 0.5}
    rates = plan_mix({"web": 1000, "code": 100}, proportions=halves).rates
    assert rates == {"code": 1.0, "web": 0.1}
    upsampled = plan_mix({"web": 1000, "code": 100}, proportions=halves, total=400).rates
    assert upsampled["code"] == 2.0
    assert plan_mix({"web": 3}, proportions={}).rates == {"web": 1.0}
    with pytest.raises(MixError, match=r"source\(s\) \['books'\] with no train rows"):
        plan_mix({"web": 10}, proportions={"web": 0.5, "books": 0.5})
    assert times_drawn("d1", 2.0, 1) == 2
    assert {times_drawn(f"d{i}", 0.5, 1) for i in range(50)} == {0, 1}


def test_mix_shard_hits_the_proportions(tmp_path: Path) -> None:
    write_parquet(rows_table(30_000, 100), tmp_path / "train" / "part-00000.parquet")
    halves = {"web": 0.5, "code": 0.5}
    rates = plan_mix({"web": 20_000, "code": 10_000}, proportions=halves).rates
    drawn, _ = draw_shard(0, tmp_path / "train", tmp_path / "mix", rates, seed=3)
    total = sum(drawn.values())
    assert abs(drawn["web"] / total - 0.5) < 0.02
    mixed = read_shard(tmp_path / "mix", 0)
    assert sum(mixed.column("times_drawn").to_pylist()) == total
