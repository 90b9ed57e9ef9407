"""Write-audit-publish: a stage's candidate is checked, then published with DVC or quarantined."""

import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.checks import CheckStatus
from corpus_platform.base.failpoints import armed, failpoint
from corpus_platform.base.files import folder_state
from corpus_platform.base.redact import redact
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import CheckRun, StageChecks, audit, dagster_result, not_applicable
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.store.candidates import quarantine
from corpus_platform.store.datasets import (
    candidate_path,
    candidate_pointer,
    keep_input_pointers,
    promote,
    remove_path,
    restore_input_pointers,
    roll_back,
)
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.openlineage import LineageEmitter, Verdict
from corpus_platform.store.pointers import move_pointer
from corpus_platform.store.provenance import code_version, environment_digest, require_provenance
from corpus_platform.store.publication import begin as begin_publication
from corpus_platform.store.publication import complete as complete_publication
from corpus_platform.store.registry import CHECK, SNAPSHOT, append_record
from corpus_platform.store.snapshots import (
    current_snapshot,
    ensure_snapshot_remote,
    pin,
    pin_in_place,
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


def anchored_to(project: CorpusProject, published: Path | None) -> dict[str, str]:
    """``{"anchored_to": snapshot id}`` of the published folder a stage kept decisions from
    (dedup's kept rows, the split's placement, the statistics fit), recorded with the new
    snapshot (not in its files) so that a replay restores it first; empty when none."""
    if published is None:
        return {}
    snapshot = current_snapshot(project.root_path, published)
    return {"anchored_to": snapshot} if snapshot else {}


def upstream_assets() -> list[str]:
    """The upstream assets of the asset being materialized, from its own definition (``deps``),
    so provenance can never name other assets than the ones the graph draws."""
    context = dg.AssetExecutionContext.get()
    return sorted(key.to_user_string() for key in context.assets_def.dependency_keys)


def publish(
    project: CorpusProject,
    config: CorpusConfig,
    checks: StageChecks,
    counts: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Path] | None = None,
    pins: "Pins | None" = None,
) -> StageOutput:
    """Audit the candidate of the stage ``checks`` judges (written to :func:`candidate_path`),
    then publish it or reject it. Upstream snapshots are those of the asset's own ``deps``.

    Every blocking check of the stage runs on the candidate (:func:`audit`). When none fails, the
    candidate becomes ``data/<asset>``, is pinned with DVC and recorded in the registry, and the
    materialization carries the check results. When any fails, ``data/``, its pointers and the
    registry's snapshots stay exactly as they were: the candidate goes to quarantine
    (:func:`reject`) and the step fails after reporting every verdict.

    ``counts`` (JSON-ready numbers) go to the metadata and the registry; ``extra`` (tables,
    markdown, images) only to the metadata. The metadata carries the snapshot id, the upstream
    snapshot ids, the config hash, the code version and the environment digest; a result missing
    any of them is refused. ``inputs`` (raw files, evaluation sets) are pinned on publication and
    recorded among the upstream snapshots; a stage that knows them before it writes starts their
    pin then (:func:`pinning_inputs`) and passes its ``pins`` instead. Everything recorded is
    redacted first.

    Pinning is off the critical path: while the checks run (they keep the engine's workers
    busy), one background thread pins the inputs, then the candidate itself in place
    (:func:`~corpus_platform.store.snapshots.pin_in_place`: DVC hashes it, links it into the
    cache and pushes it to the remote). Only a candidate that passed and is fully pinned is
    renamed into ``data/<asset>``, and its pointer then moves with it
    (:func:`~corpus_platform.store.pointers.move_pointer`), so no snapshot is ever published
    unpinned. Should the candidate's files have changed since the pin began (no check writes),
    the published folder is pinned again. When a check fails, or a pin does, the candidate's
    pointer is removed and the inputs' pointers are put back as they were (a failed pin removes
    the candidate too; a rejected one goes to quarantine).
    """
    if pins is None:
        with pinning_inputs(project, config, checks.asset, inputs or {}) as started:
            yield from _publish(project, config, checks, counts, extra, started)
    else:
        yield from _publish(project, config, checks, counts, extra, pins)


class Pins:
    """The one background thread that pins a stage's inputs, then its candidate (DVC runs one
    command list at a time); :func:`pinning_inputs` starts it."""

    def __init__(self, root: Path, inputs: Mapping[str, Path]) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pin")
        self.inputs = self.pool.submit(_pin_all, root, inputs)


@contextmanager
def pinning_inputs(
    project: CorpusProject, config: CorpusConfig, asset: str, inputs: Mapping[str, Path]
) -> Iterator[Pins]:
    """Pin ``inputs`` in the background from now on, beside the stage's own work (the raw files
    while the ingest reads them); :func:`publish` then pins the candidate on the same thread.
    Their pointers are recorded first (:func:`~corpus_platform.store.datasets.
    keep_input_pointers`), so that the next build puts them back when this one dies before its
    publication ends; when the stage fails before it, the pin is waited for and they are put
    back at once."""
    root = project.root_path
    ensure_snapshot_remote(root, config.snapshots)
    inputs = dict(sorted(inputs.items()))
    keep_input_pointers(root, asset, inputs.values())  # a killed build gets them back too
    pins = Pins(root, inputs)
    try:
        yield pins
    except BaseException:
        pins.pool.shutdown(wait=True)
        restore_input_pointers(root, asset)  # nothing if the publication put them back already
        raise
    finally:
        pins.pool.shutdown(wait=True)


def _publish(
    project: CorpusProject,
    config: CorpusConfig,
    checks: StageChecks,
    counts: Mapping[str, Any],
    extra: Mapping[str, Any] | None,
    pins: Pins,
) -> StageOutput:
    """:func:`publish`, its inputs' pin started."""
    root, asset = project.root_path, checks.asset
    final = project.stage_dir(asset)
    candidate = candidate_path(final)
    upstream_ids = upstream_snapshots(project, upstream_assets())
    context = dg.AssetExecutionContext.get()
    lineage = LineageEmitter(root)
    _warn(context, lineage.stage_started(context.run_id, asset, upstream_ids))
    failpoint(asset, "written")
    written = folder_state(candidate)
    pinned = pins.inputs
    staged = pins.pool.submit(_pin_candidate, root, asset, candidate)
    try:
        runs = audit(project, checks, candidate)
        checked = time.perf_counter()
    except BaseException:
        wait((pinned, staged))  # the pins end before they are undone
        _unpin(root, asset, final)
        raise
    wait((pinned, staged))
    passed = not any(run.outcome.blocks for run in runs)
    failed_pin = pinned.exception() or staged.exception()
    if not passed or failed_pin is not None:
        _unpin(root, asset, final)
    if not passed:
        yield from reject(project, config, asset, upstream_ids, counts, runs, lineage)
        return
    if failed_pin is not None:  # nothing published: data/ exactly as it was
        remove_path(candidate)
        raise failed_pin
    upstream_ids |= pinned.result()
    _, pin_seconds = staged.result()
    failpoint(asset, "checked")
    unchanged = folder_state(candidate) == written
    promote(final)
    failpoint(asset, "renamed")
    try:
        snapshot = move_pointer(candidate, final) if unchanged else _pin_again(context, root, final)
    except BaseException:
        roll_back(final)  # data/<asset> and its pointer as they were
        restore_input_pointers(root, asset)  # and the inputs' pointers
        raise
    failpoint(asset, "pointed")
    pin_wait_seconds = round(time.perf_counter() - checked, 3)
    provenance = _provenance(config, snapshot, upstream_ids)
    counts = redact(dict(counts))
    entry = {"asset": asset, **provenance, "counts": counts, "config": config.recorded()}
    records = [(SNAPSHOT, entry)] + [(CHECK, r) for r in _check_records(snapshot, runs)]
    # from here a killed build's next build finishes the publication (store/publication.py)
    begin_publication(root, asset, snapshot, records)
    failpoint(asset, "journaled")
    complete_publication(root, asset)  # inputs' pointers kept, aside dropped, records appended
    failpoint(asset, "registered")
    _warn(context, lineage.checks_judged(context.run_id, asset, snapshot, _verdicts(runs)))
    _warn(context, lineage.stage_published(context.run_id, asset, upstream_ids, snapshot))
    metadata: dict[str, Any] = {
        **provenance,
        "upstream_snapshots": dg.MetadataValue.json(upstream_ids),
        **counts,
        **(extra or {}),
        "annotations": dg.MetadataValue.json(config.recorded()["annotations"]),
        "lineage": dg.MetadataValue.md(lineage_report(root, snapshot)),
        "replay_command": f"corpus replay {snapshot}",
        "pin_seconds": pin_seconds,  # DVC's add and push of the candidate, beside the checks
        "pin_wait_seconds": pin_wait_seconds,  # from the checks' end to the pointer's move
        "check_seconds": dg.MetadataValue.json({r.name: r.seconds for r in runs}),
        "checks_not_applicable": dg.MetadataValue.json(not_applicable(runs)),
    }
    results = [result for run in runs if (result := dagster_result(run)) is not None]
    yield dg.MaterializeResult(
        metadata=metadata, check_results=results, data_version=dg.DataVersion(snapshot)
    )


def _pin_all(root: Path, inputs: Mapping[str, Path]) -> dict[str, str]:
    """Pin every input (never relinked: raw files stay as they are); their snapshot ids."""
    return {name: pin(root, path) for name, path in inputs.items()}


def _pin_candidate(root: Path, asset: str, candidate: Path) -> tuple[str, float]:
    """Pin the candidate while its checks read it (DVC's cache and remote then hold it; its
    pointer sits beside it); its snapshot id and the seconds it took. The failpoints lie
    between DVC's add and push, and after the push."""
    started = time.perf_counter()
    added = partial(failpoint, asset, "added") if armed(asset, "added") else None
    snapshot = pin_in_place(root, candidate, added=added)
    failpoint(asset, "pinned")
    return snapshot, round(time.perf_counter() - started, 3)


def _unpin(root: Path, asset: str, final: Path) -> None:
    """A publication that will not happen: the candidate's pointer goes, the inputs' pointers
    come back as they were (the objects pinned stay in DVC's cache and remote for `gc`)."""
    candidate_pointer(final).unlink(missing_ok=True)
    restore_input_pointers(root, asset)


def _pin_again(context: dg.AssetExecutionContext, root: Path, final: Path) -> str:
    """Pin the published folder itself: its files changed after its candidate was pinned."""
    context.log.warning(f"{final.name}: the candidate changed while its checks ran; pinned again")
    candidate_pointer(final).unlink(missing_ok=True)
    return pin(root, final, link=True)


def reject(
    project: CorpusProject,
    config: CorpusConfig,
    asset: str,
    upstream_ids: Mapping[str, str],
    counts: Mapping[str, Any],
    runs: Sequence[CheckRun],
    lineage: LineageEmitter,
) -> Iterator[dg.AssetCheckResult]:
    """Quarantine the candidate of ``asset``, report every verdict, then fail the step.

    Raises:
        dg.Failure: naming the failed checks, the snapshot ``data/<asset>`` keeps and where the
            candidate is kept.
    """
    root = project.root_path
    run_id = dg.AssetExecutionContext.get().run_id
    verdicts = [
        {
            "check": r.name,
            "passed": r.status is CheckStatus.PASSED,
            "status": str(r.status),
            "verdict": r.metadata()["verdict"],
        }
        for r in runs
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
    _record_checks(root, record["snapshot_id"], runs)
    context = dg.AssetExecutionContext.get()
    _warn(context, lineage.checks_judged(run_id, asset, record["snapshot_id"], _verdicts(runs)))
    why = f"candidate {record['snapshot_id']} rejected by its checks"
    _warn(context, lineage.stage_rejected(run_id, asset, upstream_ids, why))
    yield from (result for run in runs if (result := dagster_result(run)) is not None)
    failed = [v for v in verdicts if v["status"] == CheckStatus.FAILED]
    kept = current_snapshot(root, project.stage_dir(asset)) or "nothing (never published)"
    lines = [f"  FAIL {v['check']}: {v['verdict']}" for v in failed]
    raise dg.Failure(
        description=(
            f"{asset}: candidate {record['snapshot_id']} rejected by {len(failed)} of "
            f"{len(runs)} checks; data/{asset} still holds {kept}. The candidate is kept in "
            f"{record['path']} (`corpus candidates` lists it; `corpus gc` removes it).\n"
            + "\n".join(lines)
        ),
        metadata={
            "candidate_snapshot": record["snapshot_id"],
            "candidate_path": record["path"],
            "checks_not_applicable": dg.MetadataValue.json(not_applicable(runs)),
        },
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


def _verdicts(runs: Sequence[CheckRun]) -> list[Verdict]:
    """The checks that judged something, as lineage assertions (not applicable ones are not)."""
    return [
        Verdict(r.name, r.status is CheckStatus.PASSED, r.metadata()["verdict"])
        for r in runs
        if r.status is not CheckStatus.NOT_APPLICABLE
    ]


def _warn(context: dg.AssetExecutionContext, errors: Sequence[str]) -> None:
    for error in errors:
        context.log.warning(f"OpenLineage event not delivered: {error}")


def _record_checks(root: Path, snapshot: str, runs: Sequence[CheckRun]) -> None:
    for record in _check_records(snapshot, runs):
        append_record(root, CHECK, record)


def _check_records(snapshot: str, runs: Sequence[CheckRun]) -> list[dict[str, Any]]:
    """The registry records of the checks that judged ``snapshot``."""
    records = []
    for run in runs:
        record = {
            "asset": run.asset,
            "check": run.name,
            "snapshot_id": snapshot,
            "passed": run.status is CheckStatus.PASSED,
            "status": str(run.status),
            "verdict": redact(run.outcome.metadata())["verdict"],
        }
        card_verdict = run.outcome.details.get("card_verdict")
        if card_verdict:  # a verdict that does not depend on earlier snapshots, for the card
            record["card_verdict"] = card_verdict
        records.append(record)
    return records
