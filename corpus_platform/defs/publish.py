"""Write-audit-publish: a stage's candidate is checked, then published with DVC or quarantined."""

import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.redact import redact
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import audit, plain_metadata
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.store.candidates import quarantine
from corpus_platform.store.datasets import (
    candidate_path,
    forget_input_pointers,
    keep_input_pointers,
    promote,
    restore_input_pointers,
    roll_back,
    settle,
)
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.provenance import code_version, environment_digest, require_provenance
from corpus_platform.store.registry import CHECK, append_record, record_snapshot
from corpus_platform.store.snapshots import (
    current_snapshot,
    ensure_snapshot_remote,
    pin,
)

# What a stage asset yields: its check results, then its materialization (or a Failure).
StageOutput = Iterator[dg.MaterializeResult | dg.AssetCheckResult]


def upstream_snapshots(project: CorpusProject, upstream: Sequence[str]) -> dict[str, str]:
    """Snapshot ids of the upstream stage folders as they are pinned now."""
    snapshots = {}
    for name in upstream:
        folder = project.stage_dir(name)
        snapshot = current_snapshot(project.root_path, folder)
        if snapshot is None:
            raise dg.Failure(f"{folder}: upstream {name!r} has no snapshot; materialize it first")
        snapshots[name] = snapshot
    return snapshots


def upstream_assets() -> list[str]:
    """The upstream assets of the asset being materialized, from its own definition (``deps``),
    so provenance can never name other assets than the ones the graph draws."""
    context = dg.AssetExecutionContext.get()
    return sorted(key.to_user_string() for key in context.assets_def.dependency_keys)


def publish(
    project: CorpusProject,
    config: CorpusConfig,
    asset: str,
    counts: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Path] | None = None,
) -> StageOutput:
    """Audit the candidate of ``asset`` (written to :func:`candidate_path`), then publish it or
    reject it. Upstream snapshots are those of the asset's own ``deps``.

    Every blocking check of the stage runs on the candidate (:func:`audit`). When all pass, the
    candidate becomes ``data/<asset>``, is pinned with DVC and recorded in the registry, and the
    materialization carries the check results. When any fails, ``data/``, its pointers and the
    registry's snapshots stay exactly as they were: the candidate goes to quarantine
    (:func:`reject`) and the step fails after reporting every verdict.

    ``counts`` (JSON-ready numbers) go to the metadata and the registry; ``extra`` (tables,
    markdown, images) only to the metadata. The metadata carries the snapshot id, the upstream
    snapshot ids, the config hash, the code version and the environment digest; a result missing
    any of them is refused. ``inputs`` (raw files, evaluation sets) are pinned on publication and
    recorded among the upstream snapshots. Everything recorded is redacted first.

    The inputs are pinned while the checks run (DVC hashes and copies them on one core while
    the checks keep the engine's workers busy); when a check fails, or pinning the inputs or
    the stage does, their pointers are put back as they were. They are recorded first
    (:func:`~corpus_platform.store.datasets.keep_input_pointers`), so that the next build puts
    them back when this one dies before its publication ends.
    """
    root = project.root_path
    ensure_snapshot_remote(root, config.snapshots)
    final = project.stage_dir(asset)
    upstream_ids = upstream_snapshots(project, upstream_assets())
    inputs = dict(sorted((inputs or {}).items()))
    keep_input_pointers(root, asset, inputs.values())  # a killed build gets them back too
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pin-inputs") as background:
            pinned = background.submit(_pin_all, root, inputs)
            results = audit(project, asset, candidate_path(final))
    except BaseException:  # the pin has ended (the pool waits for it): put its pointers back
        restore_input_pointers(root, asset)
        raise
    passed = all(result.passed for result in results)
    if not passed or pinned.exception() is not None:
        restore_input_pointers(root, asset)
    if not passed:
        yield from reject(project, config, asset, upstream_ids, counts, results)
        return
    upstream_ids |= pinned.result()
    promote(final)
    started = time.perf_counter()
    try:
        snapshot = pin(root, final, link=True)
    except BaseException:
        roll_back(final)  # data/<asset> and its pointer as they were
        restore_input_pointers(root, asset)  # and the inputs' pointers
        raise
    forget_input_pointers(root, asset)  # first: recovery never reverts a published stage's inputs
    settle(final)
    pin_seconds = round(time.perf_counter() - started, 3)
    provenance = _provenance(config, snapshot, upstream_ids)
    counts = redact(dict(counts))
    record_snapshot(
        root, {"asset": asset, **provenance, "counts": counts, "config": config.recorded()}
    )
    _record_checks(root, asset, snapshot, results)
    metadata: dict[str, Any] = {
        **provenance,
        "upstream_snapshots": dg.MetadataValue.json(upstream_ids),
        **counts,
        **(extra or {}),
        "annotations": dg.MetadataValue.json(config.recorded()["annotations"]),
        "lineage": dg.MetadataValue.md(lineage_report(root, snapshot)),
        "replay_command": f"corpus replay {snapshot}",
        "pin_seconds": pin_seconds,
        "check_seconds": dg.MetadataValue.json(
            {r.check_name: _plain(r, "seconds") for r in results}
        ),
    }
    yield dg.MaterializeResult(metadata=metadata, check_results=results)


def _pin_all(root: Path, inputs: Mapping[str, Path]) -> dict[str, str]:
    """Pin every input (never relinked: raw files stay as they are); their snapshot ids."""
    return {name: pin(root, path) for name, path in inputs.items()}


def reject(
    project: CorpusProject,
    config: CorpusConfig,
    asset: str,
    upstream_ids: Mapping[str, str],
    counts: Mapping[str, Any],
    results: Sequence[dg.AssetCheckResult],
) -> Iterator[dg.AssetCheckResult]:
    """Quarantine the candidate of ``asset``, report every verdict, then fail the step.

    Raises:
        dg.Failure: naming the failed checks, the snapshot ``data/<asset>`` keeps and where the
            candidate is kept.
    """
    root = project.root_path
    run_id = dg.AssetExecutionContext.get().run_id
    verdicts = [
        {"check": r.check_name, "passed": r.passed, "verdict": _plain(r, "verdict")}
        for r in results
    ]
    record = quarantine(
        root,
        asset,
        candidate_path(project.stage_dir(asset)),
        run_id,
        {
            "upstream_snapshots": dict(upstream_ids),
            "config_hash": config.config_hash(),
            "counts": redact(dict(counts)),
            "checks": verdicts,
        },
    )
    _record_checks(root, asset, record["snapshot_id"], results)
    yield from results
    failed = [v for v in verdicts if not v["passed"]]
    kept = current_snapshot(root, project.stage_dir(asset)) or "nothing (never published)"
    lines = [f"  FAIL {v['check']}: {v['verdict']}" for v in failed]
    raise dg.Failure(
        description=(
            f"{asset}: candidate {record['snapshot_id']} rejected by {len(failed)} of "
            f"{len(results)} checks; data/{asset} still holds {kept}. The candidate is kept in "
            f"{record['path']} (`corpus candidates` lists it; `corpus gc` removes it).\n"
            + "\n".join(lines)
        ),
        metadata={"candidate_snapshot": record["snapshot_id"], "candidate_path": record["path"]},
    )


def _provenance(
    config: CorpusConfig, snapshot: str, upstream_ids: Mapping[str, str]
) -> dict[str, Any]:
    code = code_version()
    provenance = {
        "snapshot_id": snapshot,
        "upstream_snapshots": dict(upstream_ids),
        "config_hash": config.config_hash(),
        "code_version": code.commit,
        "code_dirty": code.dirty,
        "environment_digest": environment_digest(),
    }
    require_provenance(provenance)
    return provenance


def _record_checks(
    root: Path, asset: str, snapshot: str, results: Sequence[dg.AssetCheckResult]
) -> None:
    for result in results:
        record = {
            "asset": asset,
            "check": result.check_name,
            "snapshot_id": snapshot,
            "passed": result.passed,
            "verdict": _plain(result, "verdict"),
        }
        card_verdict = _plain(result, "card_verdict")
        if card_verdict:  # a verdict that does not depend on earlier snapshots, for the card
            record["card_verdict"] = card_verdict
        append_record(root, CHECK, record)


def _plain(result: dg.AssetCheckResult, key: str) -> Any:
    """One of a check result's metadata values as plain Python (Dagster wraps them)."""
    return plain_metadata(dict(result.metadata)).get(key, "")
