r"""The benchmark-overlap check's own count against the mix stage's decontamination kernel, in
one process on the benchmark corpus.

    .venv/bin/python bench/overlap_check.py --docs 8000 --repeat 3

The evaluation set is built as ``run_benchmarks.py`` builds it (500 fresh 40-word passages from
another seed's documents, 20 copied from the corpus's first documents); the training texts are
the corpus's first ``--docs`` documents. Timed, best of ``--repeat``: the kernel
(``EvalNgrams.of`` and ``contaminating_sets_of``) and the check's count (``EvalWindows.of`` and
``shared_sets``, a batch of texts at a time). Both must name the same sets for every text, or
the script fails.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from webcorpus import WebCorpus, words_of

from corpus_platform.kernels.mixing.decontam import EvalNgrams, contaminating_sets_of
from corpus_platform.kernels.mixing.overlap_audit import EvalWindows

NGRAM = 13


def eval_passages(seed: int) -> list[str]:
    """run_benchmarks.write_eval_set's passages, in memory."""
    passages = []
    for corpus_seed, count in ((seed + 1_000, 500), (seed, 20)):
        for doc in WebCorpus(corpus_seed, track_truth=False).documents(count):
            passages.append(" ".join(words_of(doc.text)[100:140]))
    return passages


def best_seconds(run: Callable[[], list[list[str]]], repeat: int) -> tuple[float, list[list[str]]]:
    """The fastest of ``repeat`` calls of ``run`` and its last result."""
    best, result = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    evals = {"benchmark": eval_passages(args.seed)}
    texts: list[str | None] = [
        d.text for d in WebCorpus(args.seed, track_truth=False).documents(args.docs)
    ]

    def kernel() -> list[list[str]]:
        return contaminating_sets_of(texts, EvalNgrams.of(evals, NGRAM), NGRAM)

    def check() -> list[list[str]]:
        windows = EvalWindows.of(evals, NGRAM)
        return [list(names) for names in windows.shared_sets(texts)]

    kernel_s, found = best_seconds(kernel, args.repeat)
    check_s, counted = best_seconds(check, args.repeat)
    if counted != found:
        raise SystemExit("the check's count and the kernel disagree")
    hits = sum(map(bool, counted))
    print(f"{args.docs:,} documents, {hits} contaminated by both")
    print(f"kernel: {kernel_s:.2f} s ({args.docs / kernel_s:,.0f} docs/s)")
    print(f"check's count: {check_s:.2f} s ({args.docs / check_s:,.0f} docs/s)")
    print(f"ratio: {check_s / kernel_s:.2f}x")


if __name__ == "__main__":
    main()
