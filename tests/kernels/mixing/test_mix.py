"""Mix kernels on small hand-built shards: rates, draws and proportions."""

from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.generations import TextSource, generation_path, with_texts
from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.kernels.mixing.decontam import EvalNgrams
from corpus_platform.kernels.mixing.mix import decontaminate_shard, draw_shard, times_drawn
from corpus_platform.kernels.mixing.plan import MixError, plan_mix
from corpus_platform.kernels.mixing.tokens import TokenCounter
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


def test_the_draw_takes_the_clean_rows_and_their_text_stays_in_the_split(tmp_path: Path) -> None:
    """normalized_splits stores no text: decontamination reads it from the split; the draw takes
    the rows decontamination kept by their positions, with their tokens, and writes them without
    their text, which a reader puts back from the split by doc id."""
    texts = [" ".join(f"r{i}w{k}" for k in range(20)) for i in range(12)]
    texts[7] = f"copied: {texts[5]}"  # holds the benchmark's 13-grams too
    split = pa.table(
        {
            "doc_id": [f"d{i:02d}" for i in range(12)],
            "text": texts,
            "source": ["web", "code"] * 6,
            "f": [float(i) for i in range(12)],
        }
    )
    write_parquet(split, generation_path(tmp_path / "split", 0, 0))
    write_parquet(split.drop_columns(["text"]), generation_path(tmp_path / "train", 0, 0))
    benchmark = EvalNgrams.of({"bench": [texts[5]]}, 13)
    dirty = {5, 7}
    source = TextSource(tmp_path / "split")
    found = decontaminate_shard(
        0, tmp_path / "train", tmp_path / "clean", tmp_path / "removed", benchmark, 13,
        drop=True, counter=TokenCounter(), texts=source,
    )  # fmt: skip
    assert found[1] == {"bench": 2}
    removed = read_shard(tmp_path / "removed", 0)
    assert removed.column("doc_id").to_pylist() == ["d05", "d07"]
    assert removed.column("text").to_pylist() == [texts[5], texts[7]]
    rates = {"web": 2.0, "code": 1.0}
    draw_shard(0, tmp_path / "train", tmp_path / "mix", rates, 3, kept=tmp_path / "clean")
    stored = read_shard(tmp_path / "mix", 0)
    assert stored.column_names == ["doc_id", "source", "f", "tokens", "times_drawn"]
    mixed = with_texts(stored, 0, TextSource(tmp_path / "split", some_rows=True))
    clean = [i for i in range(12) if i not in dirty]
    assert mixed.column_names == ["doc_id", "text", "source", "f", "tokens", "times_drawn"]
    assert mixed.column("doc_id").to_pylist() == [f"d{i:02d}" for i in clean]
    assert mixed.column("text").to_pylist() == [texts[i] for i in clean]
    assert mixed.column("tokens").to_pylist() == [len(texts[i].split()) for i in clean]
    assert mixed.column("times_drawn").to_pylist() == [2 if i % 2 == 0 else 1 for i in clean]
