"""Appending raw data to a built built_copy: a group split keeps every published row where it is,
new rows follow their entity or similar rows, and a new row that would join rows the split
placed apart is dropped as a bridge instead of blocking the build."""

import json
import random
import re
import shutil
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from corpus_platform.audit import replay
from corpus_platform.base.names import SPLIT_DOCUMENTS, SPLITS, TRAINING_MIX
from corpus_platform.base.shards import read_manifest
from corpus_platform.runner import run_build
from corpus_platform.store.registry import list_snapshots
from corpus_platform.store.snapshots import current_snapshot
from corpus_platform.trace import trace
from tests.conftest import build, published_stages, set_config, tree_digest

WEB = Path("data") / "raw" / "web"
UP_TO_DEDUP = ["raw_documents", "filtered_documents", "deduplicated_documents"]


def split_rows(root: Path) -> dict[str, str]:
    """doc_id -> split of the published split, read from its files."""
    rows = {}
    for name in SPLITS:
        for path in sorted((root / "data" / SPLIT_DOCUMENTS / name).glob("*.parquet")):
            rows.update(
                dict.fromkeys(pq.read_table(path, columns=["doc_id"])["doc_id"].to_pylist(), name)
            )
    return rows


def dropped(root: Path) -> dict[str, str]:
    folder = root / "data" / SPLIT_DOCUMENTS / "dropped"
    out = {}
    for path in sorted(folder.glob("*.parquet")):
        table = pq.read_table(path, columns=["doc_id", "reason"])
        out.update(zip(table["doc_id"].to_pylist(), table["reason"].to_pylist(), strict=True))
    return out


def raw_web_rows(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / WEB / "crawl-0.jsonl").read_text().splitlines()]


def word_shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Lowercase word n-grams, punctuation as a boundary: counted without the platform's code."""
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str) -> float:
    x, y = word_shingles(a), word_shingles(b)
    return len(x & y) / len(x | y)


def append(root: Path, name: str, rows: list[dict]) -> None:
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (root / WEB / name).write_text(lines, encoding="utf-8")


def test_an_append_moves_no_published_row_and_new_rows_follow_their_entity(built_copy) -> None:
    before = split_rows(built_copy)
    web = [r for r in raw_web_rows(built_copy) if r["id"] in before]
    rng = random.Random(3)
    known = rng.sample(web, 10)
    rows = []
    for i, row in enumerate(known):  # new documents by known authors
        words = row["body"].split()
        rng.shuffle(words)  # the same words in another order: no similar pair
        rows.append({**row, "id": f"web-new-known-{i}", "body": " ".join(words)})
    for i, row in enumerate(rng.sample(web, 20)):  # new authors
        words = row["body"].split()
        rng.shuffle(words)
        rows.append(
            {**row, "id": f"web-new-{i}", "author": f"new-author-{i}", "body": " ".join(words)}
        )
    append(built_copy, "crawl-2.jsonl", rows)

    report = build(built_copy)

    assert report.ok, report.render()
    after = split_rows(built_copy)
    moved = {d: (s, after.get(d)) for d, s in before.items() if after.get(d) != s}
    assert moved == {}
    for i, row in enumerate(known):
        new_id = f"web-new-known-{i}"
        if new_id in after:  # filters and dedup may remove a row; a placed one follows its author
            assert after[new_id] == before[row["id"]], new_id
    assert sum(1 for i in range(20) if f"web-new-{i}" in after) >= 15
    # rows by known authors arrive late (at their authors' timestamps): published as-of values
    # stay as published, so the statistics fit is kept; the new rows' values see every earlier
    # row of their author, published or new (the as-of check recomputes them)
    fit = report.materialized["fitted_statistics"]["fit"]
    assert fit.startswith("kept"), fit
    assert report.check("asof_features_causal").passed
    # a rebuild with nothing new then keeps every stage, the newest generation's draws too
    settled = published_stages(built_copy)
    newest = read_manifest(built_copy / "data" / TRAINING_MIX)["new_generation_drawn_per_source"]
    assert sum(newest.values()) > 0
    assert build(built_copy).ok
    assert published_stages(built_copy) == settled


def test_a_new_row_joining_train_and_test_is_dropped_as_a_bridge(built_copy) -> None:
    before = split_rows(built_copy)
    rows = {r["id"]: r for r in raw_web_rows(built_copy)}
    by_author: dict[str, set[str]] = {}
    for doc_id, row in rows.items():
        by_author.setdefault(row["author"], set()).add(before.get(doc_id, "gone"))
    train_author = next(a for a, s in sorted(by_author.items()) if s == {"train"})
    test_doc = next(
        r
        for d, r in sorted(rows.items())
        if before.get(d) == "test" and len(r["body"].split()) > 150
    )
    words = test_doc["body"].split()
    for i in range(5, len(words), 30):  # a few words changed: similar, not a duplicate
        words[i] = "zebra"
    body = " ".join(words)
    assert 0.6 <= jaccard(body, test_doc["body"]) < 0.8
    bridge = {**test_doc, "id": "web-bridge-1", "author": train_author, "body": body}
    append(built_copy, "crawl-3.jsonl", [bridge])

    report = build(built_copy)

    assert report.ok, report.render()
    after = split_rows(built_copy)
    assert {d: s for d, s in before.items() if after.get(d) != s} == {}
    assert "web-bridge-1" not in after
    assert dropped(built_copy)["web-bridge-1"] == "bridge"
    assert report.materialized[SPLIT_DOCUMENTS]["dropped"]["bridge"] >= 1
    assert report.check("no_held_out_row_moved_into_train").passed


def dedup_kept(root: Path) -> dict[str, str]:
    """doc_id -> cluster id of every row the published dedup snapshot kept."""
    kept = {}
    for path in sorted((root / "data" / "deduplicated_documents").glob("part-*.parquet")):
        table = pq.read_table(path, columns=["doc_id", "cluster_id"])
        kept.update(zip(table["doc_id"].to_pylist(), table["cluster_id"].to_pylist(), strict=True))
    return kept


def memberships(root: Path) -> dict[str, dict]:
    folder = root / "data" / "deduplicated_documents" / "clusters"
    return {
        row["doc_id"]: row
        for path in sorted(folder.glob("*.parquet"))
        for row in pq.read_table(path).to_pylist()
    }


def as_raw(rows: list[dict]) -> list[dict]:
    """Rows as written to a raw file: without the test's own ``_of`` field."""
    return [{k: v for k, v in r.items() if k != "_of"} for r in rows]


def copies_of_published_rows(root: Path, count: int) -> list[dict]:
    """Exact copies of published kept web rows, by new authors, under ids that sort before
    every published id: a build from scratch would keep the copies (equal quality, smaller id)."""
    kept = dedup_kept(root)
    web = [r for r in raw_web_rows(root) if r["id"] in kept]
    originals = random.Random(11).sample(web, count)
    return [
        {**row, "id": f"a-copy-{i}", "author": f"copy-author-{i}", "_of": row["id"]}
        for i, row in enumerate(originals)
    ]


def test_a_new_near_duplicate_of_a_published_row_is_the_one_dropped(built_copy) -> None:
    kept_before, split_before = dedup_kept(built_copy), split_rows(built_copy)
    copies = copies_of_published_rows(built_copy, 5)
    append(built_copy, "crawl-copies.jsonl", as_raw(copies))
    report = build(built_copy)
    assert report.ok, report.render()
    kept_after = dedup_kept(built_copy)
    assert {d: kept_after.get(d) for d in kept_before} == kept_before  # kept, same cluster ids
    members = memberships(built_copy)
    for copy in copies:
        assert copy["id"] not in kept_after
        member = members[copy["id"]]
        assert not member["kept"] and member["representative"] == copy["_of"]
        assert member["cluster_id"] == kept_before[copy["_of"]]
        assert (
            jaccard(
                copy["body"],
                next(r["body"] for r in raw_web_rows(built_copy) if r["id"] == copy["_of"]),
            )
            == 1.0
        )
    after = split_rows(built_copy)
    assert {d: after.get(d) for d in split_before} == split_before
    first, latest = (
        list_snapshots(built_copy, "raw_documents")[0],
        list_snapshots(built_copy, "raw_documents")[-1],
    )
    assert first["snapshot_id"] != latest["snapshot_id"]
    assert (
        f"arrived in batch web/crawl-copies.jsonl: first published in raw_documents "
        f"{latest['snapshot_id']}" in trace(built_copy, copies[0]["id"])
    )
    assert (
        f"arrived in batch web/crawl-0.jsonl: first published in raw_documents "
        f"{first['snapshot_id']}" in trace(built_copy, copies[0]["_of"])
    )
    assert_replays(built_copy, "deduplicated_documents", "split_documents")


def assert_replays(root: Path, *anchored: str) -> None:
    """The published chain, built after an append from the snapshots published before it,
    replays byte for byte: the replay restores those snapshots first (``anchored_to``)."""
    shards = current_snapshot(root, root / "data" / "training_shards")
    chain = {r["asset"]: r for r in list_snapshots(root)}
    for asset in anchored:
        assert chain[asset]["counts"].get("anchored_to"), asset
    report = replay(root, shards)
    assert report.ok, report.render()


def test_a_full_build_after_an_append_equals_a_build_from_scratch(built_copy, tmp_path) -> None:
    copies = copies_of_published_rows(built_copy, 5)
    append(built_copy, "crawl-copies.jsonl", as_raw(copies))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copytree(built_copy / "data" / "raw", fresh / "data" / "raw")
    shutil.copytree(built_copy / "data" / "eval", fresh / "data" / "eval")
    shutil.copy(built_copy / "corpus.yaml", fresh / "corpus.yaml")
    scratch_report = build(fresh, assets=UP_TO_DEDUP)
    assert scratch_report.ok, scratch_report.render()
    full = run_build(
        built_copy, instance=dg.DagsterInstance.ephemeral(), assets=UP_TO_DEDUP, full=True
    )
    assert full.ok, full.render()
    dedup = Path("data") / "deduplicated_documents"
    assert tree_digest(built_copy / dedup) == tree_digest(fresh / dedup)
    assert {c["id"] for c in copies} <= set(dedup_kept(built_copy))  # from scratch: copies kept


def normalized_values(root: Path) -> dict[str, tuple]:
    """doc_id -> (split, normalized clicks, normalized dwell_seconds) of the published rows."""
    out = {}
    for name in SPLITS:
        for path in sorted((root / "data" / "normalized_splits" / name).glob("part-*.parquet")):
            table = pq.read_table(path, columns=["doc_id", "clicks", "dwell_seconds"])
            for row in table.to_pylist():
                out[row["doc_id"]] = (name, row["clicks"], row["dwell_seconds"])
    return out


def new_authors_rows(root: Path, count: int, scale: float = 1.0) -> list[dict]:
    """New documents by new authors (their words shuffled: no similar pair), features scaled."""
    rng = random.Random(5)
    web = raw_web_rows(root)
    rows = []
    for i, row in enumerate(rng.sample(web, count)):
        words = row["body"].split()
        rng.shuffle(words)
        rows.append(
            {
                **row,
                "id": f"web-later-{i}",
                "author": f"later-author-{i}",
                "body": " ".join(words),
                "clicks": row["clicks"] * scale,
            }
        )
    return rows


def test_an_append_keeps_the_fit_and_every_published_normalized_value(built_copy) -> None:
    stats = built_copy / "data" / "fitted_statistics"
    fit_before = tree_digest(stats)
    values_before = normalized_values(built_copy)
    append(built_copy, "crawl-later.jsonl", new_authors_rows(built_copy, 40))
    report = build(built_copy)
    assert report.ok, report.render()
    assert tree_digest(stats) == fit_before  # the fit and its rows, byte for byte
    after = normalized_values(built_copy)
    assert {d: after[d] for d in values_before} == values_before
    assert len(after) > len(values_before)
    assert report.check("fitted_on_exactly_train").label == "PASS"
    drift = report.check("train_drift_within_thresholds")
    assert drift.label in ("PASS", "WARN") and "train rows added since the fit" in drift.verdict
    assert_replays(built_copy, "fitted_statistics", "split_documents")

    set_config(built_copy, statistics={"epoch": 1})  # a new epoch refits on the whole train split
    report = build(built_copy)
    assert report.ok, report.render()
    assert tree_digest(stats) != fit_before
    assert report.check("train_drift_within_thresholds").label == "n/a"


def test_drift_warns_without_blocking_and_blocks_above_its_second_threshold(built_copy) -> None:
    append(built_copy, "crawl-drift.jsonl", new_authors_rows(built_copy, 60, scale=50.0))
    downstream = ["fitted_statistics", "normalized_splits", "training_mix", "training_shards"]
    before = {name: tree_digest(built_copy / "data" / name) for name in downstream}
    set_config(built_copy, statistics={"drift_block": 0.5})
    blocked = build(built_copy)
    assert not blocked.ok
    failed = [c for c in blocked.checks if c.label == "FAIL"]
    assert [(c.asset, c.name) for c in failed] == [
        ("fitted_statistics", "train_drift_within_thresholds")
    ], blocked.render()
    assert "(clicks)" in failed[0].verdict
    assert {name: tree_digest(built_copy / "data" / name) for name in downstream} == before
    set_config(built_copy, statistics={"drift_block": None})
    warned = build(built_copy)
    assert warned.ok, warned.render()  # a warning never blocks
    check = warned.check("train_drift_within_thresholds")
    assert check.label == "WARN" and "(clicks)" in check.verdict
    assert "WARN fitted_statistics.train_drift_within_thresholds" in warned.render()
