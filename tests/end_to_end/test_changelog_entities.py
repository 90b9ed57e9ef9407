"""Entity splits on real entities glued by boilerplate: every Debian changelog entry under
/usr/share/doc is a row (entity: the signer's e-mail; timestamp: the entry's date), split by
``time_group`` with ``oversize: cut``. Filters stay at their defaults but for the short-text ones;
the split's settings stay at their defaults.

Exact copies of entries such as "New upstream release" join every maintainer who ever wrote one.
Kept as they are (the bullet-list filter off too: a changelog entry is a bullet list), with
``split.min_link_shingles: 0`` those links hold several maintainers in one part that no cut
separates, and the split stops; at the default, a cluster or pair too short to leak links
nothing, and the build passes. Its promises are then counted here without the platform's kernels:
no maintainer in two splits, time order across splits, and no pair of texts that carry the
minimum content at or above the split's threshold across train and a held-out split.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from corpus_platform.config import SplitConfig
from tests.conftest import build, rows_project, set_config
from tests.end_to_end.test_real_text import SPLIT_THRESHOLD, close_pairs, shingles
from tests.realtext import changelog_entries

SHORT_TEXT_FILTERS = {
    "languages": [],
    "min_chars": 1,
    "min_words": 1,
    "min_stop_words": 0,
}
BULLET_LISTS = {**SHORT_TEXT_FILTERS, "max_bullet_lines_ratio": 1.0}
MIN_LINK_SHINGLES = SplitConfig().min_link_shingles


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def changelog_project(
    root: Path, rows: list[dict[str, str]] | None = None, filters: dict | None = None
) -> Path:
    """A project of the changelog entries (every one on this machine by default), split by
    maintainer and time."""
    return rows_project(
        root,
        rows or changelog_entries(),
        "changelog",
        {"entity": "author", "timestamp": "created_at"},
        filters=filters or SHORT_TEXT_FILTERS,
        split={"mode": "time_group", "oversize": "cut"},
    )


@pytest.fixture(scope="module")
def changelogs(tmp_path_factory: pytest.TempPathFactory):
    root = changelog_project(tmp_path_factory.mktemp("changelogs") / "project")
    return root, build(root)


def split_rows(root: Path) -> pd.DataFrame:
    """doc_id, text, entity, timestamp and split of every row in a split."""
    frames = []
    for split in ("train", "validation", "test"):
        folder = root / "data" / "split_documents" / split
        for part in sorted(folder.glob("part-*")):
            frame = pd.read_parquet(part, columns=["doc_id", "text", "entity", "timestamp"])
            frames.append(frame.assign(split=split))
    return pd.concat(frames, ignore_index=True)


def test_the_changelog_split_builds_and_every_check_passes(changelogs) -> None:
    root, report = changelogs
    assert report.ok, report.render()
    short = report.materialized["split_documents"]["links_too_short_to_leak"]
    assert short["min_link_shingles"] == MIN_LINK_SHINGLES
    assert short["duplicate_clusters"] > 0 and short["similar_pairs"] > 0
    rows = split_rows(root)
    assert set(rows["split"]) == {"train", "validation", "test"}


def test_no_maintainer_in_two_splits_and_time_runs_forward(changelogs) -> None:
    root, _ = changelogs
    rows = split_rows(root)
    assert rows.groupby("entity")["split"].nunique().max() == 1
    spans = rows.groupby("split")["timestamp"].agg(["min", "max"])
    assert spans.loc["train", "max"] <= spans.loc["validation", "min"]
    assert spans.loc["validation", "max"] <= spans.loc["test", "min"]


def test_no_pair_with_content_crosses_train_and_held_out(changelogs) -> None:
    """Counted independently: lowercase word 5-gram Jaccard over every pair of split rows whose
    texts both have the minimum of distinct 5-grams."""
    root, _ = changelogs
    rows = split_rows(root)
    where = dict(zip(rows["doc_id"], rows["split"], strict=True))
    texts = {
        doc_id: text
        for doc_id, text in zip(rows["doc_id"], rows["text"], strict=True)
        if len(shingles(text)) >= MIN_LINK_SHINGLES
    }
    pairs = close_pairs(texts, SPLIT_THRESHOLD)
    crossing = sorted(
        (a, b) for a, b in pairs if where[a] != where[b] and "train" in (where[a], where[b])
    )
    assert crossing == []
    assert len(pairs) >= 20  # the count is live: similar entries exist, all on one side


@pytest.mark.parametrize("minimum", [0, MIN_LINK_SHINGLES])
def test_every_entry_kept_boilerplate_glues_maintainers_only_without_the_minimum(
    tmp_path: Path, minimum: int
) -> None:
    """The measurement behind the default, with every entry kept as it is (bullet lists too):
    with every pair linking, short boilerplate holds several maintainers in one part above the
    share cap and the split stops naming the fix; at the default it builds."""
    root = changelog_project(tmp_path / "project", filters=BULLET_LISTS)
    set_config(root, split={"min_link_shingles": minimum})
    report = build(root)
    if minimum == 0:
        assert not report.ok
        failure = next(f for f in report.failures if "split_documents" in f)
        assert "held together by duplicate clusters" in failure
        assert "split.min_link_shingles" in failure
    else:
        assert report.ok, report.render()
        assert report.check("no_entity_in_two_splits").passed


def test_an_append_of_changelogs_links_by_content_and_moves_nothing(tmp_path: Path) -> None:
    """The entries of the first two thirds of the packages built, then the rest appended as a
    new raw batch: the append applies the same content rule to the new rows' links (counted in
    its metadata), moves no published row, and the whole split still keeps every promise."""
    entries = changelog_entries()
    packages = sorted({row["id"].split(":")[0] for row in entries})
    first = set(packages[: 2 * len(packages) // 3])
    root = changelog_project(
        tmp_path / "project",
        [r for r in entries if r["id"].split(":")[0] in first],
        BULLET_LISTS,
    )
    assert build(root).ok
    before = split_rows(root).set_index("doc_id")["split"].to_dict()
    later = [r for r in entries if r["id"].split(":")[0] not in first]
    write_rows(root / "data" / "raw" / "changelogs-later.jsonl", later)

    report = build(root)

    assert report.ok, report.render()
    split = report.materialized["split_documents"]
    assert split["build"]["kind"] == "append"
    assert split["links_too_short_to_leak"]["similar_pairs"] > 0
    rows = split_rows(root)
    now = rows.set_index("doc_id")["split"].to_dict()
    assert {d: now.get(d) for d in before} == before
    assert len(now) > len(before)
    assert rows.groupby("entity")["split"].nunique().max() == 1
