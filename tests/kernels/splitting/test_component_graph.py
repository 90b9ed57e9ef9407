"""The split's components on the engine equal the in-memory plan (kernels/cut.py), which
serves as the reference: same report, cuts, bridges and entity -> component names."""

import random
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.config import SplitConfig
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.splitting.component_graph import plan_components_on_engine
from corpus_platform.kernels.splitting.cut import ComponentPlan
from corpus_platform.kernels.splitting.split import read_labels
from tests.kernels.splitting.reference_components import plan_components


def write_stage(folder: Path, seed: int, shards: int) -> tuple[pa.Table, pa.Table]:
    """A split input of random entities (1-3 rows each), random similar pairs, duplicate
    clusters and one long chain (a giant component); returns (pairs, clusters)."""
    rng = random.Random(seed)
    entities = [f"u{i:03d}" for i in range(120)]
    ids, owners = [], []
    for entity in entities:
        for r in range(rng.randint(1, 3)):
            ids.append(f"{entity}d{r}")
            owners.append(entity)
    table = pa.table({"doc_id": ids, "entity": owners})
    for shard in range(shards):
        keep = pa.array([i % shards == shard for i in range(len(ids))])
        write_parquet(table.filter(keep), part_path(folder, shard))
    chain = [(f"u{i:03d}d0", f"u{i + 1:03d}d0") for i in range(40)]
    loose = [tuple(rng.sample(ids, 2)) for _ in range(15)]
    pairs = [
        (a, b) for a, b in chain + loose if a.split("d")[0] != b.split("d")[0] or rng.random() < 0.5
    ]
    entity_of = dict(zip(ids, owners, strict=True))
    pairs_table = pa.table(
        {
            "doc_a": [a for a, _ in pairs],
            "doc_b": [b for _, b in pairs],
            "entity_a": [entity_of[a] for a, _ in pairs],
            "entity_b": [entity_of[b] for _, b in pairs],
            "similarity": [round(rng.uniform(0.6, 0.99), 3) for _ in pairs],
        }
    )
    members = [(f"c{c}", doc) for c in range(8) for doc in rng.sample(ids[60:], 3)]
    clusters = pa.table(
        {
            "cluster_id": [c for c, _ in members],
            "doc_id": [d for _, d in members],
            "entity": [entity_of[d] for _, d in members],
        }
    )
    for shard in range(shards):
        keep = pa.array([i % shards == shard for i in range(len(members))])
        write_parquet(clusters.filter(keep), part_path(folder / "clusters", shard))
    write_parquet(pairs_table, folder / "similar_pairs.parquet")
    return pairs_table, clusters


def same_plan(reference: ComponentPlan, engine_plan: ComponentPlan, entities: list[str]) -> None:
    assert engine_plan.labels is not None
    named = {**read_labels(engine_plan.labels, pa.array(entities)), **engine_plan.components}
    assert named == reference.components
    assert engine_plan.report == reference.report
    assert engine_plan.cuts == reference.cuts
    assert engine_plan.bridges == reference.bridges
    assert engine_plan.error == reference.error
    assert engine_plan.piece_share == reference.piece_share
    assert engine_plan.linked == reference.linked


@pytest.mark.parametrize(
    ("config", "workers", "shards"),
    [
        (SplitConfig(), 1, 3),  # the chain is oversize: the plan names the error
        (SplitConfig(max_component_share=0.9), 2, 4),
        (SplitConfig(oversize="cut", max_component_share=0.2, tolerance=0.1), 2, 3),
        (SplitConfig(oversize="cut", max_component_share=0.2, tolerance=0.1), 1, 1),
    ],
)
def test_engine_plan_equals_the_in_memory_plan(
    tmp_path: Path, config: SplitConfig, workers: int, shards: int
) -> None:
    stage = tmp_path / "dedup"
    pairs, clusters = write_stage(stage, 5, shards)
    reference = plan_components(pairs, clusters, stage, shards, config, 9)
    engine_plan = plan_components_on_engine(
        stage,
        stage / "similar_pairs.parquet",
        shards,
        config,
        9,
        tmp_path / "s",
        LocalEngine(workers),
    )
    entities = [f"u{i:03d}" for i in range(120)]
    same_plan(reference, engine_plan, entities)
    if config.oversize == "cut":
        assert reference.cuts and reference.bridges  # the cut path was exercised
    if config.max_component_share == 0.05:
        assert reference.error is not None


def test_no_links_every_entity_alone(tmp_path: Path) -> None:
    stage = tmp_path / "dedup"
    write_parquet(pa.table({"doc_id": ["a1", "b1"], "entity": ["a", "b"]}), part_path(stage, 0))
    empty_clusters = pa.table(
        {
            "cluster_id": pa.array([], pa.string()),
            "doc_id": pa.array([], pa.string()),
            "entity": pa.array([], pa.string()),
        }
    )
    write_parquet(empty_clusters, part_path(stage / "clusters", 0))
    names = ("doc_a", "doc_b", "entity_a", "entity_b")
    pairs = pa.table(
        {**{n: pa.array([], pa.string()) for n in names}, "similarity": pa.array([], pa.float64())}
    )
    write_parquet(pairs, stage / "similar_pairs.parquet")
    config = SplitConfig(max_component_share=0.9)
    reference = plan_components(pairs, empty_clusters, stage, 1, config, 9)
    engine_plan = plan_components_on_engine(
        stage, stage / "similar_pairs.parquet", 1, config, 9, tmp_path / "s"
    )
    same_plan(reference, engine_plan, ["a", "b"])
    assert engine_plan.report.components == 2 and engine_plan.linked == 0
