"""Time the phases of the held-out neighbour check on a kept, built project.

    .bench-venv/bin/python bench/run_benchmarks.py --docs 100000,300000 --large --no-language \\
        --gzip --keep --work /tmp/nb --out /tmp/nb.md
    .bench-venv/bin/python bench/neighbour_phases.py /tmp/nb/project-100000

Runs each phase of :func:`kernels.splitting.neighbours.held_out_neighbours_from_bands` one
after another on the project's engine, in a scratch folder inside the project (removed at the
end), and prints the seconds of each phase, the candidate pairs, the (held-out shard, train
shard) blocks and how many times the verification loaded a shard's candidate rows.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from corpus_platform.base.shards import count_rows
from corpus_platform.config import load_config
from corpus_platform.engine import engine_for
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting import leakage
from corpus_platform.kernels.splitting import neighbours as nb
from corpus_platform.store import band_cache
from corpus_platform.store.snapshots import current_snapshot

HELD_OUT = ("validation", "test")
PHASES = ("renumber band rows", "group band keys", "copy candidate texts", "verify (this process)")


def main(root: Path) -> None:
    """Print the phases' seconds of the neighbour check on the project at ``root``."""
    config = load_config(root / "corpus.yaml")
    split, shards = root / "data" / "split_documents", config.num_shards
    rows = sum(count_rows(split / name, shards) for name in ("train", *HELD_OUT))
    params = DedupParams.from_config(config).for_rows(rows, config.engine.memory_mb)
    dedup_id = current_snapshot(root, root / "data" / "deduplicated_documents")
    kept = band_cache.band_keys_of(root, dedup_id)
    if kept is None:
        raise SystemExit(f"{root}: no band keys kept for {dedup_id}; build the project first")
    groups = nb.reusable_groups(kept / "bands", params, shards)
    if groups is None:
        raise SystemExit(f"{root}: the kept band keys have another layout")
    engine = engine_for(config.engine.kind, config.engine.workers)
    scratch = Path(tempfile.mkdtemp(dir=root))
    try:
        loads, marks = [0], [time.perf_counter()]
        remap = partial(
            nb.remap_shard,
            dedup=kept,
            split_root=split,
            held_out=HELD_OUT,
            scratch=scratch,
            params=params,
            groups=groups,
            num_shards=shards,
        )
        engine.map_shards(remap, range(shards))
        marks.append(time.perf_counter())
        pairs = leakage.cross_candidates(scratch, 2 * shards, shards, len(groups), engine)
        marks.append(time.perf_counter())
        pairs_file = scratch / "candidate-pairs.npy"
        np.save(pairs_file, pairs)
        extract = partial(
            nb.extract_candidate_texts,
            pairs_file=pairs_file,
            scratch=scratch,
            split_root=split,
            held_out=HELD_OUT,
            num_shards=shards,
        )
        engine.map_shards(extract, np.unique(pairs >> np.uint64(32)).tolist())
        marks.append(time.perf_counter())

        def load(shard: int, positions: np.ndarray) -> leakage.Rows:
            loads[0] += 1
            return nb._shingles_of(scratch, shard, positions, params)

        found = leakage.nearest_train_neighbours(pairs, load, params.pair_threshold)
        marks.append(time.perf_counter())
    finally:
        shutil.rmtree(scratch)
    blocks = len(np.unique(pairs >> np.uint64(32), axis=0))
    print(f"{shards} shards, {len(pairs)} candidate pairs, {blocks} blocks, {loads[0]} loads,")
    print(f"{len(found)} held-out rows with a train neighbour")
    for phase, start, end in zip(PHASES, marks[:-1], marks[1:], strict=True):
        print(f"  {phase:24s} {end - start:6.1f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
