"""The split and its neighbour check agree: a pair the dedup stage never verified (two rows of an
LSH bucket it linked as a star) is found by the split's own search and linked, so the split is
not rejected by ``no_train_neighbour_of_held_out_rows``.

The planted case, as license texts copied across packages make it: in each group, two rows B and
C share a core text (Jaccard 0.75: similar, not duplicates) and twenty rows A share the same core
with text of their own (Jaccard about 0.55 with B and C, 0.43 with each other). Every band key B
and C share is almost always shared by some A too, so their buckets hold more than
``MAX_BUCKET_PAIRS`` rows (lowered here to 2 so that a small corpus has such buckets) and are
linked as a star around an A: B~C is never a candidate of the dedup stage. The check groups the
same band keys and compares every held-out row of a bucket with every train row of it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from corpus_platform.defs.splitting import assets
from corpus_platform.kernels.dedup import candidates
from tests.conftest import build, rows_project
from tests.end_to_end.test_real_text import PERMISSIVE_FILTERS, close_pairs

GROUPS = 16
A_ROWS = 40
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9))) for _ in range(count)]


def planted_rows(seed: int = 5) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for group in range(GROUPS):
        core = words(rng, 60)
        for i in range(A_ROWS):
            rows.append({"id": f"g{group:02d}-a{i:02d}", "body": " ".join(core + words(rng, 32))})
        for name in ("b", "c"):
            rows.append({"id": f"g{group:02d}-{name}", "body": " ".join(core + words(rng, 10))})
    return [{**row, "src": "planted", "author": row["id"]} for row in rows]


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(candidates, "MAX_BUCKET_PAIRS", 2)
    return rows_project(
        tmp_path / "project",
        planted_rows(),
        "planted",
        {"entity": "author"},
        filters={**PERMISSIVE_FILTERS, "min_words": 5},
    )


def split_texts(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """doc_id -> split and doc_id -> text of every row in a split."""
    where, texts = {}, {}
    for split in ("train", "validation", "test"):
        for part in sorted((root / "data" / "split_documents" / split).glob("part-*")):
            frame = pd.read_parquet(part, columns=["doc_id", "text"])
            for doc_id, text in zip(frame["doc_id"], frame["text"], strict=True):
                where[doc_id], texts[doc_id] = split, text
    return where, texts


def test_the_split_links_the_pairs_its_check_finds(planted: Path) -> None:
    report = build(planted)

    assert report.ok, report.render()
    dedup_pairs = report.materialized["deduplicated_documents"]
    linked = report.materialized["split_documents"]["neighbour_pairs_linked"]
    assert linked["pairs_linked"] > 0, dedup_pairs  # the star left pairs for the split to link
    assert all(a.split("-")[0] == b.split("-")[0] for a, b in linked["examples"])
    where, texts = split_texts(planted)
    pairs = close_pairs(texts, 0.6)
    assert len(pairs) >= GROUPS // 2  # the B~C pairs are there, counted independently
    sides = [{where[a], where[b]} for a, b in pairs]
    assert [s for s in sides if len(s) == 2 and "train" in s] == []


def test_without_its_search_the_split_is_rejected_by_its_check(
    planted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case is live: a split that does not search is caught by the check, naming a B~C."""
    monkeypatch.setattr(assets, "NEIGHBOUR_ROUNDS", 0)

    report = build(planted)

    check = report.check("no_train_neighbour_of_held_out_rows")
    assert not check.passed, check.verdict
    assert not (planted / "data" / "split_documents").exists()
