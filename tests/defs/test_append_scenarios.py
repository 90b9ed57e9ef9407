"""The append scenarios of the docs, on the built sample.

1. A new raw file of 320 documents (9% more: 300 by new authors, 20 by known ones): every stage
   appends a generation (the statistics fit is kept), does only the new batch's work, and
   leaves every published file byte-identical but the manifests and the dataset card; no
   published row moves.
2. A leak planted in an appended generation (a new row moved into the other side of its
   entity, a bridging row moved into train): the checks that look only at what the append
   touches give the verdicts and name the offenders of the checks that look at every row.
3. An appended snapshot replays byte for byte from a fresh clone (pointers, registry, config and
   the DVC remote: no data, no cache).
"""

import hashlib
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import generation_path
from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    FITTED_STATISTICS,
    NORMALIZED_SPLITS,
    RAW_DOCUMENTS,
    SIMILAR_PAIRS,
    SPLIT_DOCUMENTS,
    STAGES,
    TRAINING_MIX,
    TRAINING_SHARDS,
    batch_key,
)
from corpus_platform.base.shards import read_json, read_parquet, write_parquet
from corpus_platform.config import load_config
from corpus_platform.defs.checks import run_check
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.checks import (
    held_out_sample_has_no_train_neighbour,
    no_cluster_in_two_splits,
    no_entity_in_two_splits,
    no_held_out_row_moved_into_train,
    no_train_neighbour_of_held_out_rows,
)
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.crossing import crossing_keys
from corpus_platform.kernels.splitting.leakage import crossing_pairs, held_out_neighbours
from corpus_platform.store.datasets import stage_path
from corpus_platform.store.snapshots import current_snapshot
from tests.conftest import build, corpus_cli
from tests.defs.test_append import (
    append,
    as_raw,
    copies_of_published_rows,
    dropped,
    jaccard,
    new_authors_rows,
    raw_web_rows,
    split_rows,
)
from tests.end_to_end.test_s3 import fresh_clone

UP_TO_SPLIT = [RAW_DOCUMENTS, FILTERED_DOCUMENTS, DEDUPLICATED_DOCUMENTS, SPLIT_DOCUMENTS]
APPENDING = [
    DEDUPLICATED_DOCUMENTS,
    SPLIT_DOCUMENTS,
    NORMALIZED_SPLITS,
    TRAINING_MIX,
    TRAINING_SHARDS,
]
MANIFEST = "_manifest.json"
SHARDS = 8


def digests(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file of every stage."""
    return {
        f"{stage}/{p.relative_to(root / 'data' / stage).as_posix()}": hashlib.sha256(
            p.read_bytes()
        ).hexdigest()
        for stage in STAGES
        for p in sorted((root / "data" / stage).rglob("*"))
        if p.is_file()
    }


def known_author_rows(root: Path, count: int) -> list[dict]:
    """New documents by authors the split has placed (words shuffled: no similar pair)."""
    placed = split_rows(root)
    rng = random.Random(9)
    rows = []
    for i, row in enumerate(
        rng.sample([r for r in raw_web_rows(root) if r["id"] in placed], count)
    ):
        words = row["body"].split()
        rng.shuffle(words)
        rows.append({**row, "id": f"web-known-{i}", "body": " ".join(words)})
    return rows


def rewritten(name: str) -> bool:
    """Files an append writes anew: each stage's manifest, the shards' manifest and card."""
    stage, _, rest = name.partition("/")
    if rest == MANIFEST:
        return True
    return stage == TRAINING_SHARDS and rest.startswith(("manifest.json", "README.md", "card/"))


def test_a_nine_percent_append_does_only_the_new_batchs_work(built_copy: Path) -> None:
    before, placed = digests(built_copy), split_rows(built_copy)
    rows = new_authors_rows(built_copy, 300) + known_author_rows(built_copy, 20)
    append(built_copy, "crawl-2.jsonl", rows)

    report = build(built_copy)

    assert report.ok, report.render()
    raw, filtered = report.materialized[RAW_DOCUMENTS], report.materialized[FILTERED_DOCUMENTS]
    assert (raw["batches_read"], raw["batches_kept"]) == (1, 4)
    assert (filtered["batches_filtered"], filtered["batches_kept"]) == (1, 4)
    for stage in APPENDING:
        built = report.materialized[stage]["build"]
        assert (built["kind"], built["generation"]) == ("append", 1), built
    assert report.materialized[FITTED_STATISTICS]["fit"].startswith("kept")
    after = digests(built_copy)
    changed = sorted(name for name, digest in before.items() if after.get(name) != digest)
    assert changed and all(rewritten(name) for name in changed), changed
    assert not any(name.startswith(FITTED_STATISTICS) for name in changed)  # the fit is kept
    key = batch_key("web/crawl-2.jsonl")
    added = sorted(set(after) - set(before) - set(changed))
    new_shards = {
        e["name"]
        for e in read_json(built_copy / "data" / TRAINING_SHARDS / "manifest.json")["shards"]
        if e["generation"] == 1
    }
    assert (
        new_shards
        and added
        and all(
            (name.startswith((RAW_DOCUMENTS, FILTERED_DOCUMENTS)) and key in name)
            or name.endswith("/g00001.parquet")
            or name.removeprefix(f"{TRAINING_SHARDS}/") in new_shards
            for name in added
        )
    ), added
    now = split_rows(built_copy)
    assert {d: now.get(d) for d in placed} == placed  # no published row moved
    author_of = {r["id"]: r["author"] for r in raw_web_rows(built_copy)}
    split_of_author = {author_of[d]: s for d, s in placed.items() if d in author_of}
    known = [r for r in rows if r["id"].startswith("web-known-") and r["id"] in now]
    assert len(known) >= 15
    for row in known:  # a known author's new row goes where the author's rows are
        assert now[row["id"]] == split_of_author[row["author"]], row["id"]
    assert report.check("no_held_out_row_moved_into_train").passed
    # 300 new web documents shift the mix's shares: drawn at the epoch's rates, it warns
    mix = report.check("mix_proportions_within_tolerance")
    assert mix.label in ("PASS", "WARN") and "generation 1" in mix.verdict, mix.verdict


def move_row(candidate: Path, doc_id: str, source: str, target: str) -> None:
    """Move one row of generation 1 from ``source`` to ``target`` in a split candidate."""
    for shard in range(SHARDS):
        path = generation_path(candidate / source, shard, 1)
        table = read_parquet(path)
        if doc_id not in table.column("doc_id").to_pylist():
            continue
        row = table.filter(pc.equal(table.column("doc_id"), doc_id))
        path.unlink()
        write_parquet(table.filter(pc.not_equal(table.column("doc_id"), doc_id)), path)
        into = generation_path(candidate / target, shard, 1)
        there = read_parquet(into)
        into.unlink()
        write_parquet(pa.concat_tables([there, row.select(there.column_names)]), into)
        return
    raise AssertionError(f"{doc_id} not in {source}")


def bridge_row(root: Path) -> dict:
    """A document by an author of train only, carrying a test document's text with a few words
    changed (word 5-gram Jaccard 0.6 to 0.8): the split drops it as a bridge."""
    placed, rows = split_rows(root), {r["id"]: r for r in raw_web_rows(root)}
    sides: dict[str, set[str]] = {}
    for doc_id, row in rows.items():
        sides.setdefault(row["author"], set()).add(placed.get(doc_id, "gone"))
    author = next(a for a, s in sorted(sides.items()) if s == {"train"})
    test_doc = next(
        r
        for d, r in sorted(rows.items())
        if placed.get(d) == "test" and len(r["body"].split()) > 150
    )
    words = test_doc["body"].split()
    for i in range(5, len(words), 30):
        words[i] = "zebra"
    body = " ".join(words)
    assert 0.6 <= jaccard(body, test_doc["body"]) < 0.8
    return {**test_doc, "id": "web-bridge-1", "author": author, "body": body}


def test_a_leak_planted_in_an_append_gets_the_full_checks_verdict(
    built_copy: Path, tmp_path: Path
) -> None:
    split = built_copy / "data" / SPLIT_DOCUMENTS
    published = tmp_path / "published"
    shutil.copytree(split, published)
    known = known_author_rows(built_copy, 10)
    append(built_copy, "crawl-3.jsonl", [bridge_row(built_copy), *known])
    report = build(built_copy, assets=UP_TO_SPLIT)
    assert report.ok, report.render()
    assert dropped(built_copy)["web-bridge-1"] == "bridge"
    now = split_rows(built_copy)
    moved = next(r["id"] for r in known if now.get(r["id"]) == "train")
    candidate = tmp_path / "candidate"
    shutil.copytree(split, candidate)
    move_row(candidate, "web-bridge-1", "dropped", "train")  # a bridge let into train
    move_row(candidate, moved, "train", "test")  # a known author's new row on the other side
    shutil.rmtree(split)  # the split as published before the append: what its audit compares to
    shutil.copytree(published, split)
    project = CorpusProject(root=str(built_copy))
    config = load_config(built_copy / "corpus.yaml")

    stable = run_check(no_held_out_row_moved_into_train, SPLIT_DOCUMENTS, project, candidate)
    assert stable.passed and "every published file is kept" in stable.metadata()["verdict"]

    entity = run_check(no_entity_in_two_splits, SPLIT_DOCUMENTS, project, candidate)
    full_entities = crossing_keys(candidate, SHARDS, "entity", "entities")
    assert not entity.passed and not full_entities.passed
    assert entity.metadata()["offenders"] == list(full_entities.examples)
    assert "generation 1" in entity.metadata()["scope"]

    clusters = run_check(no_cluster_in_two_splits, SPLIT_DOCUMENTS, project, candidate)
    pairs = read_parquet(built_copy / "data" / DEDUPLICATED_DOCUMENTS / SIMILAR_PAIRS)
    full_pairs = crossing_pairs(candidate, SHARDS, pairs)
    assert not clusters.passed and not full_pairs.passed
    assert clusters.metadata()["pair_offenders"] == list(full_pairs.examples)

    neighbours = run_check(no_train_neighbour_of_held_out_rows, SPLIT_DOCUMENTS, project, candidate)
    params = DedupParams.from_config(config)
    full = held_out_neighbours(
        candidate, SHARDS, params, ("validation", "test"), tmp_path / "scratch", LocalEngine()
    )
    assert not neighbours.passed and full.hits > 0
    assert neighbours.metadata()["offenders"] == list(full.examples)

    recall = run_check(held_out_sample_has_no_train_neighbour, SPLIT_DOCUMENTS, project, candidate)
    assert "generation 1" in recall.metadata()["scope"]


def test_an_appended_snapshot_replays_from_a_fresh_clone(built_copy: Path, tmp_path: Path) -> None:
    rows = known_author_rows(built_copy, 10) + as_raw(copies_of_published_rows(built_copy, 5))
    append(built_copy, "crawl-4.jsonl", rows)
    report = build(built_copy)
    assert report.ok, report.render()
    for stage in APPENDING:
        assert report.materialized[stage]["build"]["kind"] == "append", stage
    clone = fresh_clone(built_copy, tmp_path / "clone")  # pointers, registry, config
    shutil.copytree(built_copy / ".dvc-storage", clone / ".dvc-storage")  # and the remote
    last = current_snapshot(clone, stage_path(clone, TRAINING_SHARDS))

    done = corpus_cli(clone, "replay", last)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: every stage rebuilt byte-identically" in done.stdout
    for stage in STAGES:
        line = next(line for line in done.stdout.splitlines() if line.startswith(f"{stage} "))
        assert line.split()[1:] == [report.materialized[stage]["snapshot_id"], "identical"]
