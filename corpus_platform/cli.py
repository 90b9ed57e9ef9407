"""The ``corpus`` command: prepare the sample corpus, build every dataset, list snapshots."""

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from corpus_platform.config import ConfigError, load_config
from corpus_platform.sample import write_eval_set, write_recsys_sample, write_sample
from corpus_platform.store.registry import list_snapshots


def cmd_sample(args: argparse.Namespace) -> int:
    """Write the bundled sample corpus (and benchmark set) unless files are already there."""
    out = Path(args.out)
    if out.is_dir() and any(out.iterdir()) and not args.force:
        print(f"{out}: already holds raw files; leaving them untouched (use --force to rewrite)")
    elif args.kind == "recsys":
        rows = write_recsys_sample(out, seed=args.seed)
        print(f"wrote {out / 'interactions.csv'}: {rows} rows")
    else:
        for name, rows in write_sample(out, seed=args.seed).items():
            print(f"wrote {out / name}: {rows} rows")
    if args.eval_out and (args.force or not Path(args.eval_out).exists()):
        passages = write_eval_set(Path(args.eval_out), seed=args.seed)
        print(f"wrote {args.eval_out}: {passages} benchmark passages")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Materialize every asset and run every check through Dagster, then print a summary."""
    from corpus_platform.runner import run_build  # imports dagster; keep `corpus sample` light

    if not os.environ.get("DAGSTER_HOME"):
        print(
            "DAGSTER_HOME is not set: runs would not be recorded for the UI. "
            "Use `make run`, or export DAGSTER_HOME=$PWD/.dagster first.",
            file=sys.stderr,
        )
        return 2
    root = Path(args.root).resolve()
    load_config(root / args.config)  # fail fast with the config's own error
    report = run_build(root, args.config)
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
    sample.set_defaults(func=cmd_sample)

    run = sub.add_parser("run", help="build every dataset through Dagster and print a summary")
    run.add_argument("--root", default=".", help="project folder (holds corpus.yaml and data/)")
    run.add_argument("--config", default="corpus.yaml", help="config file, relative to --root")
    run.set_defaults(func=cmd_run)

    snaps = sub.add_parser("snapshots", help="list recorded snapshots")
    snaps.add_argument("asset", nargs="?", help="only this asset")
    snaps.add_argument("--root", default=".", help="project folder")
    snaps.set_defaults(func=cmd_snapshots)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``corpus`` command."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
