"""Run the build job in this process against the Dagster instance, and summarize the result."""

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.checks import CheckStatus
from corpus_platform.base.errors import CorpusError
from corpus_platform.base.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS, STAGES
from corpus_platform.console import LOGGER_KEY
from corpus_platform.definitions import build_definitions
from corpus_platform.defs.batches import partition_range_tags, raw_file_names, sync_raw_batches
from corpus_platform.defs.checks import plain_metadata
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.schedules import BUILD_JOB
from corpus_platform.defs.stages import STAGE_CHECKS
from corpus_platform.engine import warm_engine
from corpus_platform.store.lock import LOCKED, project_lock
from corpus_platform.store.releases import record_release

LOG_DIR = Path(".corpus") / "logs"
GATING_LOGGER = "dagster._core.execution.plan.active"  # where Dagster tells of ungated checks


@dataclass(frozen=True)
class CheckVerdict:
    """One asset check's outcome."""

    asset: str
    name: str
    status: CheckStatus
    verdict: str

    @property
    def passed(self) -> bool:
        """True for a check that examined something and passed."""
        return self.status is CheckStatus.PASSED

    @property
    def label(self) -> str:
        """PASS, FAIL or n/a, as the summary shows it."""
        return {"passed": "PASS", "failed": "FAIL", "warned": "WARN"}.get(self.status, "n/a")


@dataclass
class BuildReport:
    """What a build materialized and what its checks said."""

    success: bool
    materialized: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[CheckVerdict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    selected: tuple[str, ...] = STAGES
    seconds: dict[str, float] = field(default_factory=dict)
    log_file: Path | None = None
    release: dict[str, Any] | None = None  # recorded after a full build that passed

    @property
    def refused_by_lock(self) -> bool:
        """True when the build did not start because another holder had the project lock."""
        return not self.materialized and any(LOCKED in f for f in self.failures)

    def check(self, name: str) -> CheckVerdict:
        """The verdict of the check called ``name``."""
        return next(c for c in self.checks if c.name == name)

    @property
    def ok(self) -> bool:
        """True when the run succeeded, every stage materialized and no check failed (a check
        with nothing to check is not applicable)."""
        return (
            self.success
            and all(stage in self.materialized for stage in self.selected)
            and not any(c.status is CheckStatus.FAILED for c in self.checks)
        )

    def render(self) -> str:
        """The human summary printed by ``corpus run``."""
        lines = [f"{'stage':<24} {'rows':>8}  snapshot", "-" * 72]
        for stage in self.selected:
            meta = self.materialized.get(stage)
            if meta is None:
                lines.append(f"{stage:<24} {'-':>8}  NOT MATERIALIZED (blocked or failed)")
                continue
            lines.append(f"{stage:<24} {meta.get('rows', ''):>8}  {meta['snapshot_id']}")
        lines += ["", *self._details(), "", "checks:"]
        lines += [f"  {c.label} {c.asset}.{c.name}: {c.verdict}" for c in self.checks]
        lines += ["", *(f"step failed: {f}" for f in self.failures)] if self.failures else [""]
        lines.append(
            "result: "
            + ("every stage built, every applicable check passed" if self.ok else "FAILED")
        )
        if self.release is not None:
            name = self.release["name"]
            lines.append(
                f"release: {name} (`corpus checkout {name}` restores it; `corpus releases` "
                f"lists every release); its croissant.json and audit.html are in "
                f".corpus/releases/{name}/, the audit also on training_shards in the UI"
            )
        if not self.ok and self.log_file is not None:
            lines.append(f"Dagster's full log of this build: {self.log_file}")
        return "\n".join(lines)

    def _builds(self) -> list[str]:
        """What an append did per stage: batches read, generations appended, stages built from
        scratch and why (nothing for a first build)."""
        meta, parts = self.materialized, []
        raw = meta.get("raw_documents", {})
        if raw.get("batches_kept"):
            total = raw["batches_read"] + raw["batches_kept"]
            parts.append(f"raw_documents read {raw['batches_read']} of {total} raw batches")
        builds = {s: m["build"] for s, m in meta.items() if isinstance(m.get("build"), dict)}
        appended = [
            f"{stage} (generation {b['generation']})"
            for stage, b in builds.items()
            if b["kind"] == "append"
        ]
        if appended:
            parts.append("appended: " + ", ".join(appended))
        rebuilt = [
            f"{s} from scratch ({b['reason']})"
            for s, b in builds.items()
            if b["kind"] != "append" and b["reason"] != "a first build"
        ]
        return [f"builds: {'; '.join(parts + rebuilt)}"] if parts or rebuilt else []

    def _details(self) -> list[str]:
        meta = self.materialized
        out = self._builds()
        if "filtered_documents" in meta:
            removed = meta["filtered_documents"].get("removed_by_filter", {})
            out.append(
                "removed per filter: "
                + (", ".join(f"{k} {v}" for k, v in removed.items()) or "none")
            )
        if "deduplicated_documents" in meta:
            d = meta["deduplicated_documents"]
            out.append(
                f"duplicate clusters: {d.get('duplicate_clusters')} "
                f"({d.get('rows_in_clusters')} rows in clusters, "
                f"{d.get('rows_in', 0) - d.get('rows', 0)} dropped)"
            )
        if "split_documents" in meta:
            sizes = meta["split_documents"].get("split_sizes", {})
            dropped = meta["split_documents"].get("dropped") or {}
            total = sum(sizes.values()) or 1
            out.append(
                "split sizes: "
                + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in sizes.items())
                + (
                    f" (dropped: {', '.join(f'{k} {v}' for k, v in dropped.items())})"
                    if dropped
                    else ""
                )
            )
            through = meta["split_documents"].get("links_through_dropped_rows")
            if through and (through["cluster_memberships"] or through["similar_pairs"]):
                out.append(
                    f"links through dropped duplicates: {through['cluster_memberships']} "
                    f"cluster memberships, {through['similar_pairs']} similar pairs ("
                    + ("joining entities" if through["join_entities"] else "left out")
                    + ", split.link_dropped)"
                )
            short = meta["split_documents"].get("links_too_short_to_leak")
            if short and (short["cluster_memberships"] or short["similar_pairs"]):
                out.append(
                    f"links too short to leak (under {short['min_link_shingles']} word n-grams, "
                    f"split.min_link_shingles): {short['duplicate_clusters']} duplicate clusters, "
                    f"{short['similar_pairs']} similar pairs left out"
                )
        if "training_mix" in meta:
            out.append(
                f"training mix draws per source: {meta['training_mix'].get('drawn_per_source')}"
            )
            if "drawn_tokens_per_source" in meta["training_mix"]:
                tokens = meta["training_mix"]["drawn_tokens_per_source"]
                out.append(f"training mix tokens per source: {tokens}")
        if "training_shards" in meta:
            shards = meta["training_shards"]
            size = {k: f"{v / 1e6:,.1f} MB" for k, v in (shards.get("bytes") or {}).items()}
            out.append(
                f"training shards: {shards.get('shards')} shards, {shards.get('rows')} samples, "
                f"{shards.get('tokens')} tokens ({', '.join(f'{k} {v}' for k, v in size.items())})"
            )
        return out


def _root_cause(error: Any) -> str:
    """The innermost error message: the user's problem, not Dagster's wrapper."""
    if error is None:
        return "unknown error"
    while error.cause is not None:
        error = error.cause
    return error.message.strip()


def _not_applicable(asset: str, metadata: dict[str, Any]) -> list[CheckVerdict]:
    """The checks of ``asset`` that had nothing to check, from its materialization's or its
    rejection's metadata (Dagster records no result for them)."""
    return [
        CheckVerdict(asset, name, CheckStatus.NOT_APPLICABLE, verdict)
        for name, verdict in (metadata.get("checks_not_applicable") or {}).items()
    ]


def summarize(result: dg.ExecuteInProcessResult) -> BuildReport:
    """Collect materializations and check evaluations from a finished run."""
    report = BuildReport(success=result.success)
    for event in result.all_events:
        if event.is_step_materialization:
            materialization = event.step_materialization_data.materialization
            asset = materialization.asset_key.to_user_string()
            report.materialized[asset] = meta = plain_metadata(materialization.metadata)
            report.checks += _not_applicable(asset, meta)
        elif event.is_step_success:
            report.seconds[event.step_key] = event.event_specific_data.duration_ms / 1000.0
        elif event.is_step_failure:
            failure = event.step_failure_data
            report.failures.append(f"{event.step_key}: {_root_cause(failure.error)}")
            rejected = failure.user_failure_data  # a rejected candidate's dg.Failure
            if rejected is not None and event.step_key in STAGES:  # a stage's op is its name
                meta = plain_metadata(rejected.metadata)
                report.checks += _not_applicable(event.step_key, meta)
        elif event.is_run_failure and getattr(event.event_specific_data, "error", None):
            report.failures.append(f"run: {_root_cause(event.event_specific_data.error)}")
    for evaluation in result.get_asset_check_evaluations():
        meta = plain_metadata(evaluation.metadata)
        report.checks.append(
            CheckVerdict(
                asset=evaluation.asset_key.to_user_string(),
                name=evaluation.check_name,
                status=CheckStatus.PASSED
                if evaluation.passed
                else CheckStatus.WARNED
                if evaluation.severity == dg.AssetCheckSeverity.WARN
                else CheckStatus.FAILED,
                verdict=str(meta.get("verdict", "")),
            )
        )
    order = {(s.asset, name): i for s in STAGE_CHECKS.values() for i, name in enumerate(s.names)}
    report.checks.sort(key=lambda c: (STAGES.index(c.asset), order.get((c.asset, c.name), 0)))
    return report


class _UngatedCheckNotice(logging.Filter):
    """Drops Dagster's notice that a blocking check emitted no result: here that is a check with
    nothing to check (not applicable), which the summary already lists as ``n/a``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "emitted no result" not in record.getMessage()


_NOTICE_FILTER = _UngatedCheckNotice()


def batch_tags(
    project: CorpusProject, instance: dg.DagsterInstance, assets: list[str] | None
) -> dict[str, str]:
    """Run tags that materialize every raw batch's partition, after making the partitions the raw
    files there are now; none when the run holds no partitioned stage or the raw folder cannot be
    listed (``raw_documents`` then reports why)."""
    if assets and not set(assets) & {RAW_DOCUMENTS, FILTERED_DOCUMENTS}:
        return {}
    try:
        names = raw_file_names(project)
    except (CorpusError, ValueError, OSError):
        return {}
    return partition_range_tags(sync_raw_batches(instance, names))


def _warm(project: CorpusProject) -> None:
    """Start the engine's workers while Dagster starts the run (:func:`warm_engine`); a config
    that does not load starts nothing (the run reports its error)."""
    try:
        engine = project.load().engine
    except (CorpusError, ValueError, OSError):
        return
    warm_engine(engine.kind, engine.workers)


def run_build(
    root: Path,
    config_file: str = "corpus.yaml",
    instance: dg.DagsterInstance | None = None,
    assets: list[str] | None = None,
    progress: bool = False,
    full: bool = False,
    reingest: tuple[str, ...] = (),
) -> BuildReport:
    """Execute the build job for the project at ``root`` and summarize it.

    Args:
        root: Project folder holding the config and ``data/``.
        config_file: Config path relative to ``root``.
        instance: Dagster instance recording the run; ``DagsterInstance.get()`` (DAGSTER_HOME)
            when omitted.
        assets: Only these assets (and their checks); every asset when omitted.
        progress: Print one line per stage as it starts and ends (``corpus run``). Dagster's
            own log always goes to a file under ``.corpus/logs/`` (``BuildReport.log_file``).
        full: Decide every row from scratch (``corpus run --full``, ``CorpusProject.full``).
        reingest: Raw files to read again although published (``corpus run --reingest``).
    """
    logging.getLogger(GATING_LOGGER).addFilter(_NOTICE_FILTER)  # once: filters are a set
    project = CorpusProject(
        root=str(root), config_file=config_file, full=full, reingest=list(reingest)
    )
    _warm(project)
    defs = build_definitions(project)
    log_file = root / LOG_DIR / f"build-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    logger_config = {"log_file": str(log_file), "progress": progress}
    job = defs.resolve_job_def(BUILD_JOB)
    instance = instance or dg.DagsterInstance.get()
    result = job.execute_in_process(
        instance=instance,
        raise_on_error=False,
        asset_selection=[dg.AssetKey(name) for name in assets] if assets else None,
        run_config={"loggers": {LOGGER_KEY: {"config": logger_config}}},
        tags=batch_tags(project, instance, assets),
    )
    report = summarize(result)
    report.log_file = log_file
    report.selected = tuple(s for s in STAGES if not assets or s in assets)
    if report.ok and report.selected == STAGES:
        with project_lock(root, f"release of run {result.run_id}", wait=True):
            report.release = record_release(root, run_id=result.run_id)
            from corpus_platform.audit_report import show_in_dagster  # replays import runner

            show_in_dagster(root, report.release["name"], instance)
    return report
