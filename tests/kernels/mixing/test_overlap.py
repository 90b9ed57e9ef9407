"""The benchmark-overlap check's own count: word windows compared as strings, never hashed."""

import random
from pathlib import Path

import pyarrow as pa

from corpus_platform.base.hashing import TextNormalization
from corpus_platform.base.shards import part_path, write_parquet
from corpus_platform.kernels.mixing.decontam import EvalNgrams, contaminating_sets_of
from corpus_platform.kernels.mixing.overlap_audit import EvalWindows, overlap_report, windows_of

SHARDS = 2
BENCHMARK = "the quick brown fox jumps over the lazy dog near the quiet river bank today"
DOCS = Path("/usr/share/doc")


def test_overlap_report_finds_a_row_holding_benchmark_text(tmp_path: Path) -> None:
    texts = ["an unrelated sentence about something else entirely " * 3, f"intro {BENCHMARK} end"]
    for shard in range(SHARDS):
        table = pa.table({"doc_id": [f"d{shard}"], "text": [texts[shard]]})
        write_parquet(table, part_path(tmp_path, shard))
    windows = EvalWindows.of({"bench": [BENCHMARK], "other": []}, 13)
    report = overlap_report(tmp_path, SHARDS, windows)
    assert (report.rows, report.contaminated) == (2, 1)
    assert report.hits == {"bench": 1, "other": 0} and report.examples == ("d1: bench",)


def test_windows_follow_the_definition() -> None:
    windows = EvalWindows.of({"b": [BENCHMARK, "Short, text!"]}, 13)
    words = BENCHMARK.split()
    assert len(windows.holders) == len(words) - 12 + 1
    assert windows.sets_sharing("x " + " ".join(words[1:14]).upper() + ", y") == ("b",)
    assert windows.sets_sharing(" ".join(words[1:13])) == ()  # 12 words: one window, not held
    assert windows.sets_sharing("short text") == ("b",)  # a short text is one whole window
    assert windows.sets_sharing("more short text") == ()
    assert windows.sets_sharing(None) == () and windows_of([], 3) == []
    assert windows_of(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]


def test_the_count_agrees_with_the_mix_kernel_on_random_text() -> None:
    rng = random.Random(11)
    vocabulary = ["the", "of", "Fox", "jumps", "caf\u00e9", "na\u00efve", "x1", "dog", "over"]
    evals = {
        "a": [" ".join(rng.choices(vocabulary[:6], k=rng.randint(1, 30))) for _ in range(20)],
        "b": ["fox jumps", "the of the", "Z"],
    }
    texts: list[str | None] = [None, "", "!!!", "Fox, jumps.", "THE OF THE", "z"]
    texts += [
        " ".join(rng.choices([*vocabulary, "zebra", "-", "\n"], k=rng.randint(0, 40)))
        for _ in range(3_000)
    ]
    plain = TextNormalization(tokens="whitespace")
    # its own spacing kept: a text may begin or end with whitespace (the mix's kernel once
    # counted an empty word there and missed short texts the check finds)
    spaced = TextNormalization(tokens="whitespace", whitespace=False, punctuation=True)
    cases = ((4, TextNormalization()), (4, plain), (4, spaced), (2, plain), (1, plain))
    for n, normalization in cases:
        kernel = contaminating_sets_of(texts, EvalNgrams.of(evals, n, normalization), n)
        windows = EvalWindows.of(evals, n, normalization)
        counted = [list(windows.sets_sharing(text)) for text in texts]
        assert counted == kernel
        assert sum(map(bool, counted)) > 500 and sum(not c for c in counted) > 100


def test_the_count_agrees_with_the_mix_kernel_on_debian_text() -> None:
    """Copyright files share whole licence paragraphs: real 13-word overlaps, in real
    punctuation, case and line breaks."""
    files = sorted(DOCS.glob("*/copyright"))[:120]
    texts = [f.read_bytes().decode("utf-8", "replace") for f in files]
    assert len(texts) >= 40
    passage = " ".join(texts[30].split()[-40:])  # a copied passage: at least one row holds it
    evals = {"licences": [*texts[:10], passage], "none": ["words no copyright file holds"]}
    trained = [*texts[10:], "a row that shares nothing"]
    kernel = contaminating_sets_of(trained, EvalNgrams.of(evals, 13), 13)
    windows = EvalWindows.of(evals, 13)
    counted = [list(windows.sets_sharing(text)) for text in trained]
    assert counted == kernel
    assert counted[20] == ["licences"] and counted[-1] == []
