"""crossing_keys: keys in more than one split, counted by partition, against a plain count."""

import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.generations import generation_path
from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup.params import partitions_for
from corpus_platform.kernels.splitting.crossing import KEY_ROW_BYTES, crossing_keys

SHARDS = 3


def write_splits(root: Path, rows: int, seed: int = 5) -> dict[str, set[str]]:
    """Split folders of ``rows`` rows whose entities repeat, most in one split, some in two; an
    appended generation in one shard. Returns each entity's splits (counted here, in Python)."""
    rng = random.Random(seed)
    where: dict[str, set[str]] = defaultdict(set)
    tables: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    for i in range(rows):
        entity = f"e{rng.randrange(rows // 3):06d}"
        home = SPLITS[int(entity[1:]) % 3]
        split = rng.choice(SPLITS) if rng.random() < 0.02 else home
        generation = 1 if i % 7 == 0 else 0
        tables[(split, rng.randrange(SHARDS), generation)].append(entity)
        where[entity].add(split)
    for split in SPLITS:  # a split has every shard of generation 0, maybe empty
        for shard in range(SHARDS):
            tables.setdefault((split, shard, 0), [])
    for (split, shard, generation), entities in tables.items():
        path = generation_path(root / split, shard, generation)
        write_parquet(pa.table({"entity": pa.array(entities, pa.string())}), path)
    return where


@pytest.mark.parametrize("memory_mb,workers", [(1024, 1), (1, 2)])
def test_the_partitions_add_up_to_the_plain_count(
    tmp_path: Path, memory_mb: int, workers: int
) -> None:
    where = write_splits(tmp_path / "split", 30_000)
    expected = sorted(e for e, splits in where.items() if len(splits) > 1)
    assert memory_mb > 1 or partitions_for(30_000, KEY_ROW_BYTES, memory_mb) >= 8
    report = crossing_keys(
        tmp_path / "split",
        SHARDS,
        "entity",
        "entities",
        None,
        LocalEngine(workers),
        tmp_path,
        memory_mb,
    )
    assert (report.total, report.crossing) == (len(where), len(expected))
    assert list(report.examples) == expected[:10] and not report.passed
    exempt = pa.array(expected[:-1])
    spared = crossing_keys(
        tmp_path / "split",
        SHARDS,
        "entity",
        "entities",
        exempt,
        LocalEngine(workers),
        tmp_path,
        memory_mb,
    )
    assert (spared.total, spared.crossing, spared.examples) == (
        len(where) - len(exempt),
        1,
        (expected[-1],),
    )
    assert not list(tmp_path.glob("tmp*"))  # the scatter's files are gone


def test_one_split_per_key_passes(tmp_path: Path) -> None:
    for index, split in enumerate(SPLITS):
        for shard in range(SHARDS):
            entities = [f"{split}-{i}" for i in range(50)] if shard == index else []
            table = pa.table({"entity": pa.array(entities, pa.string())})
            write_parquet(table, part_path(tmp_path / split, shard))
    report = crossing_keys(tmp_path, SHARDS, "entity", "entities", memory_mb=1)
    assert report.passed and report.total == 150 and report.examples == ()
