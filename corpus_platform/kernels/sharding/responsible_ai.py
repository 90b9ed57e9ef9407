"""The Responsible-AI fields of a release's Croissant file (``rai:``), and the lines the audit
page shares with them: the preprocessing protocol, the PII policy, the split guarantee and what
is known of the licences. Pure functions of the release's registry facts."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    FITTED_STATISTICS,
    RAW_DOCUMENTS,
    SPLIT_DOCUMENTS,
    TRAINING_MIX,
)
from corpus_platform.kernels.filtering.pii import PLACEHOLDERS
from corpus_platform.kernels.sharding.card import SPLIT_PROMISES, CardFacts

if TYPE_CHECKING:
    from corpus_platform.kernels.sharding.croissant import ReleaseFacts


def _json(value: Any) -> str:
    return json.dumps(value or {}, sort_keys=True)


def preprocessing(facts: ReleaseFacts) -> list[str]:
    """rai:dataPreprocessingProtocol: PII, every filter with its threshold and removals, dedup,
    the split, the statistics, decontamination, the mix and the shards."""
    card, config = facts.card, facts.card.config
    filtered = card.counts(FILTERED_DOCUMENTS)
    dedup, dedup_config = card.counts(DEDUPLICATED_DOCUMENTS), config.get("dedup", {})
    split, fitted = card.counts(SPLIT_DOCUMENTS), card.counts(FITTED_STATISTICS)
    mix, mix_config = card.counts(TRAINING_MIX), config.get("mix", {})
    edits = filtered.get("replacements", {})
    return [
        f"Quality filters: {filtered.get('rows_in', 0):,} rows in, {filtered.get('rows', 0):,} "
        "kept; a row is removed by the first filter it fails (PII drops first, language last).",
        *(f"filter {f.name}: {f.rule}; removed {f.removed:,} rows" for f in facts.filters),
        "PII policy (filters.pii): " + "; ".join(pii_lines(card)),
        f"C4 boilerplate lines (javascript, cookie, terms of use ...) removed from "
        f"{edits.get('c4_boilerplate_lines', 0):,} rows.",
        f"Deduplication: exact and MinHash near-duplicates (Jaccard of word "
        f"{dedup_config.get('shingle_size')}-grams at or above {dedup_config.get('threshold')}, "
        f"{dedup_config.get('num_perm')} permutations, candidates verified exactly: "
        f"{dedup_config.get('verify')}; mode {dedup_config.get('mode')}): "
        f"{dedup.get('duplicate_clusters', 0):,} clusters holding "
        f"{dedup.get('rows_in_clusters', 0):,} rows; {dedup.get('rows', 0):,} of "
        f"{dedup.get('rows_in', 0):,} rows kept (one per cluster, by "
        f"{dedup.get('representative_rule', dedup_config.get('keep'))}).",
        f"Split: {split_guarantee(card)} Sizes: {_json(split.get('split_sizes'))}; rows "
        f"dropped: {_json(split.get('dropped'))}.",
        f"Statistics fitted on the train split only ({fitted.get('fitted_on', {}).get('rows', 0):,}"
        " rows) and frozen: every split is scaled with them.",
        f"Decontamination: training rows sharing a word "
        f"{config.get('decontamination', {}).get('ngram', 13)}-gram with an evaluation set "
        f"{_json(mix.get('contaminated_rows_per_eval_set'))} "
        f"(action: {mix.get('decontamination_action', 'flag')}).",
        f"Training mix ({mix_config.get('unit', 'documents')}): target proportions "
        f"{_json(mix_config.get('proportions'))}; drawn per source "
        f"{_json(mix.get('drawn_per_source'))} from train rows "
        f"{_json(mix.get('available_per_source'))}.",
        f"Shards: {facts.totals.get('shards', 0)} WebDataset tar and Parquet shards of the same "
        f"{facts.totals.get('samples', 0):,} samples in one order seeded by {config.get('seed')}.",
        "Blocking checks up to the mix: "
        + "; ".join(
            f"{s.asset}.{n} {r}: {v}" for s in card.stages for n, (r, v) in s.checks.items()
        ),
    ]


def pii_lines(card: CardFacts) -> list[str]:
    """Per PII kind: its policy (filters.pii) and the rows it removed or matches it replaced."""
    filtered = card.counts(FILTERED_DOCUMENTS)
    removed, found = filtered.get("removed_by_filter", {}), filtered.get("replacements", {})
    return [
        f"{kind}: drop, {removed.get(f'pii_{kind}', 0):,} rows containing one removed"
        if action == "drop"
        else f"{kind}: {action}, {found.get(kind, 0):,} matches replaced with {PLACEHOLDERS[kind]}"
        for kind, action in (card.config.get("filters", {}).get("pii") or {}).items()
    ]


def split_guarantee(card: CardFacts) -> str:
    """What the split promises, in its mode's words, and where the held-out rows are."""
    split = card.stage(SPLIT_DOCUMENTS)
    mode = card.counts(SPLIT_DOCUMENTS).get("mode") or card.config.get("split", {}).get("mode")
    where = f" (split_documents snapshot {split.snapshot_id})" if split else ""
    return (
        f"mode {mode}: {SPLIT_PROMISES.get(mode, mode)}. The release holds train rows only; "
        f"validation and test stay in split_documents{where}."
    )


def licence_limitation(facts: ReleaseFacts) -> str:
    """What the release knows of its licences: per row (draws per licence, rows per licence and
    split) or only as declared."""
    drawn = facts.card.counts(TRAINING_MIX).get("drawn_per_license")
    if not drawn:
        return (
            "The raw sources' licences and consent were not recorded; license: "
            f"{', '.join(facts.licences)}."
        )
    per_split = facts.card.counts(SPLIT_DOCUMENTS).get("rows_per_license") or {}
    return (
        "Licences were recorded per row (its license column, else its source's licence, else "
        f"unknown) but not verified against the sources' terms; draws per licence {_json(drawn)}, "
        f"rows per licence and split {_json(per_split)}; consent was not recorded."
    )


def responsible_ai(facts: ReleaseFacts) -> dict[str, Any]:
    """The rai: fields, from the registry's counts and the recorded config."""
    card, config = facts.card, facts.card.config
    raw, mix = card.counts(RAW_DOCUMENTS), card.counts(TRAINING_MIX)
    files = raw.get("rows_per_file", {})
    languages = config.get("filters", {}).get("languages") or []
    sources = sorted(mix.get("drawn_per_source", {}))
    limitations = [
        "Quality filters are heuristics (Gopher, C4, FineWeb rules with the thresholds above): "
        "they remove some good text and keep some bad.",
        "PII detection is pattern-based (e-mail, phone, IP, Luhn-valid card numbers, US SSNs): "
        "names, postal addresses and other personal data are not detected.",
        f"Near-duplicates below Jaccard {config.get('dedup', {}).get('threshold')} are kept.",
        licence_limitation(facts),
    ]
    if card.counts(SPLIT_DOCUMENTS).get("mode") == "row":
        limitations.append("Split mode row: entities and near-duplicates may leak across splits.")
    return {
        "rai:dataCollection": f"{raw.get('rows', 0):,} rows read from {raw.get('files', 0)} raw "
        f"files under {config.get('input', {}).get('path')} (raw snapshot "
        f"{facts.release['raw_snapshot']}); sources in the mix: {', '.join(sources)}. How the "
        "raw files themselves were collected is not recorded by the platform.",
        "rai:dataCollectionRawData": "Raw files (rows): "
        + ", ".join(f"{name} ({rows:,})" for name, rows in files.items())
        + ". Every sample keeps its raw_file and raw_row.",
        "rai:dataPreprocessingProtocol": preprocessing(facts),
        "rai:dataUseCases": [
            "Pre-training or fine-tuning language models on these samples.",
            f"Evaluation on held-out rows only: {split_guarantee(card)}",
        ],
        "rai:dataLimitations": limitations,
        "rai:dataBiases": [
            "Source shares are set by the mix's target proportions "
            f"{_json(config.get('mix', {}).get('proportions'))}, "
            "not by the raw corpus: available train rows per source "
            f"{_json(mix.get('available_per_source'))}.",
            "Language filter: "
            + (f"only {', '.join(languages)} kept." if languages else "none (any language)."),
            "Duplicate clusters keep one row, chosen by quality score: text the filters score "
            "well is over-represented among the kept rows.",
        ],
        "rai:dataSocialImpact": "Not assessed by the build: no social-impact review is recorded.",
        "rai:personalSensitiveInformation": [
            *pii_lines(card),
            "Not detected: names, postal addresses and other personal data in text.",
            "The entity and url columns name authors, documents or sites.",
        ],
        "rai:dataReleaseMaintenancePlan": "Releases are recorded in .corpus/registry.jsonl "
        "(`corpus releases`); gc keeps every release's chain; `corpus checkout "
        f"{facts.release['name']}` restores this one and `corpus replay "
        f"{facts.release['snapshot_id']}` rebuilds it and compares.",
    }
