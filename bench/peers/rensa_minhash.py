r"""Peer benchmark: rensa's R-MinHash and its LSH index on a JSONL corpus.

Run with the benchmark venv's python (``make .bench-venv/.installed`` installs rensa there,
never in the project's venv):

    .bench-venv/bin/python bench/peers/rensa_minhash.py --input CORPUS.jsonl \\
        --out PAIRS.jsonl --threshold 0.8 --num-perm 128 --ngram 5 --seed 42 \\
        --work DIR --workers 2

Input: one ``{"id": ..., "text": ...}`` object per line. Output: a JSONL file whose first line is
``{"seconds", "docs", "tool", "notes", "stages", "workers"}``, then one ``{"a", "b"}`` line
(``a < b``) per pair of documents whose sketches the index matched (clusters are formed by the
caller, as for every implementation).

What runs (rensa's batch path, full-set R-MinHash, not the sampling "rho" pipeline):

1. tokens: lowercase ``\w+`` words (``re.findall(r"\w+", text.lower())``), word ``--ngram``-grams
   joined by spaces (a shorter text is one token of all its words), in Python;
2. ``RMinHash.from_token_sets`` (all sketches in one call, in Rust; ``RAYON_NUM_THREADS`` is
   set to ``--workers``);
3. ``RMinHashLSH(threshold, num_perm, num_bands)`` filled with ``insert_many``, then
   ``query_all`` (every sketch's candidates in one call);
4. every candidate pair kept when the sketches' estimated Jaccard (``RMinHash.jaccard``) is at
   least ``--threshold``, as rensa's own ``RMinHashDeduplicator`` checks its LSH candidates.
   ``--no-verify`` keeps every candidate.

Bands: ``RMinHashLSH`` needs ``num_perm`` divisible by the band count, so the layout is the
divisor that minimizes the equally weighted false-positive and false-negative areas of the
LSH S-curve around ``--threshold`` (datasketch's criterion): 8 bands x 16 rows for 0.8 and 128,
the layout rensa's own benchmark uses. ``--bands`` overrides it.

Timing (``seconds``): the four steps above; reading CORPUS.jsonl comes before the clock.
"""

from __future__ import annotations

import os
import re
import time
from importlib.metadata import version

from peer_io import parser, read_corpus, write_result

WORD = re.compile(r"\w+")


def shingles(text: str, size: int) -> list[str]:
    """Word ``size``-grams of the lowercase ``\\w+`` words, joined by spaces (a shorter text:
    one token of all its words)."""
    words = WORD.findall(text.lower())
    if len(words) <= size:
        return [" ".join(words)]
    return list(map(" ".join, zip(*(words[i:] for i in range(size)), strict=False)))


def _area(rows: int, bands: int, low: float, high: float, false_positive: bool) -> float:
    """Area under (false positives) or above (false negatives) the S-curve on [low, high]."""
    steps = 200
    width = (high - low) / steps
    total = 0.0
    for step in range(steps):
        s = low + (step + 0.5) * width
        hit = 1.0 - (1.0 - s**rows) ** bands
        total += (hit if false_positive else 1.0 - hit) * width
    return total


def divisor_bands(threshold: float, num_perm: int) -> int:
    """The band count dividing ``num_perm`` that minimizes false positives + false negatives.

    Args:
        threshold: Jaccard threshold of the index.
        num_perm: Sketch length.
    """
    return min(
        (b for b in range(1, num_perm + 1) if num_perm % b == 0),
        key=lambda b: (
            _area(num_perm // b, b, 0.0, threshold, True)
            + _area(num_perm // b, b, threshold, 1.0, False)
        ),
    )


def main() -> None:
    """Sketch, index, query and verify; write the pairs."""
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--bands", type=int, default=None, help="LSH bands (default: see above)")
    p.add_argument("--no-verify", action="store_true", help="keep every LSH candidate")
    args = p.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.workers)  # before rensa starts its thread pool
    from rensa import RMinHash, RMinHashLSH

    ids, texts = read_corpus(args.input)
    bands = args.bands or divisor_bands(args.threshold, args.num_perm)
    stages: dict[str, float] = {}
    start = clock = time.perf_counter()
    token_sets = [shingles(text, args.ngram) for text in texts]
    stages["tokens"], clock = time.perf_counter() - clock, time.perf_counter()
    sketches = RMinHash.from_token_sets(token_sets, num_perm=args.num_perm, seed=args.seed)
    del token_sets
    stages["sketches"], clock = time.perf_counter() - clock, time.perf_counter()
    lsh = RMinHashLSH(threshold=args.threshold, num_perm=args.num_perm, num_bands=bands)
    lsh.insert_many(sketches)
    candidates = lsh.query_all(sketches)
    stages["lsh"], clock = time.perf_counter() - clock, time.perf_counter()
    pairs = {
        (min(ids[i], ids[j]), max(ids[i], ids[j]))
        for i, found in enumerate(candidates)
        for j in found
        if j > i and (args.no_verify or sketches[i].jaccard(sketches[j]) >= args.threshold)
    }
    stages["verify"] = time.perf_counter() - clock
    seconds = time.perf_counter() - start
    notes = (
        f"RMinHash.from_token_sets(num_perm={args.num_perm}, seed={args.seed}) (full-set "
        f"R-MinHash, not rho); RMinHashLSH(threshold={args.threshold}, num_bands={bands}, "
        f"{args.num_perm // bands} rows) insert_many + query_all; "
        + ("no verification" if args.no_verify else "candidates kept at estimated Jaccard >= ")
        + ("" if args.no_verify else f"{args.threshold} (RMinHash.jaccard)")
        + f"; tokens: lowercase \\w+ word {args.ngram}-grams in Python (inside the time); "
        f"RAYON_NUM_THREADS={args.workers}"
    )
    summary = {
        "seconds": round(seconds, 3),
        "docs": len(ids),
        "tool": f"rensa {version('rensa')} RMinHash + RMinHashLSH",
        "notes": notes,
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "workers": args.workers,
    }
    write_result(args.out, summary, pairs)


if __name__ == "__main__":
    main()
