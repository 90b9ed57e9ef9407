"""The ``corpus`` command: prepare the sample corpus, build every dataset, list snapshots."""

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import yaml

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.names import TRAINING_SHARDS
from corpus_platform.config import ConfigError, parse_config
from corpus_platform.sample import write_eval_set, write_recsys_sample, write_sample
from corpus_platform.store.candidates import list_candidates, remove_candidates
from corpus_platform.store.lineage import lineage_report
from corpus_platform.store.lock import (
    BuildLock,
    busy,
    current_holder,
    project_lock,
    wait_until_free,
)
from corpus_platform.store.registry import GC, check_status, list_snapshots, read_records
from corpus_platform.store.releases import find_release, list_releases, record_release
from corpus_platform.store.remotes import dvc_settings
from corpus_platform.store.retention import collect, pin_snapshot, plan_gc
from corpus_platform.store.snapshots import ensure_snapshot_remote


def use_configured_remote(root: Path, config_file: str = "corpus.yaml") -> None:
    """Before a command that reads the remote: make ``snapshots.remote`` of corpus.yaml (when
    set) the project's DVC remote, so a fresh clone with only corpus.yaml, the pointers and the
    registry reaches its snapshots. Only that section is read: restoring an old snapshot must
    not depend on the rest of today's config."""
    path = root / config_file
    if not path.is_file():
        return
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    section = data.get("snapshots") if isinstance(data, dict) else None
    snapshots = parse_config({"snapshots": section or {}}, str(path)).snapshots
    if snapshots.remote is not None:
        ensure_snapshot_remote(root, snapshots)


def cmd_sample(args: argparse.Namespace) -> int:
    """Write the bundled sample corpus (and benchmark set) unless files are already there,
    holding the project lock: a build reading the raw files never sees them rewritten."""
    with _command_lock(Path(args.root).resolve(), args):
        return _sample(args)


def _sample(args: argparse.Namespace) -> int:
    out = Path(args.root) / args.out
    if out.is_dir() and any(out.iterdir()) and not args.force:
        print(f"{out}: already holds raw files; leaving them untouched (use --force to rewrite)")
    elif args.kind == "recsys":
        rows = write_recsys_sample(out, seed=args.seed)
        print(f"wrote {out / 'interactions.csv'}: {rows} rows")
    else:
        for name, rows in write_sample(out, seed=args.seed).items():
            print(f"wrote {out / name}: {rows} rows")
    eval_out = Path(args.root) / args.eval_out if args.eval_out else None
    if eval_out and (args.force or not eval_out.exists()):
        passages = write_eval_set(eval_out, seed=args.seed)
        print(f"wrote {args.eval_out}: {passages} benchmark passages")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Materialize every asset and run every check through Dagster, then print a summary."""
    from corpus_platform.defs.resources import CorpusProject  # dagster: keep `sample` light
    from corpus_platform.runner import run_build

    if not os.environ.get("DAGSTER_HOME"):
        print(
            "DAGSTER_HOME is not set: runs would not be recorded for the UI. "
            "Use `make run`, or export DAGSTER_HOME=$PWD/.dagster first.",
            file=sys.stderr,
        )
        return 2
    root = Path(args.root).resolve()
    CorpusProject(root=str(root), config_file=args.config).load()  # fail fast, naming the field
    use_configured_remote(root, args.config)
    dvc_settings(root).require_credentials()  # an S3 remote: before any stage is built
    while True:
        holder = current_holder(root)
        if holder is not None and not args.wait:
            raise busy(root, holder)
        if holder is not None:
            print(f"waiting for the lock's holder ({holder.describe()})", flush=True)
            wait_until_free(root, poll_seconds=0.5)
        report = run_build(
            root, args.config, progress=True, full=args.full, reingest=tuple(args.reingest)
        )
        # --wait: another holder may take the lock between the wait and the build, which then
        # fails at once and touches nothing; wait again instead of failing
        if not (args.wait and report.refused_by_lock):
            break
    print(report.render())
    return 0 if report.ok else 1


def cmd_snapshots(args: argparse.Namespace) -> int:
    """List recorded snapshots, oldest first."""
    entries = list_snapshots(Path(args.root), args.asset)
    if not entries:
        print("no snapshots recorded yet; run `make run` first")
        return 0
    for e in entries:
        upstream = ", ".join(f"{k}={v[:12]}" for k, v in sorted(e["upstream_snapshots"].items()))
        dirty = "+dirty" if e["code_dirty"] else ""
        print(
            f"{e['asset']:<24} {e['snapshot_id'][:16]:<16} config={e['config_hash'][:12]} "
            f"code={e['code_version'][:12]}{dirty} upstream: {upstream or '-'}"
        )
    return 0


def cmd_candidates(args: argparse.Namespace) -> int:
    """List rejected candidates kept in quarantine, with the checks that failed."""
    records = list_candidates(Path(args.root).resolve())
    if not records:
        print("no rejected candidates")
        return 0
    for record in records:
        failed = [c for c in record["checks"] if check_status(c) == "failed"]
        print(
            f"{record['asset']:<24} {record['snapshot_id'][:16]:<16} run={record['run_id'][:8]} "
            f"{record['path']}  failed: {', '.join(c['check'] for c in failed)}"
        )
        for check in failed:
            print(f"    {check['check']}: {check['verdict']}")
    return 0


def cmd_checkout(args: argparse.Namespace) -> int:
    """Restore a snapshot (and with --with-upstream its chain and inputs) from DVC."""
    from corpus_platform.audit import checkout

    root = Path(args.root).resolve()
    use_configured_remote(root)
    release = find_release(root, args.snapshot)  # a release restores its whole chain
    snapshot = release["snapshot_id"] if release else args.snapshot
    with _command_lock(root, args):
        expected = release.get("snapshots") if release else None
        restored_chain = checkout(root, snapshot, args.with_upstream or bool(release), expected)
        for path, restored in restored_chain:
            print(f"restored {path} to {restored}")
    return 0


def cmd_releases(args: argparse.Namespace) -> int:
    """List the releases: the chains of snapshots that passed together, oldest first."""
    releases = list_releases(Path(args.root).resolve())
    if not releases:
        print("no releases yet: a `corpus run` in which every stage passes records one")
        return 0
    collected = {r["snapshot_id"] for r in read_records(Path(args.root).resolve(), GC)}
    for r in releases:
        dirty = "+dirty" if r["code_dirty"] else ""
        gone = "  (collected by gc)" if r["snapshot_id"] in collected else ""
        print(
            f"{r['name']:<16} {r['created']}  code={r['code_version'][:12]}{dirty} "
            f"config={r['config_hash'][:12]} rows={r['rows']} tokens={r['tokens']} "
            f"shards={r['snapshot_id']}{gone}"
        )
    return 0


def cmd_croissant(args: argparse.Namespace) -> int:
    """Write a release's Croissant 1.1 metadata (the release must be checked out in data/)."""
    from corpus_platform.export import export_croissant  # reads the registry through defs

    out = export_croissant(Path(args.root), args.release, Path(args.out) if args.out else None)
    print(f"wrote {out}: Croissant 1.1 metadata of release {args.release}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    """Write a release's audit page, one HTML file (the release must be checked out in data/)."""
    from corpus_platform.audit_report import write_audit_page  # reads the registry through defs

    out = write_audit_page(Path(args.root), args.release, Path(args.out) if args.out else None)
    print(f"wrote {out}: audit page of release {args.release}")
    return 0


def _show_release_in_ui(root: Path, name: str) -> None:
    """Record a release's audit in the Dagster instance of DAGSTER_HOME (if set), where the UI
    shows it on training_shards."""
    home = os.environ.get("DAGSTER_HOME")
    if not home or not Path(home).is_dir():
        print(
            f"DAGSTER_HOME {'is not set' if not home else f'{home} does not exist'}: the "
            "release's audit is not shown in the UI (`make run` sets it up)"
        )
        return
    import dagster as dg

    from corpus_platform.audit_report import show_in_dagster

    page = show_in_dagster(root, name, dg.DagsterInstance.get())
    print(
        f"wrote {page.parent}: croissant.json and {page.name}; the UI shows the audit on "
        f"{TRAINING_SHARDS}"
    )


def cmd_release(args: argparse.Namespace) -> int:
    """Name the chain of snapshots published now as a release."""
    root = Path(args.root).resolve()
    with _command_lock(root, args):
        record = record_release(root, args.name)
    print(f"release {record['name']}: {TRAINING_SHARDS} {record['snapshot_id']} and its chain")
    _show_release_in_ui(root, record["name"])
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Rebuild a snapshot's chain in a scratch project and compare stage by stage."""
    from corpus_platform.audit import replay

    root = Path(args.root).resolve()
    use_configured_remote(root)
    with _command_lock(root, args):  # it restores objects into DVC's cache
        report = replay(root, args.snapshot)
    print(report.render())
    return 0 if report.ok else 1


def cmd_trace(args: argparse.Namespace) -> int:
    """Print every decision made about one row."""
    from corpus_platform.trace import trace

    print(trace(Path(args.root).resolve(), args.doc_id, args.config))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Say whether the filters kept a row and why not."""
    from corpus_platform.trace import explain

    print(explain(Path(args.root).resolve(), args.doc_id, args.config))
    return 0


def cmd_lineage(args: argparse.Namespace) -> int:
    """Print the lineage report of a snapshot."""
    print(lineage_report(Path(args.root).resolve(), args.snapshot))
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    """Pin a snapshot by name so that gc keeps it and everything it needs."""
    root = Path(args.root).resolve()
    with _command_lock(root, args):
        snapshot = pin_snapshot(root, args.snapshot, args.name)
    print(f"pinned {snapshot} as {args.name!r}")
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    """Delete snapshots beyond the newest N per asset, never a pinned one or what it needs."""
    root = Path(args.root).resolve()
    with _command_lock(root, args):
        return _gc(root, args)


def _gc(root: Path, args: argparse.Namespace) -> int:
    plan = plan_gc(root, args.keep)
    for snapshot, why in plan.keep.items():
        print(f"keep   {snapshot}: {why}")
    for snapshot in plan.delete:
        print(f"delete {snapshot}")
    candidates = list_candidates(root)
    for record in candidates:
        print(f"delete rejected candidate {record['path']} ({record['snapshot_id']})")
    if args.dry_run:
        print("dry run: nothing deleted")
        return 0
    use_configured_remote(root)
    removed = collect(root, plan, [r["snapshot_id"] for r in candidates])
    remove_candidates(root)
    print(
        f"deleted {len(plan.delete)} snapshot(s), {removed} object file(s) from cache and "
        f"remote, {len(candidates)} rejected candidate(s)"
    )
    return 0


def _command_lock(root: Path, args: argparse.Namespace) -> AbstractContextManager[BuildLock]:
    """The project lock for a command that writes ``data/``, pointers, the registry or DVC's
    storage: refused at once naming the holder, or with ``--wait`` taken when it is free."""
    return project_lock(root, f"corpus {args.command}", wait=args.wait, keep_crash_trace=True)


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``corpus``."""
    top = argparse.ArgumentParser(prog="corpus", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    sample = sub.add_parser("sample", help="write the bundled sample corpus")
    sample.add_argument("--out", default="data/raw", help="folder for the raw files")
    sample.add_argument("--seed", type=int, default=7, help="generator seed")
    sample.add_argument("--kind", choices=["text", "recsys"], default="text", help="which corpus")
    sample.add_argument("--eval-out", default=None, help="also write a benchmark set (text kind)")
    sample.add_argument("--force", action="store_true", help="rewrite even if files exist")
    sample.add_argument("--root", default=".", help="project folder (--out is relative to it)")
    sample.add_argument("--wait", action="store_true", help="wait for a running build to finish")
    sample.set_defaults(func=cmd_sample)

    run = sub.add_parser("run", help="build every dataset through Dagster and print a summary")
    run.add_argument("--root", default=".", help="project folder (holds corpus.yaml and data/)")
    run.add_argument("--config", default="corpus.yaml", help="config file, relative to --root")
    run.add_argument("--wait", action="store_true", help="wait for a running build to finish")
    run.add_argument(
        "--full",
        action="store_true",
        help="decide every row from scratch (no kept dedup row, split placement or statistics "
        "fit carried over); the checks still compare with what is published",
    )
    run.add_argument(
        "--reingest",
        action="append",
        default=[],
        metavar="FILE",
        help="read this raw file again although a published batch holds it (relative to "
        "input.path; repeatable): the way to take a raw file that changed after it was ingested",
    )
    run.set_defaults(func=cmd_run)

    snaps = sub.add_parser("snapshots", help="list recorded snapshots")
    snaps.add_argument("asset", nargs="?", help="only this asset")
    snaps.add_argument("--root", default=".", help="project folder")
    snaps.set_defaults(func=cmd_snapshots)

    def add(name: str, func, help_text: str, *positional: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text)
        for arg in positional:
            command.add_argument(arg)
        command.add_argument("--root", default=".", help="project folder")
        command.set_defaults(func=func)
        return command

    def locking(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
        command.add_argument(
            "--wait", action="store_true", help="wait for the project lock's holder to finish"
        )
        return command

    add("candidates", cmd_candidates, "list rejected candidates kept in quarantine")
    add("releases", cmd_releases, "list releases (chains that passed together)")
    add(
        "croissant", cmd_croissant, "write a release's Croissant 1.1 metadata", "release"
    ).add_argument("--out", default=None, help="file to write (.corpus/releases/NAME/...)")
    add("audit", cmd_audit, "write a release's audit page (HTML)", "release").add_argument(
        "--out", default=None, help="file to write (.corpus/releases/NAME/audit.html)"
    )
    locking(add("release", cmd_release, "name the published chain as a release", "name"))
    checkout = locking(
        add("checkout", cmd_checkout, "restore a snapshot or a release from DVC", "snapshot")
    )
    checkout.add_argument(
        "--with-upstream", action="store_true", help="also restore its chain and its raw inputs"
    )
    locking(
        add("replay", cmd_replay, "rebuild a snapshot and compare it stage by stage", "snapshot")
    )
    add("trace", cmd_trace, "every decision made about one row", "doc_id").add_argument(
        "--config", default="corpus.yaml", help="config file, relative to --root"
    )
    add("explain", cmd_explain, "why the filters kept or removed a row", "doc_id").add_argument(
        "--config", default="corpus.yaml", help="config file, relative to --root"
    )
    add("lineage", cmd_lineage, "how a snapshot was made", "snapshot")
    locking(add("pin", cmd_pin, "pin a snapshot by name (gc keeps it)", "snapshot", "name"))
    gc = locking(add("gc", cmd_gc, "delete old snapshots' objects from cache and remote"))
    gc.add_argument("--keep", type=int, required=True, help="newest snapshots to keep per asset")
    gc.add_argument("--dry-run", action="store_true", help="only print the plan")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``corpus`` command."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
