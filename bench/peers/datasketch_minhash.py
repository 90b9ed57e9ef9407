r"""Peer benchmark: datasketch 2.0.0's MinHash + MinHashLSH on a JSONL corpus, two ways.

Run with the benchmark venv's python (``make .bench-venv/.installed``):

    .bench-venv/bin/python bench/peers/datasketch_minhash.py --mode bulk --input CORPUS.jsonl \\
        --out PAIRS.jsonl --threshold 0.8 --num-perm 128 --ngram 5 --seed 42 \\
        --work DIR --workers 2

Input: one ``{"id": ..., "text": ...}`` object per line. Output: a JSONL file whose first line is
``{"seconds", "docs", "tool", "notes", "stages", "workers"}``, then one ``{"a", "b"}`` line
(``a < b``) per pair of documents the index matched (clusters are formed by the caller).

Tokens (both modes, in Python, inside the time): lowercase ``\w+`` words
(``re.findall(r"\w+", text.lower())``), word ``--ngram``-grams joined by spaces, UTF-8 encoded
(a shorter text is one token of all its words).

``--mode bulk``, datasketch's fastest documented batch path on one CPU:

1. ``MinHash.bulk(token_lists, num_perm, seed, hashfunc)``: one MinHash prototype copied per
   document and filled with ``update_batch`` (vectorized over its tokens); ``hashfunc`` is
   ``xxhash.xxh32_intdigest`` (the docs recommend a fast hash function such as farmhash over
   the default SHA-1 for performance; ``--hashfunc sha1`` uses the default);
2. ``MinHashLSH(threshold, num_perm)`` (its own band layout for the threshold) filled in one
   ``insertion_session`` (``check_duplication=False``: ids are unique), then one ``query`` per
   document;
3. candidates kept when ``MinHash.jaccard`` (the sketch estimate) is at least ``--threshold``,
   as ``MinHashLSH.query``'s documentation advises.

``LeanMinHash`` is not used: it only saves memory, and is built from a finished ``MinHash``.

``--mode naive``, the loop most users write first: one ``MinHash`` per document updated token by
token (default SHA-1 hash), ``query`` then ``insert``, every candidate kept.

Timing (``seconds``): everything after reading CORPUS.jsonl.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from importlib.metadata import version

import xxhash
from datasketch import MinHash, MinHashLSH
from datasketch.hashfunc import sha1_hash32
from peer_io import parser, read_corpus, write_result

WORD = re.compile(r"\w+")
HASHES: dict[str, Callable[[bytes], int]] = {
    "xxh32": xxhash.xxh32_intdigest,
    "sha1": sha1_hash32,
}


def shingles(text: str, size: int) -> list[bytes]:
    """Word ``size``-grams of the lowercase ``\\w+`` words, joined by spaces, UTF-8 (a shorter
    text: one token of all its words)."""
    words = WORD.findall(text.lower())
    if len(words) <= size:
        return [" ".join(words).encode()]
    grams = map(" ".join, zip(*(words[i:] for i in range(size)), strict=False))
    return [gram.encode() for gram in grams]


def bulk(
    ids: list[str], texts: list[str], args: argparse.Namespace, stages: dict[str, float]
) -> tuple[set[tuple[str, str]], str]:
    """``MinHash.bulk``, an insertion session, a query per document, estimate verification."""
    threshold, num_perm, seed = args.threshold, args.num_perm, args.seed
    clock = time.perf_counter()
    tokens = [shingles(text, args.ngram) for text in texts]
    stages["tokens"], clock = time.perf_counter() - clock, time.perf_counter()
    hashfunc = HASHES[args.hashfunc]
    sketches = MinHash.bulk(tokens, num_perm=num_perm, seed=seed, hashfunc=hashfunc)
    del tokens
    stages["sketches"], clock = time.perf_counter() - clock, time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    with lsh.insertion_session() as session:
        for doc_id, sketch in zip(ids, sketches, strict=True):
            session.insert(doc_id, sketch, check_duplication=False)
    candidates = [lsh.query(sketch) for sketch in sketches]
    stages["lsh"], clock = time.perf_counter() - clock, time.perf_counter()
    index = {doc_id: i for i, doc_id in enumerate(ids)}
    pairs = {
        (min(doc_id, other), max(doc_id, other))
        for i, (doc_id, found) in enumerate(zip(ids, candidates, strict=True))
        for other in found
        if index[other] > i and sketches[i].jaccard(sketches[index[other]]) >= threshold
    }
    stages["verify"] = time.perf_counter() - clock
    notes = (
        f"MinHash.bulk(num_perm={num_perm}, seed={seed}, hashfunc={args.hashfunc}, scheme "
        f"affine32); MinHashLSH(threshold={threshold}) chose b={lsh.b}, r={lsh.r}; one "
        "insertion_session, one query per document; candidates kept at MinHash.jaccard >= "
        f"{threshold}; tokens: lowercase \\w+ word {args.ngram}-grams in Python (inside the time)"
    )
    return pairs, notes


def naive(
    ids: list[str], texts: list[str], args: argparse.Namespace, stages: dict[str, float]
) -> tuple[set[tuple[str, str]], str]:
    """One MinHash per document updated token by token; query, then insert; no verification."""
    threshold, num_perm, seed = args.threshold, args.num_perm, args.seed
    clock = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    pairs: set[tuple[str, str]] = set()
    for doc_id, text in zip(ids, texts, strict=True):
        sketch = MinHash(num_perm=num_perm, seed=seed)
        for token in shingles(text, args.ngram):
            sketch.update(token)
        pairs |= {(min(doc_id, o), max(doc_id, o)) for o in lsh.query(sketch)}
        lsh.insert(doc_id, sketch)
    stages["loop"] = time.perf_counter() - clock
    notes = (
        f"MinHash(num_perm={num_perm}, seed={seed}) (default SHA-1 hash) updated token by "
        f"token; MinHashLSH(threshold={threshold}) chose b={lsh.b}, r={lsh.r}; query then "
        "insert per document; every candidate kept"
    )
    return pairs, notes


def main() -> None:
    """Run one mode; write the pairs."""
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("bulk", "naive"), default="bulk")
    p.add_argument("--hashfunc", choices=sorted(HASHES), default="xxh32", help="bulk mode")
    args = p.parse_args()
    ids, texts = read_corpus(args.input)
    stages: dict[str, float] = {}
    start = time.perf_counter()
    pairs, notes = (bulk if args.mode == "bulk" else naive)(ids, texts, args, stages)
    seconds = time.perf_counter() - start
    tool = f"datasketch {version('datasketch')}"
    summary = {
        "seconds": round(seconds, 3),
        "docs": len(ids),
        "tool": tool
        + (" MinHash.bulk + MinHashLSH" if args.mode == "bulk" else " MinHash naive loop"),
        "notes": notes,
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "workers": 1,
    }
    write_result(args.out, summary, pairs)


if __name__ == "__main__":
    main()
