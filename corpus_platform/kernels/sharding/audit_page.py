"""The audit page of a release: one self-contained HTML page (inline CSS, no script, no external
resource) saying which sources, code, checks and exact files a release is, how its rows went from
raw files to shards, and the command that rebuilds it. Pure: :mod:`corpus_platform.audit_report`
gathers the facts. Every value is HTML-escaped; every number sits in an element with a stable
``id`` or ``data-*`` attribute (``<span id="rows">``, ``<tr data-asset=.. data-check=..
data-status=..>``, ``<td data-field="md5">``), so a reader or a test finds it in the DOM."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from corpus_platform.base.names import DEDUPLICATED_DOCUMENTS as DEDUPLICATED
from corpus_platform.base.names import FILTERED_DOCUMENTS as FILTERED
from corpus_platform.base.names import RAW_DOCUMENTS, SPLIT_DOCUMENTS, SPLITS, TRAINING_MIX
from corpus_platform.kernels.sharding.card import CardFacts, StageFacts, licence_rows
from corpus_platform.kernels.sharding.croissant import FileFact, FilterFact
from corpus_platform.kernels.sharding.html import (
    CSS,
    esc,
    items,
    num,
    para,
    row,
    section,
    table,
    tagged,
)
from corpus_platform.kernels.sharding.responsible_ai import pii_lines
from corpus_platform.kernels.sharding.responsible_ai import split_guarantee as guarantee

NOT_RECORDED = "not recorded"
LABELS = {"passed": "PASS", "failed": "FAIL", "not applicable": "n/a", "warned": "WARN"}
CLASSES = {"passed": "PASS", "failed": "FAIL", "warned": "warn"}  # CSS classes of status cells


@dataclass(frozen=True)
class SourceFile:
    """One file of a pinned input (raw folder, evaluation set, tokenizer)."""

    input: str  # the input's name in the registry: raw, eval:<name>, tokenizer
    path: str  # relative to the input's path ("" for an input that is one file)
    md5: str  # in the pinned snapshot (DVC)
    rows: int | None  # rows read from it (raw files), None when not counted
    md5_on_disk: str | None  # of the file in the project now, None when missing
    stored: bool  # the DVC cache or remote holds the pinned bytes
    licence: str = NOT_RECORDED


@dataclass(frozen=True)
class CodeFacts:
    """The code of the release and of the checkout the page was written from."""

    commit: str  # the release's git commit
    dirty: bool  # the release was built with uncommitted changes
    environment: str  # digest of the installed distributions of the build
    commit_now: str
    dirty_now: bool
    diff_sha256: str  # sha256 of `git diff HEAD` of the package source now ("" when clean)
    diff_files: tuple[str, ...]


@dataclass(frozen=True)
class AuditFacts:
    """Everything the page says, gathered by :mod:`corpus_platform.audit_report`."""

    release: dict[str, Any]  # the release record (store.releases)
    card: CardFacts  # the chain's counts and config (defs.card.card_facts)
    sources: tuple[SourceFile, ...]
    input_paths: dict[str, str]  # input name -> its path in the project
    licence: str  # annotations.license, else the licences drawn into the mix, else NOT_RECORDED
    code: CodeFacts
    # every stage of the release, training_shards included; checks: name -> (status, verdict)
    stages: tuple[StageFacts, ...]
    files: tuple[FileFact, ...]  # every published file of training_shards, with its sha256
    entries: dict[str, dict[str, Any]]  # file -> its manifest entry (samples, tokens, md5 ...)
    filters: tuple[FilterFact, ...]
    totals: dict[str, Any]  # the manifest's totals


def summary(facts: AuditFacts) -> str:
    release, card = facts.release, facts.card
    statuses = [status for s in facts.stages for status, _ in s.checks.values()]
    stages = [row({"stage": s.asset}, s.asset, (s.snapshot_id, "snapshot")) for s in facts.stages]
    return section(
        "summary",
        "Release summary",
        items(
            ("release", release["name"], "release-name"),
            ("dataset", card.name, "dataset-name"),
            ("created", release["created"], "created"),
            ("run", release.get("run_id") or "none (named with `corpus release`)", "run-id"),
            ("training_shards snapshot", release["snapshot_id"], "snapshot-id"),
            ("samples (rows)", release.get("rows"), "rows"),
            ("tokens", release.get("tokens"), "tokens"),
            ("config hash", release["config_hash"], "config-hash"),
            ("raw snapshot", release["raw_snapshot"], "raw-snapshot"),
            ("licence", facts.licence, "licence"),
            ("checks passed", statuses.count("passed"), "checks-passed"),
            ("checks failed", statuses.count("failed"), "checks-failed"),
            ("checks not applicable", statuses.count("not applicable"), "checks-na"),
        ),
        table("stage|snapshot id (DVC)", stages),
    )


def _now(source: SourceFile) -> str:
    if not source.md5_on_disk:  # "": not compared (the pinned listing is lost)
        return "not compared" if source.md5_on_disk == "" else "missing from the project now"
    same = source.md5_on_disk == source.md5
    return "same bytes" if same else f"differs now (md5 {source.md5_on_disk})"


def sources(facts: AuditFacts) -> str:
    rows = [
        row(
            {"input": s.input, "path": s.path},
            s.input,
            s.path or facts.input_paths.get(s.input, ""),
            *tagged(md5=s.md5, rows=s.rows, now=_now(s)),
            *tagged(stored="yes" if s.stored else "NO", licence=s.licence),
        )
        for s in facts.sources
    ]
    paths = ", ".join(f"{n}: {p}" for n, p in facts.input_paths.items())
    return section(
        "sources",
        "Sources",
        para(
            f"Every file of every pinned input ({paths}) with its MD5 in the pinned DVC snapshot, "
            "the rows read from it and, where recorded (licenses, input.columns.license), their "
            f"licences; the dataset's licence: {facts.licence}."
        ),
        table("input|file|md5 (pinned)|rows|now|stored|licence", rows),
    )


def code(facts: AuditFacts) -> str:
    c = facts.code
    entries = [
        ("git commit", c.commit, "code-commit"),
        ("uncommitted changes", "yes (dirty tree)" if c.dirty else "no", "code-dirty"),
        ("environment digest", c.environment, "environment"),
        ("checkout now", c.commit_now + (" +dirty" if c.dirty_now else ""), "code-now"),
    ]
    if not c.dirty:
        return section("code", "Code", items(*entries))
    notes = [
        para(
            "The release was built from a dirty tree: its code is not the commit alone, and the "
            "platform stores no diff of a build.",
            "warn",
        )
    ]
    if c.diff_sha256:
        entries.append(("sha256 of git diff HEAD", c.diff_sha256, "diff-sha256"))
        other = " The checkout is on another commit now: the diff cannot describe the build."
        changed = ", ".join(c.diff_files) or "none listed"
        notes.append(
            para(
                "The diff hash describes the package source as it is now (when this page was "
                f"written), not necessarily as it was built; changed files: {changed}."
                + ("" if c.commit_now == c.commit else other)
            )
        )
    else:
        notes.append(para("The package source has no uncommitted changes now: no diff to hash."))
    return section("code", "Code", items(*entries), *notes)


def checks(facts: AuditFacts) -> str:
    rows = [
        row(
            {"asset": stage.asset, "check": name, "status": status},
            stage.asset,
            name,
            (LABELS.get(status, status), "status", CLASSES.get(status, "na")),
            (verdict, "verdict"),
        )
        for stage in facts.stages
        for name, (status, verdict) in stage.checks.items()
    ]
    return section(
        "checks",
        "Checks",
        para("Every check of every stage snapshot of the release, with its newest verdict."),
        table("stage|check|status|verdict", rows),
    )


def files(facts: AuditFacts) -> str:
    rows = [
        row(
            {"file": f.path},
            f.path,
            (e := facts.entries.get(f.path, {})).get("format", f.path.rsplit(".", 1)[-1]),
            *tagged(samples=e.get("samples"), tokens=e.get("tokens"), bytes=f.size),
            *tagged(md5=e.get("md5"), sha256=f.sha256),
        )
        for f in facts.files
    ]
    t = facts.totals
    return section(
        "files",
        "Files",
        para(
            f"Every published file of training_shards ({num(t.get('shards'))} shards, "
            f"{num(t.get('samples'))} samples, {num(t.get('tokens'))} tokens): MD5 from "
            "manifest.json (verified against the bytes), SHA-256 computed from the bytes."
        ),
        table("file|format|samples|tokens|bytes|md5|sha256", rows),
    )


def funnel(facts: AuditFacts) -> str:
    counts = facts.card.counts(FILTERED)
    rows = [row({"filter": f.name}, f.name, f.rule, (f.removed, "removed")) for f in facts.filters]
    edits = counts.get("replacements", {})
    return section(
        "funnel",
        "Filter funnel",
        items(
            ("rows read", facts.card.counts(RAW_DOCUMENTS).get("rows"), "raw-rows"),
            ("rows into the filters", counts.get("rows_in"), "filter-rows-in"),
            ("rows kept", counts.get("rows"), "filter-rows-kept"),
        ),
        para("A row is removed by the first filter it fails (PII drops first, language last)."),
        table("filter|rule (recorded threshold)|rows removed", rows),
        para("PII policy: " + "; ".join(pii_lines(facts.card) or ["none"])),
        table(
            "edit|rows or matches", [row({"edit": k}, k, (n, "count")) for k, n in edits.items()]
        ),
    )


def dedup(facts: AuditFacts) -> str:
    counts = facts.card.counts(DEDUPLICATED)
    config = sorted(facts.card.config.get("dedup", {}).items())
    settings = ", ".join(f"{k} {v if isinstance(v, str) else json.dumps(v)}" for k, v in config)
    sizes = sorted(counts.get("cluster_size_histogram", {}).items(), key=lambda kv: int(kv[0]))
    return section(
        "dedup",
        "Dedup clusters",
        para(f"Exact and MinHash near-duplicates; settings: {settings or NOT_RECORDED}."),
        items(
            ("rows in", counts.get("rows_in"), "dedup-rows-in"),
            ("rows kept", counts.get("rows"), "dedup-rows"),
            ("duplicate clusters", counts.get("duplicate_clusters"), "dedup-clusters"),
            ("rows in clusters", counts.get("rows_in_clusters"), "dedup-rows-in-clusters"),
            ("candidate pairs", counts.get("candidate_pairs"), "dedup-candidate-pairs"),
            ("similar pairs", counts.get("similar_pairs"), "dedup-similar-pairs"),
            ("representative", counts.get("representative_rule"), "dedup-rule"),
        ),
        table(
            "cluster size|clusters", [row({"size": k}, int(k), (n, "clusters")) for k, n in sizes]
        ),
    )


def split(facts: AuditFacts) -> str:
    counts = facts.card.counts(SPLIT_DOCUMENTS)
    named = counts.get("split_sizes", {})
    order = sorted(named, key=lambda k: (SPLITS.index(k) if k in SPLITS else len(SPLITS), k))
    sizes = [row({"split": k}, k, (named[k], "rows")) for k in order]
    dropped = [
        row({"dropped": k}, k, (n, "rows")) for k, n in (counts.get("dropped") or {}).items()
    ]
    return section(
        "split",
        "Split",
        items(("mode", counts.get("mode"), "split-mode")),
        para(guarantee(facts.card), ident="split-guarantee"),
        table("split|rows", sizes),
        table("why dropped|rows", dropped) if dropped else para("No rows dropped."),
    )


def licences(facts: AuditFacts) -> str:
    rows = licence_rows(facts.card)
    splits = list(facts.card.counts(SPLIT_DOCUMENTS).get("rows_per_license") or {})
    deny = facts.card.config.get("licenses", {}).get("deny") or []
    if not rows:
        return section(
            "licences",
            "Licences",
            para(
                "Licences were not recorded per row: set licenses.sources or "
                "input.columns.license; the dataset's licence: " + facts.licence + "."
            ),
        )
    cells = [
        row(
            {"licence": r[0]},
            r[0],
            *[(n, name) for n, name in zip(r[1:], [*splits, "mix"], strict=True)],
        )
        for r in rows
    ]
    return section(
        "licences",
        "Licences",
        para(
            "A row's licence is its license column where set, else its source's licence, else "
            f"unknown. Denied (licenses.deny, blocking): {', '.join(deny) or 'none'}."
        ),
        table("licence|" + "|".join(f"{s} rows" for s in splits) + "|mix draws", cells),
    )


def mix(facts: AuditFacts) -> str:
    counts, config = facts.card.counts(TRAINING_MIX), facts.card.config.get("mix", {})
    unit = config.get("unit", "documents")
    drawn, available = counts.get("drawn_per_source", {}), counts.get("available_per_source", {})
    measure = counts.get("drawn_tokens_per_source", drawn) if unit == "tokens" else drawn
    total, targets = sum(measure.values()) or 1, config.get("proportions") or {}
    rows = [
        row(
            {"source": s},
            s,
            *tagged(available=available.get(s, 0), drawn=drawn.get(s, 0)),
            (f"{measure.get(s, 0) / total:.2%}", "share", "n"),
            (f"{float(targets[s]):.2%}" if s in targets else "all of train", "target", "n"),
            (counts.get("rates", {}).get(s, "—"), "rate"),
        )
        for s in sorted(set(drawn) | set(available))
    ]
    return section(
        "mix",
        "Mix proportions",
        items(
            ("rows drawn", counts.get("rows"), "mix-rows"),
            ("unit", unit, "mix-unit"),
            ("tolerance", config.get("tolerance", NOT_RECORDED), "mix-tolerance"),
            ("decontamination", counts.get("decontamination_action", ""), "decontamination"),
        ),
        table(f"source|train rows|rows drawn|share ({unit})|target|draw rate", rows),
    )


def replay(facts: AuditFacts) -> str:
    name, snapshot = esc(facts.release["name"]), esc(facts.release["snapshot_id"])
    return section(
        "replay",
        "Replay command",
        para("Restore the release's chain and inputs, then rebuild it and compare every stage:"),
        f'<pre><code id="checkout-command">corpus checkout {name}</code>\n'
        f'<code id="replay-command">corpus replay {snapshot}</code></pre>',
    )


def render_audit_page(facts: AuditFacts) -> str:
    """The whole page."""
    name = esc(facts.release["name"])
    parts = (summary, sources, licences, code, checks, files, funnel, dedup, split, mix, replay)
    intro = (
        f"{facts.card.name}: every number below comes from the project's registry, the shards' "
        "manifest or the bytes themselves."
    )
    body = f"<h1>Audit of release {name}</h1>{para(intro)}{''.join(p(facts) for p in parts)}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Audit of release '
        f"{name}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )
