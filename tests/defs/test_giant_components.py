"""A giant component (similar texts chained across many entities) is reported and stops the
split by default; ``split.oversize: cut`` separates it and every split check still holds."""

import json
import random
from itertools import pairwise
from pathlib import Path

import pyarrow.compute as pc
import pytest
import yaml

from corpus_platform.base.names import SPLIT_DOCUMENTS
from corpus_platform.base.shards import iter_shards
from corpus_platform.defs.stages import STAGE_CHECKS
from corpus_platform.kernels.splitting.cut import bucket_assigner
from corpus_platform.runner import BuildReport
from corpus_platform.sample import ENGLISH
from corpus_platform.store.candidates import list_candidates
from tests.conftest import build, project_config, set_config

SEED = 20261122
RATIOS = {"train": 0.8, "validation": 0.1, "test": 0.1}
CHAIN, BACKGROUND = 60, 300  # entities; each writes two rows
WINDOW, SHIFT = 104, 18  # 100 word 5-grams per text; neighbours share 82: Jaccard 82/118 = 0.69
SPLIT_CHECKS = STAGE_CHECKS[SPLIT_DOCUMENTS].names
# a first snapshot has no stability baseline, a group split promises no time order, and this
# project declares no as-of features and denies no licence
NOT_APPLICABLE = {
    "no_held_out_row_moved_into_train",
    "temporal_order",
    "asof_features_causal",
    "no_denied_license_in_splits",
}
UP_TO_SPLIT = ["raw_documents", "filtered_documents", "deduplicated_documents", SPLIT_DOCUMENTS]


def chain_prefix() -> str:
    """A prefix for the chain's entities whose component, kept whole, lands in test: the
    giant then drives the test share far over its target."""
    assign = bucket_assigner(RATIOS, SEED)
    return next(p for p in (f"chain{c}" for c in "abcdefghij") if assign(f"{p}-000") == "test")


def chain_corpus(prefix: str) -> list[dict[str, object]]:
    """Raw rows: entity ``<prefix>-k`` writes a window of one long word sequence, shifted so
    that only neighbouring windows are similar (0.6 <= Jaccard < 0.8: linked for the split,
    not duplicates), plus one unrelated text; background entities write two unrelated texts."""
    rng = random.Random(5)
    vocab = sorted(set(ENGLISH))
    stream = rng.choices(vocab, k=WINDOW + SHIFT * CHAIN)
    rows = []

    def add(entity: str, words: list[str]) -> None:
        rows.append(
            {
                "id": f"doc-{len(rows):05d}",
                "body": " ".join(words).capitalize() + ".",
                "src": "web",
                "author": entity,
                "created_at": f"2024-{1 + len(rows) % 12:02d}-{1 + len(rows) % 28:02d}T00:00:00Z",
                "clicks": len(rows) % 7,
                "dwell_seconds": 1.5,
                "label": len(rows) % 2,
                "url": None,
            }
        )

    for k in range(CHAIN):
        add(f"{prefix}-{k:03d}", stream[k * SHIFT : k * SHIFT + WINDOW])
        add(f"{prefix}-{k:03d}", rng.choices(vocab, k=rng.randint(80, 140)))
    for k in range(BACKGROUND):
        for _ in range(2):
            add(f"user-{k:03d}", rng.choices(vocab, k=rng.randint(80, 140)))
    return rows


@pytest.fixture(scope="module")
def giant(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, BuildReport]:
    """The chain project built up to the split with the default ``oversize: fail``."""
    root = tmp_path_factory.mktemp("giant") / "project"
    (root / "data" / "raw").mkdir(parents=True)
    prefix = chain_prefix()
    lines = (json.dumps(row) for row in chain_corpus(prefix))
    (root / "data" / "raw" / "chain.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = project_config(
        seed=SEED,
        filters={"languages": [], "min_stop_words": 0},  # random words are not prose
        asof_features=[],
        decontamination={"eval_sets": {}},
    )
    assert config["split"]["oversize"] == "fail" and config["split"]["tolerance"] == 0.08
    (root / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root, prefix, build(root, UP_TO_SPLIT)


def test_oversize_fail_names_the_component_and_the_fix(giant) -> None:
    root, prefix, report = giant
    assert report.materialized["deduplicated_documents"]["rows"] == 2 * (CHAIN + BACKGROUND)
    assert not report.ok and SPLIT_DOCUMENTS not in report.materialized
    assert not (root / "data" / SPLIT_DOCUMENTS).exists()
    failure = next(f for f in report.failures if f.startswith(SPLIT_DOCUMENTS))
    assert "1 component(s) above split.max_component_share 0.05 of 720 rows" in failure
    assert f"component '{prefix}-000': 120 rows (16.7% of rows), 60 entities" in failure
    assert "60 shared-entity, 0 duplicate-cluster and 59 similar-pair links" in failure
    assert failure.endswith("Set split.oversize: cut or raise split.max_component_share")


def split_of_rows(root: Path) -> dict[str, str]:
    """doc_id -> split, or the drop reason for dropped rows."""
    where = {}
    stage = root / "data" / SPLIT_DOCUMENTS
    for folder in ("train", "validation", "test", "dropped"):
        columns = ["doc_id", "reason"] if folder == "dropped" else ["doc_id"]
        for _, table in iter_shards(stage / folder, 8, columns):
            labels = table.column("reason").to_pylist() if folder == "dropped" else None
            for i, doc_id in enumerate(table.column("doc_id").to_pylist()):
                where[doc_id] = labels[i] if labels else folder
    return where


def test_cut_passes_every_split_check_and_drops_bridge_rows(giant) -> None:
    root, prefix, _ = giant
    set_config(root, split={"oversize": "cut"})
    report = build(root, [SPLIT_DOCUMENTS])
    assert report.ok, report.render()
    for name in SPLIT_CHECKS:
        assert report.check(name).label == ("n/a" if name in NOT_APPLICABLE else "PASS"), name
    meta = report.materialized[SPLIT_DOCUMENTS]
    bridges = meta["dropped"]["bridge"]
    assert bridges == meta["bridge_rows"] and 0 < bridges < 20
    assert meta["rows"] + bridges == 2 * (CHAIN + BACKGROUND)
    assert f"| {prefix}-000 | " in meta["cut_components"]
    assert f"| {prefix}-000 | 120 | 16.7% | 60 |" in meta["largest_components"]
    assert "| 64-127 | 1 | 120 | 16.7% |" in meta["component_sizes"]
    # independently of the checks: neighbouring chain texts sit in one split or one is dropped
    where = split_of_rows(root)
    chain_docs = [f"doc-{2 * k:05d}" for k in range(CHAIN)]
    assert sum(where[d] == "bridge" for d in chain_docs) == bridges
    for a, b in pairwise(chain_docs):
        assert where[a] == where[b] or "bridge" in (where[a], where[b]), (a, b)
    assert len({where[d] for d in chain_docs} - {"bridge"}) > 1  # the giant was separated


def test_ratio_check_names_the_giant_component_it_failed_on(giant) -> None:
    root, prefix, _ = giant
    set_config(root, split={"oversize": "fail", "max_component_share": 1.0})
    report = build(root, [SPLIT_DOCUMENTS])
    assert SPLIT_DOCUMENTS not in report.materialized  # rejected: kept aside as a candidate
    candidate = list_candidates(root)[-1]
    assert candidate["asset"] == SPLIT_DOCUMENTS
    assert "bridge" not in (candidate["counts"]["dropped"] or {})
    ratios = report.check("split_ratios_within_tolerance")
    assert not ratios.passed
    assert (
        f"cause: the largest component '{prefix}-000' holds 120 of 720 rows (16.7%) and is "
        "placed whole in test, the split furthest over its target" in ratios.verdict
    )
    assert "Set split.oversize: cut with split.max_component_share below 0.167" in ratios.verdict
    stage = root / candidate["path"] / "test"
    components = {
        c
        for _, t in iter_shards(stage, 8, ["component"])
        for c in pc.unique(t.column(0)).to_pylist()
    }
    assert f"{prefix}-000" in components
