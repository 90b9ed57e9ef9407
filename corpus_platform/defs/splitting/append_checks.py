"""The split checks' view of an append: what the new generation touches, against every row
(:mod:`corpus_platform.kernels.splitting.touched`)."""

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.generations import generation_path, side_generation_path
from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS, SIMILAR_PAIRS
from corpus_platform.base.shards import iter_shards, read_manifest, read_parquet
from corpus_platform.defs.generations import (
    GENERATIONS,
    appended_generation,
    changed_published_files,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.content import (
    linking_pairs,
    representatives,
    short_link_ids,
)
from corpus_platform.kernels.splitting.links import MEMBER_COLUMNS
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


def short_rule(params: DedupParams) -> str:
    """The exemption the leak checks apply, as the split's links do."""
    if params.min_shingles <= 0:
        return "none (split.min_link_shingles 0: every pair counts)"
    return (
        f"pairs and clusters whose texts have fewer than {params.min_shingles} distinct word "
        f"{params.shingle_size}-grams (split.min_link_shingles)"
    )


def dedup_units(candidate: Path, generation: int) -> list[int]:
    """The dedup generations an appended split generation took."""
    entry = next(e for e in read_manifest(candidate)[GENERATIONS] if e["generation"] == generation)
    return sorted(int(unit) for unit in entry["upstream"])


def new_pairs(corpus: CorpusProject, candidate: Path, generation: int) -> pa.Table:
    """The similar pairs the dedup stage found for the rows of an appended split generation:
    those of the dedup generations it took."""
    dedup = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    tables = [
        read_parquet(side_generation_path(dedup, SIMILAR_PAIRS, unit))
        for unit in dedup_units(candidate, generation)
    ]
    return pa.concat_tables(tables, promote_options="default")


@dataclass(frozen=True)
class TooShort:
    """What the leak checks exempt as too short to leak (``split.min_link_shingles``), as the
    split left it out of its links (:mod:`corpus_platform.kernels.splitting.content`)."""

    clusters: pa.Array  # ids of duplicate clusters whose representative is too short
    linking: pa.Array  # per similar pair: whether it carries enough content to link


def too_short_to_leak(
    corpus: CorpusProject, pairs: pa.Table, units: list[int] | None = None
) -> TooShort:
    """The clusters (of the dedup generations ``units``; every one for None) and the ``pairs``
    too short to leak, measured on the published ``deduplicated_documents``."""
    config = corpus.load()
    params, n = DedupParams.from_config(config), config.num_shards
    dedup = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    every = pa.concat_tables([t for _, t in iter_shards(dedup / "clusters", n, MEMBER_COLUMNS)])
    members = every
    if units is not None:
        files = [generation_path(dedup / "clusters", s, u) for s in range(n) for u in units]
        members = pa.concat_tables([read_parquet(f, MEMBER_COLUMNS) for f in files] or [every[:0]])
    stand_in = representatives(every)
    engine = corpus.engine(config)
    short = short_link_ids(members, pairs, dedup, n, params, engine, stand_in)
    too_short = pc.is_in(members.column("representative"), short)
    clusters = pc.unique(members.filter(too_short).column("cluster_id"))
    return TooShort(clusters, linking_pairs(pairs, stand_in, short))


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
            "too_short_to_leak": short_rule(params),
            "scope": scope(generation),
        },
    )
