"""Blocking checks on split_documents: nothing that could leak crosses a split boundary."""

from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from corpus_platform.base.checks import CheckOutcome
from corpus_platform.base.hashing import unit_interval
from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    EPOCH_MOVES,
    SIMILAR_PAIRS,
    SPLIT_DOCUMENTS,
    SPLITS,
    TRAIN,
)
from corpus_platform.base.shards import (
    MANIFEST,
    read_manifest,
)
from corpus_platform.defs.checks import StageChecks
from corpus_platform.defs.generations import (
    GENERATIONS,
    appended_generation,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.append_checks import (
    dedup_units,
    kept_verbatim,
    neighbours_of_new_rows,
    new_pair_files,
    new_pairs,
    scope,
    short_rule,
    too_short_to_leak,
)
from corpus_platform.defs.splitting.neighbour_search import search_held_out_neighbours
from corpus_platform.kernels.dedup import DedupParams
from corpus_platform.kernels.ingest.licences import denied_rows
from corpus_platform.kernels.splitting import asof
from corpus_platform.kernels.splitting.crossing import crossing_keys
from corpus_platform.kernels.splitting.leakage import crossing_pairs_in, split_moves
from corpus_platform.kernels.splitting.ratios import split_ratio_task
from corpus_platform.kernels.splitting.recall import (
    draw_sample,
    shard_recall_hits,
)
from corpus_platform.kernels.splitting.recall_cache import CACHE as RECALL_CACHE
from corpus_platform.kernels.splitting.recall_cache import prune
from corpus_platform.kernels.splitting.temporal import MICROS_PER_DAY, check_order
from corpus_platform.kernels.splitting.touched import (
    crossing_keys_touched,
    crossing_pairs_touched,
)

ASOF_SAMPLE = 5_000  # rows whose as-of values are recomputed, at most (a seeded choice)


STABILITY_CARD_VERDICT = (
    "compared with the previously published split (`corpus lineage` has the numbers)"
)


def no_held_out_row_moved_into_train(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Against the published snapshot of the same ``split.epoch``: every move of a row between
    splits is reported, and a validation or test row that moved into train fails the check. A
    higher epoch may move rows (listed in ``epoch_moves/``); a lower one fails."""
    config = corpus.load()
    previous = corpus.stage_dir(SPLIT_DOCUMENTS)
    card = {"card_verdict": STABILITY_CARD_VERDICT}  # the same whatever came before
    if not (previous / MANIFEST).is_file():
        return CheckOutcome.not_applicable("first snapshot: nothing to compare", card)
    if (kept := kept_verbatim(candidate, previous, card)) is not None:
        return kept
    published = read_manifest(previous)
    epoch, previous_epoch = config.split.epoch, published.get("epoch", 0)
    report = split_moves(
        previous, candidate, config.num_shards, published.get("num_shards", config.num_shards)
    )
    examples = {"moved_into_train": list(report.examples), **card}
    if epoch < previous_epoch:
        verdict = f"split.epoch went back from {previous_epoch} to {epoch}: epochs only increase"
        return CheckOutcome.from_metadata(passed=False, metadata={"verdict": verdict, **examples})
    if epoch > previous_epoch:
        verdict = (
            f"new split epoch {epoch} (published: {previous_epoch}): {report.describe()}; "
            f"allowed by the epoch change and listed in {EPOCH_MOVES}"
        )
        return CheckOutcome.from_metadata(passed=True, metadata={"verdict": verdict, **examples})
    return CheckOutcome.from_metadata(
        passed=report.passed, metadata={"verdict": report.describe(), **examples}
    )


def no_entity_in_two_splits(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No entity (user, document, site) has rows in more than one split."""
    config = corpus.load()
    generation = appended_generation(candidate, corpus.stage_dir(SPLIT_DOCUMENTS))
    if generation is None:
        with corpus.scratch("no_entity_in_two_splits") as work:
            report = crossing_keys(
                candidate, config.num_shards, "entity", "entities", None,
                corpus.engine(config), work, config.engine.memory_mb,
            )  # fmt: skip
    else:  # an append: the new rows' entities, against every row
        report = crossing_keys_touched(
            candidate, config.num_shards, "entity", "entities", generation
        )
    return CheckOutcome.from_metadata(
        passed=report.passed,
        metadata={
            "verdict": report.describe(),
            "offenders": list(report.examples),
            "scope": scope(generation),
        },
    )


def no_cluster_in_two_splits(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No duplicate cluster, and no similar pair above the split threshold, spans two splits;
    clusters and pairs too short to leak (``split.min_link_shingles``) are exempt, as the split
    leaves them out of its links."""
    config = corpus.load()
    root, shards = candidate, config.num_shards
    generation = appended_generation(candidate, corpus.stage_dir(SPLIT_DOCUMENTS))
    params, dedup = DedupParams.from_config(config), corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    engine = corpus.engine(config)
    with corpus.scratch("no_cluster_in_two_splits") as work:
        if generation is None:
            short = too_short_to_leak(corpus, (dedup / SIMILAR_PAIRS,), work)
            clusters = crossing_keys(
                root, shards, "cluster_id", "duplicate clusters", short.clusters,
                engine, work, config.engine.memory_mb,
            )  # fmt: skip
            crossing = partial(
                crossing_pairs_in, split_root=root, num_shards=shards, pairs_file=short.linking
            )
            similar = engine.map_shards(crossing, [0])[0]
        else:  # an append: the new rows' clusters and pairs, against every row
            kind = "duplicate clusters"
            files = new_pair_files(corpus, candidate, generation)
            short = too_short_to_leak(corpus, files, work, dedup_units(candidate, generation))
            exempt = short.clusters
            clusters = crossing_keys_touched(root, shards, "cluster_id", kind, generation, exempt)
            pairs = new_pairs(corpus, candidate, generation)
            similar, _ = crossing_pairs_touched(root, shards, pairs, generation, params)
    return CheckOutcome.from_metadata(
        passed=clusters.passed and similar.passed,
        metadata={
            "verdict": f"{clusters.describe()}; {similar.describe()}",
            "exempt_too_short_to_leak": f"{len(short.clusters)} duplicate clusters under "
            f"{params.min_shingles} word n-grams (split.min_link_shingles)",
            "cluster_offenders": list(clusters.examples),
            "pair_offenders": list(similar.examples),
            "scope": scope(generation),
        },
    )


def no_train_neighbour_of_held_out_rows(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No validation or test row has a train row at or above the split's similarity threshold:
    rows sharing a band key across train and a held-out split are candidates, each confirmed
    by exact Jaccard (:mod:`~corpus_platform.defs.splitting.neighbour_search`, the search the
    split itself runs and links by, so a split is never rejected for a pair it could see)."""
    generation = appended_generation(candidate, corpus.stage_dir(SPLIT_DOCUMENTS))
    if generation is not None:
        return neighbours_of_new_rows(corpus, candidate, generation)
    search = search_held_out_neighbours(corpus, candidate)
    report, params = search.report, search.params
    return CheckOutcome.from_metadata(
        passed=report.hits == 0,
        metadata={
            "verdict": f"held-out rows with a train neighbour at Jaccard >= "
            f"{params.pair_threshold}: {report.hits} of {report.queried}",
            "candidate_pairs_verified": report.candidates,
            "band_keys": search.source,
            "too_short_to_leak": short_rule(params),
            "offenders": list(report.examples),
        },
    )


def held_out_sample_has_no_train_neighbour(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Independent of the dedup stage's LSH: a seeded sample of ``split.recall_sample``
    held-out rows compared by exact word n-gram Jaccard with every train row (one train shard a
    task); a pair at or above the split's similarity threshold fails it. In an append, the
    sample of the new held-out rows against every train row, and the sample of every held-out
    row against the new train rows."""
    config = corpus.load()
    if config.split.recall_sample == 0:
        return CheckOutcome.not_applicable("split.recall_sample is 0: no sample compared")
    generation = appended_generation(candidate, corpus.stage_dir(SPLIT_DOCUMENTS))
    passes = [(None, None)] if generation is None else [(generation, None), (None, generation)]
    results = [recall_pass(corpus, candidate, held, train) for held, train in passes]
    params = DedupParams.from_config(config)
    cache = corpus.root_path / RECALL_CACHE
    prune(cache, candidate / TRAIN, config.num_shards, params.shingle_size, params.normalization)
    sampled = sum(n for n, _, _ in results)
    if not sampled:
        return CheckOutcome.not_applicable("no held-out row with text to sample")
    hits = sorted({hit for _, _, found in results for hit in found})
    threshold = config.split.similarity_threshold
    return CheckOutcome.judged(
        not hits,
        f"train rows at Jaccard >= {threshold} with one of {sampled} sampled held-out rows: "
        f"{len(hits)} pairs ({sum(n for _, n, _ in results)} train rows compared)",
        [f"{held}~{train} ({jaccard:.3f})" for held, train, jaccard in hits[:10]],
        {
            "sample_size": sampled,
            "scope": scope(generation),
            "too_short_to_leak": short_rule(params),
        },
    )


def recall_pass(
    corpus: CorpusProject, candidate: Path, held: int | None, train: int | None
) -> tuple[int, int, list[tuple[str, str, float]]]:
    """One recall comparison: the sample of the held-out rows of generation ``held`` (every
    generation for None) against the train rows of generation ``train``; (rows sampled, train
    rows compared, pairs at or above the split's threshold)."""
    config = corpus.load()
    size, shards = config.split.recall_sample, range(config.num_shards)
    params, engine = DedupParams.from_config(config), corpus.engine(config)
    sample = draw_sample(
        candidate, config.num_shards, config.seed, size,
        params.shingle_size, params.normalization, engine, held,
    )  # fmt: skip
    if not len(sample):
        return 0, 0, []
    compare = partial(
        shard_recall_hits,
        split_root=candidate,
        sample=sample,
        ngram=params.shingle_size,
        normalization=params.normalization,
        threshold=params.pair_threshold,
        generation=train,
        cache=corpus.root_path / RECALL_CACHE,
        min_shingles=params.min_shingles,
    )
    results = engine.map_shards(compare, shards)
    return len(sample), sum(n for n, _ in results), [h for _, found in results for h in found]


def split_ratios_within_tolerance(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Each split's share is within ``split.tolerance`` of its ratio: shares of rows, or in
    ``time_group`` mode (where windows drop rows by design) shares of components by bucket.
    In the group modes a failure names the largest component when it is the cause."""
    config = corpus.load()
    task = partial(
        split_ratio_task, root=candidate, num_shards=config.num_shards, split=config.split
    )
    report = corpus.engine(config).map_shards(task, [0])[0]
    ratios = config.split.ratios
    metadata: dict[str, object] = {
        "verdict": report.describe(),
        "achieved": ", ".join(
            f"{n} {report.achieved[n]:.3f} (want {ratios[n]:.3f})" for n in SPLITS
        ),
        f"{report.unit}s": report.sizes,
        "row_shares": {n: round(s, 4) for n, s in report.row_shares.items()},
        "dropped_by_reason_and_bucket": report.dropped,
    }
    if (largest := report.largest) is not None:
        metadata["largest_component"] = (
            f"{largest.name}: {largest.rows} rows ({largest.share:.1%}) in {largest.split}"
        )
    return CheckOutcome.from_metadata(passed=report.passed, metadata=metadata)


def temporal_order(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """Time modes: the last train row (plus the gap) precedes the first validation and test row,
    and validation precedes test, ordered by (timestamp, doc_id)."""
    config = corpus.load()
    if not config.split.uses_time:
        return CheckOutcome.not_applicable(
            f"split.mode {config.split.mode}: no time order promised (time modes only)"
        )
    gap = round(config.split.gap_days * MICROS_PER_DAY)
    report = check_order(candidate, config.num_shards, gap)
    bounds = {k: None if v is None else [list(v[0]), list(v[1])] for k, v in report.bounds.items()}
    verdict = (
        "time never runs backwards across splits" if report.passed else "; ".join(report.violations)
    )
    return CheckOutcome.from_metadata(
        passed=report.passed, metadata={"verdict": verdict, "first_last_keys": bounds}
    )


def visible_generations(candidate: Path) -> Callable[[int], set[int]] | None:
    """For each generation of a split candidate, the ``deduplicated_documents`` generations
    that were there when it was placed (its own and every earlier one's); None when the
    manifest records no generations."""
    entries = sorted(read_manifest(candidate).get(GENERATIONS) or [], key=lambda e: e["generation"])
    if not entries:
        return None
    seen: set[int] = set()
    upto: dict[int, set[int]] = {}
    for entry in entries:
        seen |= {int(unit) for unit in entry["upstream"]}
        upto[entry["generation"]] = set(seen)
    return lambda generation: upto.get(generation, seen)


def asof_features_causal(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """A deterministic sample of as-of features (5,000 rows, chosen by a seeded hash of the
    doc_id) equals a brute-force recomputation from the entity's strictly earlier rows, as they
    were when the row was placed: an appended row sees every published and new row, a published
    row what was there when it was published (a row that arrives later changes no published
    value)."""
    config = corpus.load()
    if not config.asof_features:
        return CheckOutcome.not_applicable("no as-of features declared (asof_features)")
    root = candidate
    checked, mismatches = asof.sample_check(
        [root / name for name in SPLITS],
        corpus.stage_dir(DEDUPLICATED_DOCUMENTS),
        config.num_shards,
        config.asof_features,
        partial(unit_interval, seed=config.seed, salt="asof-check"),
        ASOF_SAMPLE,
        visible_generations(candidate),
    )
    return CheckOutcome.from_metadata(
        passed=checked > 0 and not mismatches,
        metadata={
            "verdict": f"as-of values differing from brute force: {len(mismatches)} of "
            f"{checked} sampled rows",
            "mismatches": mismatches,
        },
    )


def no_denied_license_in_splits(corpus: CorpusProject, candidate: Path) -> CheckOutcome:
    """No row of train, validation or test carries a licence listed in ``licenses.deny`` (a
    row's licence: its ``license`` column, else its source's licence, else ``unknown``); the
    offending rows are named with their raw file and row."""
    config = corpus.load()
    deny = config.licenses.deny
    if not deny:
        return CheckOutcome.not_applicable("no licence is denied (licenses.deny)")
    engine, shards = corpus.engine(config), range(config.num_shards)
    found: Counter[str] = Counter()
    offenders: list[dict[str, object]] = []
    for name in SPLITS:
        for per_licence, rows in engine.map_shards(
            partial(denied_rows, candidate / name, deny=deny), shards
        ):
            found.update(per_licence)
            offenders += [{"split": name, **row} for row in rows]
    total = sum(found.values())
    return CheckOutcome.from_metadata(
        passed=total == 0,
        metadata={
            "verdict": f"rows with a denied licence: {total}"
            + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(found.items()))})" if total else "")
            + (
                "; remove these rows from the raw files, exclude their source, or change "
                "licenses.deny"
                if total
                else ""
            ),
            "denied": list(deny),
            "rows_per_denied_license": dict(sorted(found.items())),
            "offenders": offenders[:20],
        },
    )


# The blocking checks of split_documents, in the order they run and are shown.
SPLIT_DOCUMENTS_CHECKS = StageChecks(
    "split_documents",
    (
        no_held_out_row_moved_into_train,
        no_entity_in_two_splits,
        no_cluster_in_two_splits,
        no_train_neighbour_of_held_out_rows,
        held_out_sample_has_no_train_neighbour,
        split_ratios_within_tolerance,
        temporal_order,
        asof_features_causal,
        no_denied_license_in_splits,
    ),
)
