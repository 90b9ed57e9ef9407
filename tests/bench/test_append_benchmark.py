"""The append benchmark's pure helpers (bench/append_benchmark.py): its section, what a build
wrote (from inventories of data/), where the section goes in BENCHMARKS.md, and the edited
copies of append B. Nothing is built."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from append_benchmark import (  # noqa: E402
    BEGIN,
    BUILT,
    END,
    MANIFESTS,
    POINTERS,
    copy_project,
    edit_copy,
    folder_bytes,
    inventory,
    put_section,
    render,
    written_files,
)
from webcorpus import WebCorpus, jaccard, shingle_set  # noqa: E402

MB = 1_000_000


def written(total: int, per_stage: int, manifests: int, rewritten: int = 0) -> dict:
    """What a build wrote, as timed_build records it: ``per_stage`` bytes in each stage's data
    files, ``manifests`` bytes of manifests and card, ``rewritten`` published files."""
    groups = {s: {"files": 10, "bytes": per_stage} for s in BUILT}
    groups[MANIFESTS] = {"files": 9, "bytes": manifests}
    groups[POINTERS] = {"files": 8, "bytes": 800}
    names = [f"fitted_statistics/fitted_ids/part-{i:05d}.parquet" for i in range(rewritten)]
    return {
        "files": 97,
        "bytes": total,
        "groups": groups,
        "rewritten": {"files": rewritten, "bytes": 2000 * rewritten, "names": names[:5]},
        "dvc_cache": [100 * MB, 100 * MB + total],
        "dvc_remote": [None, None],
    }


def build(seconds: list[float], load: float, wrote: dict | None = None, **counts: dict) -> dict:
    """A build's result as timed_build returns it."""
    return {
        "ok": True,
        "failures": [],
        "total": sum(seconds) + 1.0,
        "seconds": dict(zip(BUILT, seconds, strict=True)),
        "counts": counts,
        "load": [[load, 0.5, 0.5], [2.0, 1.0, 0.5]],
        "written": wrote or written(800 * MB, 100 * MB, 50_000),
    }


def appended(generation: int, index: float, joined: int) -> dict:
    """The counts of the stages an append builds (a few keys each), as _build_child keeps them."""
    grown = {"kind": "append", "generation": generation, "reason": "1 new raw batch"}
    return {
        "raw_documents": {"batches_read": 1, "batches_kept": 10},
        "deduplicated_documents": {
            "build": grown,
            "rows_in": 1100,
            "rows": 1050,
            "index_bytes_per_row": index,
            "rows_joining_published_clusters": joined,
            "new_clusters": 4,
        },
        "split_documents": {
            "build": grown,
            "rows": 1047,
            "dropped": {"bridge": 3},
            "append_components": {"new_components": 40, "joined_published_components": 5}
            | {"bridging_components": 2},
        },
        "fitted_statistics": {"fit": "kept from the published snapshot"},
        "normalized_splits": {"build": grown, "rows": 1047},
        "training_mix": {
            "build": grown,
            "rows": 700,
            "drawn_per_source": {"web": 700},
            "new_generation_drawn_per_source": {"web": 60, "news": 10},
        },
        "training_shards": {"build": grown, "shards": 5, "rows": 700, "generations": 2},
    }


def fake_run(load: float = 0.2, append_f1: float = 0.99, index: float = 310.5) -> dict:
    """A finished run's plain results: base 200 s (100 s through split_documents), append A
    30 s (15 s), append B 60 s (30 s); append A wrote 12 MB of which 40 kB manifests and card."""
    first = {"kind": "from scratch", "generation": 0, "reason": "a first build"}
    base_counts = {
        "raw_documents": {"batches_read": 10},
        "deduplicated_documents": {"build": first, "index_bytes_per_row": 305.0},
        "split_documents": {"build": first, "rows": 990, "dropped": {}},
        "fitted_statistics": {"fit": "fitted on the train split (no published fit)"},
        "training_shards": {"build": first, "shards": 3, "generations": 1},
    }
    return {
        "args": {"docs": 1000, "append": 100, "out": "BENCHMARKS.md", "seed": 3, "files": 10}
        | {"workers": 2},
        "date": "2026-11-25",
        "machine": "a test machine",
        "megabytes": 7.5,
        "exact": 25,
        "edited": [0.5, 0.85, 1.0],
        "shards": 8,
        "threshold": 0.8,
        "dvc_cache_type": "hardlink,copy",
        "builds": {
            "base": build([10.0, 70.0, 15.0, 5.0, 20.0, 10.0, 40.0, 30.0], load, **base_counts),
            "append A": build(
                [2.0, 5.0, 6.0, 2.0, 3.0, 2.0, 6.0, 4.0],
                load,
                written(12 * MB, MB, 40_000),
                **appended(1, index, 7),
            ),
            "append B": build(
                [4.0, 10.0, 12.0, 4.0, 6.0, 4.0, 10.0, 10.0],
                load,
                written(9 * MB, MB, 40_000),
                **appended(1, 312.0, 95),
            ),
        },
        "scratch": build([10.0, 70.0, 15.0, 5.0, 20.0, 10.0, 40.0, 30.0], load),
        "quality": {
            "append": {"precision": 1.0, "recall": append_f1, "f1": append_f1},
            "scratch": {"precision": 1.0, "recall": 0.99, "f1": 0.99},
            "same_kept": True,
        },
    }


def test_section_reports_per_stage_ratios_f1_and_batches() -> None:
    text = render(fake_run())
    assert text.startswith(BEGIN) and text.endswith(END)
    assert "--docs 1000 --append 100 --out BENCHMARKS.md" in text
    assert "| filtered_documents | 70.0 | 5.0 | 7% | 10.0 | 14% |" in text
    assert "| training_mix | 40.0 | 6.0 | 15% | 10.0 | 25% |" in text
    assert "| **through split_documents (four stages)** | 100.0 | 15.0 | 15% | 30.0 | 30% |" in text
    assert "| **the whole graph (eight stages)** | 200.0 | 30.0 | 15% | 60.0 | 30% |" in text
    assert "| raw_documents | batches read / kept as published | 10 / ? | 1 / 10 | 1 / 10 |" in text
    assert "append A took **15%** of the base build's time through split_documents" in text
    assert "through split_documents (goal: at most 20%: met); append B 30%" in text
    assert "append A took **15%** of the base build's time for the whole graph" in text
    assert "for the whole graph (goal: at most 20%: met); append B 30%" in text
    assert "gives the same F1 as a build from scratch" in text
    assert "not persisted yet" not in text
    assert "Other work was running" not in text  # load 0.2 at every start


def test_section_reports_what_each_append_did_per_stage() -> None:
    text = render(fake_run())
    first, grown = "from scratch, generation 0 (a first build)", "append, generation 1"
    assert f"| deduplicated_documents | build | {first} | {grown} | {grown} |" in text
    assert f"| training_shards | build | {first} | {grown} | {grown} |" in text
    assert "| deduplicated_documents | rows in / out (every row) | ? / ? | 1,100 / 1,050 |" in text
    assert "| new rows joining published clusters / new clusters | ? / ? | 7 / 4 | 95 / 4 |" in text
    assert "| split_documents | rows dropped as bridges (every generation) | 0 | 3 | 3 |" in text
    assert "published / bridging | - | 40 / 5 / 2 | 40 / 5 / 2 |" in text
    fitted = "fitted anew (no published fit)"
    assert f"| fitted_statistics | fit: kept, or fitted anew | {fitted} | kept | kept |" in text
    assert "| training_mix | rows drawn from the new generation | ? | 70 | 70 |" in text
    assert "| training_shards | shards / generations | 3 / 1 | 5 / 2 | 5 / 2 |" in text


def test_section_reports_bytes_written_and_the_index_per_document() -> None:
    text = render(fake_run())
    assert "| **under data/, in all** | 800.0 MB (97 files) | 12.0 MB (97 files) |" in text
    assert "| split_documents data files | 100.0 MB (10 files) | 1.0 MB (10 files) |" in text
    assert "| manifests and card | 50.0 kB (9 files) | 40.0 kB (9 files) | 40.0 kB" in text
    assert "| **published data files rewritten** | none | none | none |" in text
    assert "| DVC cache (`.dvc/cache`) | +800.0 MB (100.0 MB -> 900.0 MB) |" in text
    assert "| DVC remote (`.dvc-storage`) | - | - | - |" in text
    assert "other files under data/" not in text  # no build wrote any
    assert "Append A wrote 12.0 MB under data/ (40.0 kB of it manifests and card) and " in text
    assert "rewrote no published data file; append B wrote 9.0 MB" in text
    assert "(goal: the new data and the manifests only: met)" in text
    assert "base **305.0**, after append A **310.5**, after append B **312.0**" in text
    assert "(goal: at most 1 KB: met)" in text
    assert "DVC `cache.type`: hardlink,copy." in text


def test_section_says_when_the_goals_are_missed_the_f1_differs_and_load_was_high() -> None:
    run = fake_run(load=1.7, append_f1=0.97, index=1500.0)
    run["builds"]["append A"]["seconds"]["filtered_documents"] = 50.0  # 60% through the split
    run["builds"]["append B"]["written"] = written(9 * MB, MB, 40_000, rewritten=7)
    run["dvc_cache_type"] = "reflink,hardlink,copy"
    text = render(run)
    assert "through split_documents (goal: at most 20%: not met)" in text
    assert "append A took **60%** of the base build's time through split_documents" in text
    assert "for the whole graph (goal: at most 20%: not met)" in text
    assert "(goal: at most 1 KB: not met)" in text
    assert "| **published data files rewritten** | none | none | 7 files (14.0 kB) |" in text
    assert (
        "append B wrote 9.0 MB under data/ (40.0 kB of it manifests and card) and rewrote 7" in text
    )
    assert "(goal: the new data and the manifests only: not met)" in text
    assert "append B: `fitted_statistics/fitted_ids/part-00000.parquet`" in text
    assert "and 2 more." in text
    assert "every relinked file has a new inode" in text
    assert "differs from a build from scratch by -0.0200 F1" in text
    assert "Other work was running" in text and "base, append A, append B, scratch" in text


def test_only_the_whole_graph_goal_missed() -> None:
    run = fake_run()
    run["builds"]["append A"]["seconds"]["training_mix"] = 30.0  # 54 s of 200
    text = render(run)
    assert "through split_documents (goal: at most 20%: met)" in text
    assert "| **the whole graph (eight stages)** | 200.0 | 54.0 | 27% | 60.0 | 30% |" in text
    assert "for the whole graph (goal: at most 20%: not met)" in text


def test_written_files_counts_new_inodes_and_rewritten_published_files(tmp_path: Path) -> None:
    data = tmp_path / "project" / "data"
    published = data / "split_documents" / "train" / "part-00000.parquet"
    published.mkdir(parents=True)
    (published / "g00000.parquet").write_bytes(b"x" * 100)
    (data / "split_documents" / "_manifest.json").write_text("{}")
    (data / "fitted_statistics").mkdir()
    (data / "fitted_statistics" / "statistics.json").write_text("{" + " " * 48 + "}")
    (data / "split_documents.dvc").write_text("outs: []\n")
    before = inventory(data)
    # an append: a hard link of the published generation into the new snapshot, a new
    # generation, a new manifest and pointer, and a published file copied (a rewrite)
    staging = data / ".staging-split_documents" / "train" / "part-00000.parquet"
    staging.mkdir(parents=True)
    os.link(published / "g00000.parquet", staging / "g00000.parquet")
    (staging / "g00001.parquet").write_bytes(b"y" * 30)
    (data / ".staging-split_documents" / "_manifest.json").write_text('{"rows": 1}')
    (data / "split_documents").rename(tmp_path / "old")
    (data / ".staging-split_documents").rename(data / "split_documents")
    (data / "split_documents.dvc").unlink()
    (data / "split_documents.dvc").write_text("outs: [x]\n")
    statistics = data / "fitted_statistics" / "statistics.json"
    statistics.rename(tmp_path / "statistics.json")
    statistics.write_text("{" + " " * 48 + "}")
    (data / "linked").symlink_to(tmp_path / "old")  # a symlink is not followed
    found = written_files(before, inventory(data))
    assert found["groups"]["split_documents"] == {"files": 1, "bytes": 30}
    assert found["groups"][MANIFESTS] == {"files": 1, "bytes": 11}
    assert found["groups"][POINTERS]["files"] == 1
    assert found["groups"]["fitted_statistics"] == {"files": 1, "bytes": 50}
    assert found["files"] == 4 and found["bytes"] == 30 + 11 + 50 + 10
    assert found["rewritten"] == {
        "files": 1,
        "bytes": 50,
        "names": ["fitted_statistics/statistics.json"],
    }
    assert folder_bytes(data / "split_documents") == 141
    assert folder_bytes(tmp_path / "absent") is None


def test_a_copied_project_keeps_its_hard_links(tmp_path: Path) -> None:
    source = tmp_path / "base"
    (source / ".dvc" / "cache").mkdir(parents=True)
    (source / "data").mkdir()
    (source / ".dvc" / "cache" / "ab12").write_text("rows")
    os.link(source / ".dvc" / "cache" / "ab12", source / "data" / "rows.parquet")
    copy_project(source, tmp_path / "copy")
    cached = (tmp_path / "copy" / ".dvc" / "cache" / "ab12").stat()
    linked = (tmp_path / "copy" / "data" / "rows.parquet").stat()
    assert cached.st_ino == linked.st_ino != (source / "data" / "rows.parquet").stat().st_ino
    assert linked.st_mtime_ns == (source / "data" / "rows.parquet").stat().st_mtime_ns


def test_section_is_appended_once_then_replaced_in_place() -> None:
    others = "<!-- bench:begin -->\n# Benchmarks\n<!-- bench:end -->\n"
    first = put_section(others, f"{BEGIN}\nold\n{END}")
    assert first == others + f"\n{BEGIN}\nold\n{END}\n"
    later = first + "\n<!-- langid:begin -->\nlangid\n<!-- langid:end -->\n"
    second = put_section(later, f"{BEGIN}\nnew\n{END}")
    assert second == later.replace("\nold\n", "\nnew\n")
    assert put_section("", f"{BEGIN}\nx\n{END}") == f"{BEGIN}\nx\n{END}\n"


def test_edited_copies_hit_their_target_jaccard_and_keep_the_layout() -> None:
    rng = np.random.default_rng(1)
    for doc in WebCorpus(5, track_truth=False).documents(5):
        for target in (0.5, 0.8, 0.95):
            copy = edit_copy(doc.text, target, rng)
            assert abs(jaccard(shingle_set(doc.text), shingle_set(copy)) - target) < 0.05
            assert [len(w) > 0 for w in copy.split()] == [True] * len(doc.text.split())
            assert copy.count("\n") == doc.text.count("\n")


def test_a_file_relinked_to_identical_bytes_is_not_a_rewrite(tmp_path: Path) -> None:
    """DVC links identical files (eight empty shards) to one cache object, so a published file
    may get a new inode without a byte changing: the snapshots' MD5s before and after decide."""
    data = tmp_path / "data"
    (data / "split_documents").mkdir(parents=True)
    for name in ("a.parquet", "b.parquet"):
        (data / "split_documents" / name).write_bytes(b"empty")
    before = inventory(data)
    relinked = data / "split_documents" / "b.parquet"
    relinked.unlink()
    os.link(data / "split_documents" / "a.parquet", relinked)
    same = {"split_documents/a.parquet": "m1", "split_documents/b.parquet": "m1"}
    assert written_files(before, inventory(data), (same, same))["rewritten"]["files"] == 0
    changed = {**same, "split_documents/b.parquet": "m2"}
    assert written_files(before, inventory(data), (same, changed))["rewritten"]["files"] == 1
    assert written_files(before, inventory(data))["rewritten"]["files"] == 1  # no MD5s: counted
