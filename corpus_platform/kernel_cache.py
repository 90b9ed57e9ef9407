"""Every numba kernel of the project compiled into numba's on-disk cache, in one call.

The compiled kernels (``base/word_kernels.py``, ``base/hash_set_kernel.py``,
``base/split_kernel.py``, ``base/normalize_kernel.py``, ``kernels/dedup/compiled.py``,
``kernels/filtering/compiled.py``, ``kernels/filtering/line_kernel.py``,
``kernels/sharding/compiled.py``, ``kernels/splitting/recall_kernel.py``,
``kernels/statistics/compiled.py``) are compiled the first time a process calls them and kept
in ``__pycache__`` beside their modules (``cache=True``); a later process loads the machine
code. ``make install`` calls :func:`warm`
once, so that no build's worker processes each compile them (seconds of CPU) on first use, and
the benchmarks call it before they time anything. Safe to call again: it then only loads them.
"""

from __future__ import annotations

import pyarrow as pa


def warm() -> None:
    """Compile (or load) every numba kernel by calling it on a tiny input."""
    from corpus_platform.base.hashing import content_hashes
    from corpus_platform.base.word_hashes import HashSet, word_hashes
    from corpus_platform.base.words import split_words
    from corpus_platform.kernels.dedup.minhash import normalized_shingle_sets, signatures
    from corpus_platform.kernels.filtering.textstats import text_scores
    from corpus_platform.kernels.sharding.compiled import recount_words
    from corpus_platform.kernels.splitting.recall import RecallSample, batch_hits
    from corpus_platform.kernels.statistics.fit import token_statistics
    from corpus_platform.kernels.statistics.recompute import token_document_counts

    hashes, _ = word_hashes(["warm up the compiled kernels"])
    split_words(pa.array(["Warm up"], pa.large_string()))
    content_hashes(pa.array(["Warm up"], pa.large_string()))
    HashSet.of(hashes).contains(hashes)
    sets = normalized_shingle_sets(["warm up the compiled kernels"], 5)
    signatures(sets, 8, 0)
    batch_hits(sets, RecallSample.of(("warm",), sets), 0.5)
    token_statistics(pa.array(["Warm up"], pa.large_string()))
    token_document_counts(["Warm up"])
    recount_words(["Warm up"])
    text_scores(["warm up the compiled kernels, warm up the compiled kernels"], frozenset())


if __name__ == "__main__":
    warm()
