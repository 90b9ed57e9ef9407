"""The split checks' view of an append: what the new generation touches, against every row
(:mod:`corpus_platform.kernels.splitting.touched`)."""

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.generations import generation_path, side_generation_path
from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS, FILTERED_DOCUMENTS, SIMILAR_PAIRS
from corpus_platform.base.shards import part_path, read_manifest, read_parquet, write_parquet
from corpus_platform.defs.generations import (
    GENERATIONS,
    appended_generation,
    changed_published_files,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.splitting.content import (
    LinkFiles,
    find_short,
    linking_pairs,
    read_short,
)
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


def new_pair_files(corpus: CorpusProject, candidate: Path, generation: int) -> tuple[Path, ...]:
    """The files of the similar pairs the dedup stage found for the rows of an appended split
    generation: those of the dedup generations it took."""
    dedup = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    units = dedup_units(candidate, generation)
    return tuple(side_generation_path(dedup, SIMILAR_PAIRS, unit) for unit in units)


def new_pairs(corpus: CorpusProject, candidate: Path, generation: int) -> pa.Table:
    """The similar pairs of :func:`new_pair_files`."""
    tables = [read_parquet(f) for f in new_pair_files(corpus, candidate, generation)]
    return pa.concat_tables(tables, promote_options="default")


@dataclass(frozen=True)
class TooShort:
    """What the leak checks exempt as too short to leak (``split.min_link_shingles``), as the
    split left it out of its links (:mod:`corpus_platform.kernels.splitting.content`)."""

    clusters: pa.Array  # ids of duplicate clusters whose representative is too short
    linking: Path  # the similar pairs that carry enough content to link (a Parquet file)


def judge_short_links(
    _: int, links: LinkFiles, short: Path, num_shards: int, out: Path
) -> list[str]:
    """Engine task: write the pairs of ``links`` that link to ``out``; return the ids of the
    clusters whose representative is too short (``short``: :func:`find_short`)."""
    (members, pairs, stand_in), short_ids = links.read(), read_short(short, num_shards)
    write_parquet(pairs.filter(linking_pairs(pairs, stand_in, short_ids)), out)
    too_short = pc.is_in(members.column("representative"), short_ids)
    return pc.unique(members.filter(too_short).column("cluster_id")).sort().to_pylist()


def too_short_to_leak(
    corpus: CorpusProject, pairs: tuple[Path, ...], work: Path, units: list[int] | None = None
) -> TooShort:
    """The clusters (of the dedup generations ``units``; every one for None) and the similar
    pairs (in the files ``pairs``) too short to leak, measured on the published
    ``deduplicated_documents`` (their texts in ``filtered_documents``) by the engine's tasks
    through ``work``."""
    config = corpus.load()
    params, n = DedupParams.from_config(config), config.num_shards
    dedup = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    every = tuple(part_path(dedup / "clusters", s) for s in range(n))
    members = every
    if units is not None:
        members = tuple(generation_path(dedup / "clusters", s, u) for s in range(n) for u in units)
    links, engine = LinkFiles(pairs, members, every), corpus.engine(config)
    texts = corpus.stage_dir(FILTERED_DOCUMENTS)  # the dedup stage's rows store no text
    short = find_short(links, texts, n, params, engine, work / "short")
    judge = partial(
        judge_short_links, links=links, short=short, num_shards=n, out=work / "linking.parquet"
    )
    clusters = engine.map_shards(judge, [0])[0]
    return TooShort(pa.array(clusters, pa.string()), work / "linking.parquet")


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
