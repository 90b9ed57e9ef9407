"""Pin a published stage folder with DVC and describe it in the materialization metadata."""

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.config import CorpusConfig
from corpus_platform.defs.checks import plain_metadata
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.redact import redact
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.provenance import code_version, environment_digest, require_provenance
from corpus_platform.store.registry import CHECK, append_record, record_snapshot
from corpus_platform.store.snapshots import current_snapshot, ensure_dvc_project, pin

DEFAULT_REMOTE = ".dvc-storage"


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


def publish(
    project: CorpusProject,
    config: CorpusConfig,
    asset: str,
    upstream: Sequence[str],
    counts: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    check_results: Sequence[dg.AssetCheckResult] = (),
    inputs: Mapping[str, Path] | None = None,
) -> dg.MaterializeResult:
    """Pin ``data/<asset>`` with DVC, record it in the registry and build the result.

    ``counts`` (JSON-ready numbers) go to the metadata and the registry; ``extra`` (tables,
    markdown, images) only to the metadata. The metadata carries the snapshot id, the upstream
    snapshot ids, the config hash, the code version and the environment digest; a result missing
    any of them is refused. ``inputs`` (raw files, evaluation sets) are pinned too and recorded
    among the upstream snapshots. Everything recorded is redacted first.
    """
    root = project.root_path
    ensure_dvc_project(root, root / DEFAULT_REMOTE)
    upstream_ids = {
        **upstream_snapshots(project, upstream),
        **{name: pin(root, path) for name, path in sorted((inputs or {}).items())},
    }
    started = time.perf_counter()
    snapshot = pin(root, project.stage_dir(asset), link=True)
    pin_seconds = round(time.perf_counter() - started, 3)
    code = code_version()
    provenance = {
        "snapshot_id": snapshot,
        "upstream_snapshots": upstream_ids,
        "config_hash": config.config_hash(),
        "code_version": code.commit,
        "code_dirty": code.dirty,
        "environment_digest": environment_digest(),
    }
    require_provenance(provenance)
    counts = redact(dict(counts))
    record_snapshot(
        root, {"asset": asset, **provenance, "counts": counts, "config": config.recorded()}
    )
    checks = []
    for result in check_results:
        metadata = redact(plain_metadata(dict(result.metadata)))
        record = {
            "asset": asset,
            "check": result.check_name,
            "snapshot_id": snapshot,
            "passed": result.passed,
        }
        append_record(root, CHECK, {**record, "verdict": metadata.get("verdict", "")})
        checks.append(
            dg.AssetCheckResult(
                passed=result.passed, check_name=result.check_name, metadata=metadata
            )
        )
    metadata: dict[str, Any] = {
        **provenance,
        "upstream_snapshots": dg.MetadataValue.json(upstream_ids),
        **counts,
        **(extra or {}),
        "annotations": dg.MetadataValue.json(config.recorded()["annotations"]),
        "lineage": dg.MetadataValue.md(lineage_report(root, snapshot)),
        "replay_command": f"corpus replay {snapshot}",
        "pin_seconds": pin_seconds,
    }
    return dg.MaterializeResult(metadata=metadata, check_results=checks)
