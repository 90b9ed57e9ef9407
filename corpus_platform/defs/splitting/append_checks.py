"""The split checks' view of an append: what the new generation touches, against every row
(:mod:`corpus_platform.kernels.splitting.touched`)."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.generations import side_generation_path
from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS, SIMILAR_PAIRS
from corpus_platform.base.shards import read_manifest, read_parquet
from corpus_platform.defs.generations import (
    GENERATIONS,
    appended_generation,
    changed_published_files,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.touched import crossing_pairs_touched


def kept_verbatim(candidate: Path, previous: Path, card: dict) -> CheckOutcome | None:
    """An append's stability: every published file is in the candidate byte for byte, so no
    published row moved (None when a file changed: compare row by row)."""
    if appended_generation(candidate, previous) is None:
        return None
    if changed_published_files(candidate, previous):
        return None
    rows = read_manifest(previous).get("rows", 0)
    verdict = (
        f"rows that changed split since the previous snapshot: 0 of {rows}; held-out rows "
        "moved into train: 0 (an append: every published file is kept byte for byte)"
    )
    return CheckOutcome.from_metadata(passed=True, metadata={"verdict": verdict, **card})


def scope(generation: int | None) -> str:
    """What a split check looked at."""
    if generation is None:
        return "every row of the candidate"
    return f"an append: the rows of generation {generation} against every row, published or new"


def new_pairs(corpus: CorpusProject, candidate: Path, generation: int) -> pa.Table:
    """The similar pairs the dedup stage found for the rows of an appended split generation:
    those of the dedup generations it took."""
    entry = next(e for e in read_manifest(candidate)[GENERATIONS] if e["generation"] == generation)
    dedup = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    tables = [
        read_parquet(side_generation_path(dedup, SIMILAR_PAIRS, int(unit)))
        for unit in sorted(entry["upstream"], key=int)
    ]
    return pa.concat_tables(tables, promote_options="default")


def neighbours_of_new_rows(corpus: CorpusProject, candidate: Path, generation: int) -> CheckOutcome:
    """An append's neighbour check: every similar pair the dedup stage found for the new rows
    (new against its index of every row, the candidates the split linked) whose ends sit in
    train and a held-out split, its Jaccard measured again on the split's texts."""
    config = corpus.load()
    params = DedupParams.from_config(config)
    pairs = new_pairs(corpus, candidate, generation)
    _, report = crossing_pairs_touched(candidate, config.num_shards, pairs, generation, params)
    return CheckOutcome.from_metadata(
        passed=report.hits == 0,
        metadata={
            "verdict": f"held-out rows with a train neighbour at Jaccard >= "
            f"{params.pair_threshold}: {report.hits} (new rows: {report.queried})",
            "candidate_pairs_verified": report.candidates,
            "band_keys": f"the pairs {DEDUPLICATED_DOCUMENTS} found for the new rows against "
            "its index of every row",
            "offenders": list(report.examples),
            "scope": scope(generation),
        },
    )
