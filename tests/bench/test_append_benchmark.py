"""The append benchmark's pure helpers (bench/append_benchmark.py): its section, where the
section goes in BENCHMARKS.md, and the edited copies of append B. Nothing is built."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from append_benchmark import BEGIN, BUILT, END, edit_copy, put_section, render  # noqa: E402
from webcorpus import WebCorpus, jaccard, shingle_set  # noqa: E402


def build(seconds: list[float], load: float, **counts: dict) -> dict:
    """A build's result as timed_build returns it."""
    return {
        "ok": True,
        "failures": [],
        "total": sum(seconds) + 1.0,
        "seconds": dict(zip(BUILT, seconds, strict=True)),
        "counts": counts,
        "load": [[load, 0.5, 0.5], [2.0, 1.0, 0.5]],
    }


def fake_run(load: float = 0.2, append_f1: float = 0.99) -> dict:
    """A finished run's plain results: base 100 s, append A 15 s, append B 30 s."""
    raw = {"batches_read": 1, "batches_kept": 10}
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
        "builds": {
            "base": build([10.0, 70.0, 15.0, 5.0], load, raw_documents={"batches_read": 10}),
            "append A": build([2.0, 5.0, 6.0, 2.0], load, raw_documents=raw),
            "append B": build([4.0, 10.0, 12.0, 4.0], load, raw_documents=raw),
        },
        "scratch": build([10.0, 70.0, 15.0, 5.0], load),
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
    assert "| **the four stages, summed** | 100.0 | 15.0 | 15% | 30.0 | 30% |" in text
    assert "| raw_documents | batches read / kept as published | 10 / ? | 1 / 10 | 1 / 10 |" in text
    assert "append A took **15%**" in text and "(goal: at most 20%: met)" in text
    assert "gives the same F1 as a build from scratch" in text
    assert "not persisted yet" in text
    assert "Other work was running" not in text  # load 0.2 at every start


def test_section_says_when_the_goal_is_missed_the_f1_differs_and_load_was_high() -> None:
    run = fake_run(load=1.7, append_f1=0.97)
    run["builds"]["append A"]["seconds"]["filtered_documents"] = 50.0
    text = render(run)
    assert "(goal: at most 20%: not met)" in text
    assert "differs from a build from scratch by -0.0200 F1" in text
    assert "Other work was running" in text and "base, append A, append B, scratch" in text


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
