"""Restore and replay snapshots: the audit trail before a model is trained on a dataset."""

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from corpus_platform.base.errors import CorpusError
from corpus_platform.config import parse_config
from corpus_platform.runner import run_build
from corpus_platform.store.datasets import stage_path
from corpus_platform.store.provenance import code_version
from corpus_platform.store.registry import (
    EVAL_PREFIX,
    RAW_INPUT,
    TOKENIZER_INPUT,
    chain,
    find_snapshot,
    is_input,
    record_admitted,
)
from corpus_platform.store.remotes import dvc_settings
from corpus_platform.store.snapshots import (
    ObjectCheck,
    SnapshotError,
    describe_remote,
    ensure_dvc_project,
    restore,
    share_cache,
)

Target = tuple[Path, str]


def input_path(root: Path, config: dict[str, Any], name: str) -> Path:
    """Where a pinned input (raw folder, evaluation set, tokenizer file) lives in the project at
    ``root``."""
    if name == RAW_INPUT:
        return root / config["input"]["path"]
    if name == TOKENIZER_INPUT:
        return root / config["mix"]["tokenizer"]
    return root / config["decontamination"]["eval_sets"][name.removeprefix(EVAL_PREFIX)]


def stage_targets(root: Path, records: list[dict[str, Any]]) -> list[Target]:
    """(path, snapshot) of every stage in ``records``."""
    return [(stage_path(root, r["asset"]), r["snapshot_id"]) for r in records]


def input_targets(root: Path, records: list[dict[str, Any]]) -> list[Target]:
    """(path, snapshot) of the pinned inputs (raw files, evaluation sets) of ``records``."""
    config = records[-1]["config"]
    inputs = {n: s for r in records for n, s in r["upstream_snapshots"].items() if is_input(n)}
    return [(input_path(root, config, n), s) for n, s in sorted(inputs.items())]


def anchor_targets(root: Path, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(asset, snapshot) of the published snapshots the stages of ``records`` kept decisions
    from (``anchored_to``: dedup's kept rows, the split's placement, the statistics fit)."""
    return [
        (r["asset"], anchor)
        for r in records
        if (anchor := (r.get("counts") or {}).get("anchored_to"))
    ]


def verify_available(root: Path, targets: list[Target]) -> None:
    """Raise before touching anything if one object of any target is missing or corrupted."""
    problems = []
    check = ObjectCheck(root)
    for path, snapshot in targets:
        _, missing = check.snapshot(snapshot)
        problems += [
            f"  {path / m.relpath if m.relpath else path}: {m.md5} {m.problem}" for m in missing
        ]
    if problems:
        raise SnapshotError(
            f"{len(problems)} pinned object(s) unavailable (cache {check.settings.cache}, "
            f"{describe_remote(root)}); nothing was restored:\n" + "\n".join(problems[:20])
        )


def checkout(
    root: Path,
    snapshot_id: str,
    with_upstream: bool = False,
    expected: dict[str, str] | None = None,
) -> list[Target]:
    """Restore a stage (and, with ``with_upstream``, its whole chain and inputs) from DVC.
    ``expected``: the snapshot of every stage the chain must hold (a release's), checked before
    anything is restored."""
    entry = find_snapshot(root, snapshot_id)
    records = chain(root, entry) if with_upstream else [entry]
    if expected is not None:
        found = {r["asset"]: r["snapshot_id"] for r in records}
        if found != expected:
            differ = sorted(a for a in {*found, *expected} if found.get(a) != expected.get(a))
            raise SnapshotError(
                f"the registry's chain of {snapshot_id} differs from the release's snapshots "
                f"for {differ}; nothing was restored (restore a stage with `corpus checkout "
                "SNAPSHOT`)"
            )
    targets = (input_targets(root, records) if with_upstream else []) + stage_targets(root, records)
    verify_available(root, targets)
    for path, snapshot in targets:
        restore(root, snapshot, path)
    return targets


@dataclass(frozen=True)
class StageReplay:
    """One stage of a replay: the pinned snapshot and the rebuilt one."""

    asset: str
    pinned: str
    rebuilt: str | None

    @property
    def identical(self) -> bool:
        """True when the rebuild is byte-identical to the pinned snapshot."""
        return self.rebuilt == self.pinned


@dataclass
class ReplayReport:
    """What a replay rebuilt and whether each stage matched."""

    snapshot: str
    stages: list[StageReplay] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every stage rebuilt identically."""
        return bool(self.stages) and all(s.identical for s in self.stages)

    def render(self) -> str:
        """The report printed by ``corpus replay``."""
        lines = [
            f"replay of {self.snapshot}",
            *self.notes,
            "",
            f"{'stage':<24} {'pinned':<38} result",
        ]
        for s in self.stages:
            verdict = (
                "identical" if s.identical else f"DIFFERENT (rebuilt {s.rebuilt or 'nothing'})"
            )
            lines.append(f"{s.asset:<24} {s.pinned:<38} {verdict}")
        lines += [
            "",
            "result: " + ("every stage rebuilt byte-identically" if self.ok else "FAILED"),
        ]
        return "\n".join(lines)


def plan_change(record: dict[str, Any], rebuilt: dict[str, Any] | None) -> list[str]:
    """Why a stage that rebuilt differently was not built the way its pinned snapshot was (an
    append rebuilt from scratch when, say, the stage's code changed since), one note line;
    nothing when the two builds were of the same kind or either is unknown."""
    pinned = record.get("counts", {}).get("build")
    if not isinstance(pinned, dict) or not isinstance(rebuilt, dict):
        return []
    if pinned.get("kind") == rebuilt.get("kind"):
        return []
    return [
        f"note: {record['asset']} was pinned as {pinned.get('kind')} ({pinned.get('reason')}) "
        f"and rebuilt as {rebuilt.get('kind')}: {rebuilt.get('reason')}"
    ]


def _scratch_project(root: Path, work: Path, config: dict[str, Any]) -> None:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    settings = dvc_settings(root)  # the scratch project uses this project's remote and cache
    ensure_dvc_project(work, settings.require_remote(), enforce=True)
    share_cache(work, settings.cache)
    (work / "corpus.yaml").write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")


def _version(commit: str, dirty: bool) -> str:
    return commit + ("+dirty" if dirty else "")


def replay(root: Path, snapshot_id: str, work: Path | None = None) -> ReplayReport:
    """Rebuild a snapshot's chain from its pinned inputs and recorded config in a scratch
    project, and compare every stage with the pinned snapshot. A stage built after an append
    kept decisions from the snapshot published before it (``anchored_to``): that snapshot is
    restored into the scratch project first, as it was when the stage was built."""
    entry = find_snapshot(root, snapshot_id)
    records = chain(root, entry)
    config = records[-1]["config"]
    if parse_config(config).config_hash() != entry["config_hash"]:
        raise CorpusError(
            f"the recorded config of {entry['snapshot_id']} no longer hashes to "
            f"{entry['config_hash']} (a setting was redacted); replay needs the original "
            "corpus.yaml"
        )
    work = work or root / ".scratch" / f"replay-{entry['snapshot_id'][:12]}"
    anchors = anchor_targets(root, records)
    verify_available(
        root, input_targets(root, records) + [(stage_path(root, a), s) for a, s in anchors]
    )
    _scratch_project(root, work, config)
    for path, snapshot in input_targets(work, records):
        restore(work, snapshot, path)
    for asset, snapshot in anchors:  # the published state an appended build started from
        restore(work, snapshot, stage_path(work, asset))
        record_admitted(work, root, asset, snapshot)
    build = run_build(
        work, instance=dg.DagsterInstance.ephemeral(), assets=[r["asset"] for r in records]
    )
    report = ReplayReport(snapshot=entry["snapshot_id"])
    now = code_version()
    if (now.commit, now.dirty) != (entry["code_version"], entry["code_dirty"]):
        report.notes.append(
            f"note: pinned with code {_version(entry['code_version'], entry['code_dirty'])}, "
            f"replayed with {_version(now.commit, now.dirty)}"
        )
    report.notes += [f"step failed: {f}" for f in build.failures]
    for record in records:
        done = build.materialized.get(record["asset"], {})
        rebuilt = done.get("snapshot_id")
        report.stages.append(StageReplay(record["asset"], record["snapshot_id"], rebuilt))
        if rebuilt != record["snapshot_id"]:
            report.notes += plan_change(record, done.get("build"))
    if report.ok:
        shutil.rmtree(work)
    else:
        report.notes.append(f"the rebuilt project is kept for inspection in {work}")
    return report
