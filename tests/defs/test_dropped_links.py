"""Boilerplate copied by many authors: dedup keeps one copy and drops the others, and those
dropped copies would chain every author into one giant component. The split counts the links
made only through dropped rows; with ``split.link_dropped: false`` they join nothing, the split
builds and every leak check still holds (counted here, independently, from the split files)."""

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpus_platform.base.names import SPLIT_DOCUMENTS, SPLITS
from corpus_platform.sample import ENGLISH
from tests.conftest import build, make_project, set_config

AUTHORS = 100  # each writes 4 texts of their own and one copy of the boilerplate
UP_TO_SPLIT = ["raw_documents", "filtered_documents", "deduplicated_documents", SPLIT_DOCUMENTS]


def text(rng: random.Random, length: int = 120) -> str:
    vocab = sorted(set(ENGLISH))
    sentences: list[str] = []
    while sum(len(s.split()) for s in sentences) < length:
        words = [rng.choice(vocab) for _ in range(10)]
        sentences.append(f"The {' '.join(words[:5])} and {' '.join(words[5:])}.")
    return " ".join(sentences)


def boilerplate_rows() -> list[dict]:
    rng = random.Random(17)
    shared = text(rng)
    rows = []
    for a in range(AUTHORS):
        author = f"copier-{a:03d}"
        for k in range(4):
            rows.append({"id": f"own-{a:03d}-{k}", "author": author, "body": text(rng)})
        rows.append({"id": f"copy-{a:03d}", "author": author, "body": shared})
    return [
        {
            **r,
            "src": "web",
            "created_at": "2024-01-01T00:00:00Z",
            "clicks": 1,
            "dwell_seconds": 10,
            "label": 1,
            "url": None,
        }
        for r in rows
    ]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("dropped") / "project")
    lines = "".join(json.dumps(r) + "\n" for r in boilerplate_rows())
    (root / "data" / "raw" / "web" / "boilerplate.jsonl").write_text(lines, encoding="utf-8")
    return root


def split_of_rows(root: Path) -> dict[str, tuple[str, str]]:
    """doc_id -> (split, entity), read from the split files."""
    out = {}
    for name in SPLITS:
        for path in sorted((root / "data" / SPLIT_DOCUMENTS / name).glob("*.parquet")):
            table = pq.read_table(path, columns=["doc_id", "entity"])
            for row in table.to_pylist():
                out[row["doc_id"]] = (name, row["entity"])
    return out


def test_copies_dropped_by_dedup_chain_the_authors_and_stop_the_split(project) -> None:
    report = build(project, UP_TO_SPLIT)
    assert not report.ok
    assert "above split.max_component_share" in " ".join(report.failures)
    assert "copier-" in " ".join(report.failures)  # the giant is the copiers' component


def test_left_out_the_links_join_nothing_and_the_split_holds(project) -> None:
    set_config(project, split={"link_dropped": False})
    report = build(project, UP_TO_SPLIT)
    assert report.ok, report.render()
    through = report.materialized[SPLIT_DOCUMENTS]["links_through_dropped_rows"]
    assert through["join_entities"] is False
    assert through["cluster_memberships"] >= AUTHORS - 1  # every dropped copy's membership
    assert "links through dropped duplicates: " in report.render()
    rows = split_of_rows(project)
    splits_of_entity: dict[str, set[str]] = {}
    for split, entity in rows.values():
        splits_of_entity.setdefault(entity, set()).add(split)
    assert all(len(s) == 1 for s in splits_of_entity.values())  # no author in two splits
    copies = [d for d in rows if d.startswith("copy-")]
    assert len(copies) == 1  # the one kept copy; the others are in no split
    copiers = {splits_of_entity[f"copier-{a:03d}"].pop() for a in range(AUTHORS)}
    assert len(copiers) > 1  # the copiers are no longer one component
    for name in ("no_entity_in_two_splits", "no_cluster_in_two_splits"):
        assert report.check(name).passed, report.check(name).verdict
