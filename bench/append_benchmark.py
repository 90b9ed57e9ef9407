r"""Appends: what an append of new raw files costs against the base build, through the split
and through the whole graph, and what it writes.

    .bench-venv/bin/python bench/append_benchmark.py --docs 100000 --append 10000 \
        --out BENCHMARKS.md

1. Base: the first ``--docs`` documents of a web-like crawl (``bench/webcorpus.py``, seed
   ``--seed``; the generator is a prefix-stable stream, so the first N of a longer crawl are the
   N-document crawl) in ``--files`` raw jsonl files of consecutive documents (every raw file is
   a batch), configured as ``run_benchmarks.py`` does (engine local with ``--workers``,
   ``num_shards`` for at most ``--shard-docs`` documents per shard at the base size, kept for
   every build: a changed ``num_shards`` rebuilds everything). Built in a fresh process through
   Dagster, every stage (raw_documents to training_shards); seconds per stage from Dagster's
   step events, the load average (``os.getloadavg``) at the start and end of every build.
2. Append A: the next ``--append`` documents of the same crawl (its copies are exact or edited
   copies of recent documents, some of them published) in one new raw file; the same build.
3. Append B, on a copy of the base project made before append A (hard links kept, so the copy's
   files are linked to its DVC cache as the base's are): ``--append`` documents that are only
   copies of published documents (a quarter byte-identical, the rest with single words replaced
   at least 6 words apart, aiming at a word 5-gram Jaccard drawn from 0.5 to 1.0; the Jaccard is
   measured) in one new raw file; the same build.
4. Dedup quality: a third project with every raw file, built from scratch up to
   deduplicated_documents. The clusters of each (``deduplicated_documents/clusters``) are
   scored as ``dedup_benchmark.py`` scores them (pairs inside the clusters against the
   clusters of the generator's exact-Jaccard truth at ``dedup.threshold``), on the documents
   the filters kept (a filtered document cannot be clustered by either build).

Per build it reports (issue "Append without moving") the time through split_documents against
the base's, and ``index_bytes_per_row`` of deduplicated_documents (the band-key index's bytes
on disk per row); (issue "Append-stable outputs") the time of the whole graph against the
base's, and the bytes the build wrote: every file under ``<project>/data`` is listed with its
inode, modification time and size (``os.stat``, no symlink followed) before and after the
build; a file whose (inode, modification time) was not there before was written by the build
(a hard link to a published file was not; a new file reusing a freed inode number, or a file
rewritten in place, was). Written files are split into each stage's data files, "manifests and
card" (``_manifest.json``, ``manifest.json``, ``README.md``, ``training_shards/card/``) and the
DVC pointers (``data/<stage>.dvc``); a path there before whose bytes changed is a rewritten
published file, which an append should have none of (manifests, card and pointers aside). With
the growth of the DVC cache (``.dvc/cache``) and of the project's DVC remote folder
(``.dvc-storage``), as sums of file sizes. Per stage, what each build did: its ``build`` (kind
and generation) and its key counts.

Writes the "bench-append" section of ``--out`` between ``<!-- bench-append:begin -->`` and
``<!-- bench-append:end -->`` (appended when absent). The projects live under ``--work`` and are
deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import stat
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import dagster as dg
import numpy as np
import this_checkout  # noqa: F401  (first: this checkout's corpus_platform)
import yaml
from dedup_benchmark import scores
from run_benchmarks import TRAINING_SHARD_BYTES, machine, shards_for, write_eval_set
from webcorpus import SHINGLE, CorpusSpec, GroundTruth, WebCorpus, jaccard, shingle_set, vocabulary

from corpus_platform import kernel_cache
from corpus_platform.base.checks import CheckStatus
from corpus_platform.base.names import STAGES
from corpus_platform.base.shards import read_shard
from corpus_platform.engine import shutdown_pools
from corpus_platform.runner import run_build
from corpus_platform.store.remotes import DEFAULT_REMOTE, SnapshotError, dvc_settings

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench-append:begin -->", "<!-- bench-append:end -->"
BUILT = list(STAGES)  # base, append A and append B: the whole graph
THROUGH_SPLIT = list(STAGES[:4])  # raw_documents .. split_documents (issue A's time)
SCRATCH_BUILT = list(STAGES[:3])  # the from-scratch comparison: raw_documents .. dedup
SUMMARIES = (
    ("**through split_documents (four stages)**", THROUGH_SPLIT),
    ("**the whole graph (eight stages)**", BUILT),
)
TIME_GOAL = 0.2  # an append's share of the base build's time, at most
INDEX_GOAL = 1000  # index bytes per document, at most (1 KB)
EXACT_SHARE = 0.25  # of append B's copies: byte-identical
HIGH_LOAD = 1.0  # 1-minute load average at a build's start taken as other work running
BUILDS = ("base", "append A", "append B")
APPENDS = BUILDS[1:]
# what _build_child keeps of each stage's metadata (each where the stage records it)
COUNT_KEYS = (
    "rows_in",
    "rows",
    "batches_read",
    "batches_filtered",
    "batches_kept",
    "build",
    "index_bytes_per_row",
    "rows_joining_published_clusters",
    "new_clusters",
    "dropped",
    "append_components",
    "fit",
    "drawn_per_source",
    "new_generation_drawn_per_source",
    "shards",
    "bytes",
    "generations",
    "check_seconds",
)
RECALL_CHECK = "held_out_sample_has_no_train_neighbour"
# files an append writes anew by design (they describe the whole dataset)
MANIFEST_NAMES = frozenset({"_manifest.json", "manifest.json", "README.md"})
CARD_DIR = "training_shards/card/"
MANIFESTS, POINTERS, OTHER = "manifests and card", "DVC pointers", "other files under data/"
BRIDGE = "bridge"  # split_documents' drop reason of a row that would join two splits
Pair = tuple[str, str]
Inventory = dict[str, tuple[int, int, int]]  # path under data/ -> (inode, mtime ns, size)


def raw_name(index: int) -> str:
    """The raw file (batch) ``index`` of the crawl: ``crawl-000.jsonl``, ..."""
    return f"crawl-{index:03d}.jsonl"


def edit_copy(text: str, target: float, rng: np.random.Generator) -> str:
    r"""A copy of ``text`` with single words replaced at least 6 words apart, as many as make
    its word 5-gram Jaccard with ``text`` about ``target`` (each replacement removes 5 of the
    5-grams); punctuation, capitals and whitespace stay."""
    parts = re.split(r"(\s+)", text)  # words at even indices
    n = len(parts[0::2])
    count = round((n - SHINGLE + 1) * (1 - target) / (SHINGLE * (1 + target)))
    count = min(max(1, count), max(1, n // 6))
    slots = rng.choice(max(1, n // 6), size=count, replace=False) * 6 + int(rng.integers(6))
    words = vocabulary(CorpusSpec().vocabulary)
    for slot, rank in zip(slots.tolist(), words.ranks(rng.random(count)).tolist(), strict=True):
        if slot >= n:
            continue
        old = parts[2 * slot]
        new = words.words[rank]
        new = words.words[(rank + 1) % words.size] if new == old.lower() else new
        parts[2 * slot] = re.sub(
            r"\w+", new.capitalize() if old[:1].isupper() else new, old, count=1
        )
    return "".join(parts)


def write_crawl(work: Path, docs: int, append: int, files: int, seed: int) -> dict:
    """Stream ``docs + append`` documents with their truth: the first ``docs`` into ``files``
    raw files under ``work/base``, the rest into ``work/append-a``; then ``append`` copies of
    random base documents into ``work/append-b``. Returns the truth and what was written."""
    for folder in ("base", "append-a", "append-b"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 8])
    chosen = rng.choice(docs, size=append)  # parents of append B (a page can be copied twice)
    wanted = set(chosen.tolist())
    parents: dict[int, dict] = {}
    per_file = -(-docs // files)
    corpus = WebCorpus(seed)
    handles = [(work / "base" / raw_name(i)).open("w", encoding="utf-8") for i in range(files)]
    handles.append((work / "append-a" / raw_name(files)).open("w", encoding="utf-8"))
    text_bytes = 0
    try:
        for index, doc in enumerate(corpus.documents(docs + append)):
            record = doc.record()
            text_bytes += len(doc.text.encode("utf-8")) if index < docs else 0
            handles[index // per_file if index < docs else files].write(
                json.dumps(record, ensure_ascii=False) + "\n"
            )
            if index in wanted:
                parents[index] = record
    finally:
        for handle in handles:
            handle.close()
    similarity = []
    with (work / "append-b" / raw_name(files)).open("w", encoding="utf-8") as out:
        for i, parent in enumerate(chosen.tolist()):
            doc_id = f"doc-{docs + i:08d}"
            copy = {**parents[parent], "id": doc_id, "author": f"mirror-{i:08d}"}
            copy["url"] = f"https://mirror-{i:08d}.example.org/{copy['src']}/{doc_id}"
            if rng.random() >= EXACT_SHARE:
                copy["body"] = edit_copy(copy["body"], 0.5 + 0.5 * rng.random(), rng)
                old, new = shingle_set(parents[parent]["body"]), shingle_set(copy["body"])
                similarity.append(jaccard(old, new))
            out.write(json.dumps(copy, ensure_ascii=False) + "\n")
    return {
        "truth": corpus.truth,
        "megabytes": text_bytes / 1e6,
        "edited": similarity,
        "exact": append - len(similarity),
    }


def write_project(project: Path, raw: list[Path], docs: int, args: argparse.Namespace) -> int:
    """A project whose raw folder holds copies of ``raw``, with the repository's corpus.yaml
    adjusted as run_benchmarks.py does for ``docs`` documents; returns ``num_shards``."""
    shutil.rmtree(project, ignore_errors=True)
    (project / "data" / "raw").mkdir(parents=True)
    for path in raw:
        shutil.copy2(path, project / "data" / "raw" / path.name)
    write_eval_set(project / "data" / "eval" / "benchmark.jsonl", args.seed)
    config = yaml.safe_load((REPO / "corpus.yaml").read_text())
    config["engine"] = {**config.get("engine", {}), "kind": "local", "workers": args.workers}
    config["num_shards"] = shards_for(docs, config["num_shards"], args.shard_docs)
    config["shards"] = {**config.get("shards", {}), "max_bytes": TRAINING_SHARD_BYTES}
    (project / "corpus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return config["num_shards"]


def _build_child(project: Path, assets: list[str], out: Path) -> None:
    """Runs in a fresh process: build ``assets`` of ``project``; write seconds and counts (the
    :data:`COUNT_KEYS` of each stage's metadata, as plain JSON)."""
    start = time.perf_counter()
    report = run_build(project, instance=dg.DagsterInstance.ephemeral(), assets=assets)
    total = time.perf_counter() - start
    shutdown_pools()  # a multiprocessing child's exit would wait for its pool's workers
    counts = {
        stage: {k: meta[k] for k in COUNT_KEYS if k in meta}
        for stage, meta in report.materialized.items()
    }
    result = {
        "ok": report.ok,
        "failures": report.failures
        + [f"{c.asset}.{c.name}" for c in report.checks if c.status is CheckStatus.FAILED],
        "total": total,
        "seconds": report.seconds,
        "counts": json.loads(json.dumps(counts, default=str)),
    }
    out.write_text(json.dumps(result), encoding="utf-8")


def inventory(folder: Path) -> Inventory:
    """Every regular file under ``folder`` (its path relative to it) with its inode,
    modification time and size; symlinks are neither followed nor listed."""
    files: Inventory = {}
    for top, _, names in os.walk(folder):  # does not descend into symlinked folders
        for name in names:
            path = Path(top) / name
            info = os.stat(path, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                files[path.relative_to(folder).as_posix()] = (
                    info.st_ino,
                    info.st_mtime_ns,
                    info.st_size,
                )
    return files


def folder_bytes(folder: Path) -> int | None:
    """The sum of the sizes of the files under ``folder``, or None when it does not exist."""
    return sum(size for *_, size in inventory(folder).values()) if folder.is_dir() else None


def category(path: str) -> str:
    """What a file under data/ is: :data:`MANIFESTS`, a stage's DVC pointer (:data:`POINTERS`),
    a data file of its stage (the stage's name), or :data:`OTHER`."""
    top, _, rest = path.partition("/")
    if path.rsplit("/", 1)[-1] in MANIFEST_NAMES or path.startswith(CARD_DIR):
        return MANIFESTS
    if path.endswith(".dvc"):
        return POINTERS
    return top if rest and top in STAGES else OTHER


def snapshot_md5s(project: Path) -> dict[str, str]:
    """Path under data/ -> MD5 of every file of the snapshots the project's pointers name (each
    ``data/<stage>.dvc`` names a ``.dir`` object in the DVC cache listing its files' MD5s)."""
    found: dict[str, str] = {}
    cache = project / ".dvc" / "cache" / "files" / "md5"
    for pointer in sorted((project / "data").glob("*.dvc")):
        out = yaml.safe_load(pointer.read_text(encoding="utf-8"))["outs"][0]
        md5 = str(out["md5"])
        listing = cache / md5[:2] / md5[2:]
        if not md5.endswith(".dir") or not listing.is_file():
            continue
        for entry in json.loads(listing.read_text(encoding="utf-8")):
            found[f"{out['path']}/{entry['relpath']}"] = entry["md5"]
    return found


def written_files(
    before: Inventory,
    after: Inventory,
    md5s: tuple[dict[str, str], dict[str, str]] | None = None,
) -> dict:
    """What a build wrote under data/, from the inventories before and after it: files (and
    bytes) whose (inode, modification time) is new, in total and per :func:`category`, and the
    published files rewritten (a path there before whose file changed; manifests, card and DVC
    pointers aside, and a file whose bytes the snapshots before and after list with the same
    MD5, ``md5s``: DVC re-links a file to the cache object of identical bytes, e.g. one object
    for eight identical empty shards), at most five of them named."""
    same = md5s or ({}, {})
    known = {(inode, mtime) for inode, mtime, _ in before.values()}
    groups: dict[str, dict[str, int]] = {}
    for path, (inode, mtime, size) in sorted(after.items()):
        if (inode, mtime) in known:
            continue
        known.add((inode, mtime))  # a new file linked at two paths is written once
        group = groups.setdefault(category(path), {"files": 0, "bytes": 0})
        group["files"] += 1
        group["bytes"] += size
    rewritten = sorted(
        path
        for path, (inode, mtime, _) in after.items()
        if path in before
        and before[path][:2] != (inode, mtime)
        and category(path) not in (MANIFESTS, POINTERS)
        and not (path in same[0] and same[0][path] == same[1].get(path))
    )
    return {
        "files": sum(g["files"] for g in groups.values()),
        "bytes": sum(g["bytes"] for g in groups.values()),
        "groups": groups,
        "rewritten": {
            "files": len(rewritten),
            "bytes": sum(after[p][2] for p in rewritten),
            "names": rewritten[:5],
        },
    }


def timed_build(project: Path, assets: list[str]) -> dict:
    """Build ``assets`` of ``project`` in a fresh process; its result with the load averages
    at its start and end and what it wrote (:func:`written_files`, with the DVC cache and the
    DVC remote folder's sizes before and after)."""
    out = project.parent / f"{project.name}-build.json"
    out.unlink(missing_ok=True)
    data, cache, remote = project / "data", project / ".dvc" / "cache", project / DEFAULT_REMOTE
    before, cache_before, remote_before = inventory(data), folder_bytes(cache), folder_bytes(remote)
    md5s_before = snapshot_md5s(project)
    load_start = os.getloadavg()
    child = multiprocessing.get_context("spawn").Process(
        target=_build_child, args=(project, assets, out)
    )
    child.start()
    child.join()
    load_end = os.getloadavg()
    if not out.is_file():
        raise RuntimeError(f"the build of {project} died (exit code {child.exitcode})")
    result = json.loads(out.read_text(encoding="utf-8"))
    md5s = (md5s_before, snapshot_md5s(project))
    written = written_files(before, inventory(data), md5s) | {
        "dvc_cache": [cache_before, folder_bytes(cache)],
        "dvc_remote": [remote_before, folder_bytes(remote)],
    }
    print(
        f"{project.name}: {result['total']:.1f} s, ok {result['ok']}, wrote "
        f"{written['bytes'] / 1e6:,.1f} MB, rewrote {written['rewritten']['files']} files",
        flush=True,
    )
    return {**result, "load": [list(load_start), list(load_end)], "written": written}


def copy_project(source: Path, target: Path) -> None:
    """Copy the project ``source`` to ``target`` keeping symlinks and hard links (its data files
    stay linked to its DVC cache objects, as in ``source``) and modification times."""
    copied: dict[tuple[int, int], str] = {}

    def copy(src: str, dst: str) -> str:
        info = os.stat(src, follow_symlinks=False)
        key = (info.st_dev, info.st_ino)
        if info.st_nlink > 1 and key in copied:
            os.link(copied[key], dst)
        else:
            shutil.copy2(src, dst)
            copied[key] = dst
        return dst

    shutil.copytree(source, target, symlinks=True, copy_function=copy)


def dvc_cache_type(project: Path) -> str:
    """The ``cache.type`` of the project's DVC config (how pinned files link to the cache)."""
    try:
        kind = dvc_settings(project).config["cache"].get("type")
    except (SnapshotError, KeyError) as error:  # the section says it could not be read
        return f"unknown ({error})"
    return ",".join(kind) if isinstance(kind, list | tuple) else str(kind or "DVC's default")


def dedup_quality(project: Path, shards: int, truth: GroundTruth, threshold: float) -> dict:
    """Precision, recall and F1 of the project's published clusters against the truth's
    clusters at ``threshold``, both on the documents the filters kept."""
    stage = project / "data"
    kept: set[str] = set()
    for s in range(shards):
        kept.update(read_shard(stage / "filtered_documents", s, ["doc_id"])["doc_id"].to_pylist())
    members: dict[str, list[str]] = defaultdict(list)
    for s in range(shards):
        table = read_shard(stage / "deduplicated_documents" / "clusters", s)
        for cluster, doc in zip(
            table["cluster_id"].to_pylist(), table["doc_id"].to_pylist(), strict=True
        ):
            members[cluster].append(doc)
    found = {p for group in members.values() for p in combinations(sorted(group), 2)}
    on_kept = GroundTruth([p for p in truth.pairs if p[0] in kept and p[1] in kept])
    expected = on_kept.cluster_pairs(threshold)
    precision, recall, f1 = scores(found, expected)
    return {"precision": precision, "recall": recall, "f1": f1, "kept": sorted(kept)}


def ratio(part: float | None, whole: float | None) -> str:
    """``part / whole`` as a percentage, or a dash when either is missing."""
    return f"{part / whole:.0%}" if part and whole else "-"


def share(part: float | None, whole: float | None) -> float | None:
    """``part / whole``, or None when either is missing or ``whole`` is zero."""
    return part / whole if part is not None and whole else None


def verdict(value: float | None, limit: float) -> str:
    """Whether ``value`` meets the goal "at most ``limit``"."""
    return "not measured" if value is None else "met" if value <= limit else "not met"


def seconds(value: float | None) -> str:
    """Seconds with one decimal, or a dash when the build did not record them."""
    return "-" if value is None else f"{value:,.1f}"


def summed(build: dict, stages: list[str]) -> float:
    """The seconds of ``stages`` in ``build``, summed (a stage not recorded counts 0)."""
    return sum(build["seconds"].get(s, 0.0) for s in stages)


def stage_rows(builds: dict[str, dict]) -> list[str]:
    """The per-stage seconds table: base, append A and B with their share of the base, and the
    sums through split_documents and over the whole graph."""
    lines = [
        "| stage | base s | append A s | A / base | append B s | B / base |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rows = [(s, {n: b["seconds"].get(s) for n, b in builds.items()}) for s in BUILT]
    rows += [(label, {n: summed(b, st) for n, b in builds.items()}) for label, st in SUMMARIES]
    process = {n: b["total"] for n, b in builds.items()}
    rows.append(("whole build process (Dagster start and release included)", process))
    for label, took in rows:
        base, a, b = took.get("base"), took.get("append A"), took.get("append B")
        lines.append(
            f"| {label} | {seconds(base)} | {seconds(a)} | {ratio(a, base)} | "
            f"{seconds(b)} | {ratio(b, base)} |"
        )
    return lines


def number(value: int | None) -> str:
    """A count with thousands separators, or ``?`` when the build did not record it."""
    return "?" if value is None else f"{value:,}"


def build_kind(counts: dict) -> str:
    """A stage's ``build``: ``append, generation 1``, or ``from scratch, generation 0`` with
    its reason; ``-`` for a stage that records none."""
    build = counts.get("build")
    if not isinstance(build, dict):
        return "-"
    text = f"{build.get('kind')}, generation {build.get('generation')}"
    return text if build.get("kind") == "append" else f"{text} ({build.get('reason')})"


def fit_kind(counts: dict) -> str:
    """``kept`` when fitted_statistics kept the published fit, else ``fitted anew`` with why."""
    fit = counts.get("fit")
    if fit is None or str(fit).startswith("kept"):
        return "?" if fit is None else "kept"
    why = re.search(r"\((.*)\)$", str(fit))
    return "fitted anew" + (f" ({why.group(1)})" if why else "")


def drawn(counts: dict, key: str) -> int | None:
    """The draws of a per-source dict (``drawn_per_source``, ...), summed."""
    per_source = counts.get(key)
    return sum(per_source.values()) if isinstance(per_source, dict) else None


def components(counts: dict) -> str:
    """split_documents' ``append_components``: new / joining published / bridging."""
    found = counts.get("append_components")
    if not isinstance(found, dict):
        return "-"
    keys = ("new_components", "joined_published_components", "bridging_components")
    return " / ".join(number(found.get(k, 0)) for k in keys)


def counted(*keys: str) -> Callable[[dict], str]:
    """A cell of counts: the values of ``keys`` in a stage's counts, joined by `` / ``."""
    return lambda c: " / ".join(number(c.get(k)) for k in keys)


def bridges(counts: dict) -> str:
    """split_documents' rows dropped as bridges (every generation)."""
    return number((counts.get("dropped") or {}).get(BRIDGE, 0)) if "dropped" in counts else "?"


def new_draws(counts: dict) -> str:
    """training_mix's draws of the new generation, summed over sources."""
    return number(drawn(counts, "new_generation_drawn_per_source"))


# (stage, what, cell of the stage's counts) of the table of what each build did
ACTIONS = (
    ("raw_documents", "batches read / kept as published", counted("batches_read", "batches_kept")),
    ("filtered_documents", "batches filtered / kept", counted("batches_filtered", "batches_kept")),
    ("filtered_documents", "rows in / out", counted("rows_in", "rows")),
    ("deduplicated_documents", "build", build_kind),
    ("deduplicated_documents", "rows in / out (every row)", counted("rows_in", "rows")),
    (
        "deduplicated_documents",
        "new rows joining published clusters / new clusters",
        counted("rows_joining_published_clusters", "new_clusters"),
    ),
    ("split_documents", "build", build_kind),
    ("split_documents", "rows out (every row)", counted("rows")),
    ("split_documents", "rows dropped as bridges (every generation)", bridges),
    ("split_documents", "components of the append: new / joining published / bridging", components),
    ("fitted_statistics", "fit: kept, or fitted anew", fit_kind),
    ("normalized_splits", "build", build_kind),
    ("normalized_splits", "rows", counted("rows")),
    ("training_mix", "build", build_kind),
    ("training_mix", "rows drawn (every generation)", counted("rows")),
    ("training_mix", "rows drawn from the new generation", new_draws),
    ("training_shards", "build", build_kind),
    ("training_shards", "shards / generations", counted("shards", "generations")),
    ("training_shards", "samples", counted("rows")),
)


def check_rows(builds: dict[str, dict]) -> list[str]:
    """The seconds of each blocking check of split_documents, per build (its metadata's
    ``check_seconds``)."""
    seconds = {
        n: b["counts"].get("split_documents", {}).get("check_seconds", {})
        for n, b in builds.items()
    }
    names = sorted({c for found in seconds.values() for c in found})
    lines = [
        "| check of split_documents | " + " | ".join(f"{n} s" for n in builds) + " |",
        "|---|" + "---:|" * len(builds),
    ]
    for name in names:
        cells = [seconds[n].get(name) for n in builds]
        lines.append(
            f"| {name} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells) + " |"
        )
    return lines


def action_rows(builds: dict[str, dict]) -> list[str]:
    """What each build did per stage: its build (kind and generation) and its key counts."""
    lines = ["| stage | what | " + " | ".join(BUILDS) + " |", "|---|---|---:|---:|---:|"]
    for stage, what, cell in ACTIONS:
        cells = [cell(builds[n]["counts"].get(stage, {})) for n in BUILDS]
        lines.append(f"| {stage} | {what} | " + " | ".join(cells) + " |")
    return lines


def size(value: int | None) -> str:
    """Bytes as MB (kB below 0.1 MB), or a dash when missing."""
    if value is None:
        return "-"
    return f"{value / 1e6:,.1f} MB" if value >= 100_000 else f"{value / 1e3:,.1f} kB"


def files(group: dict | None) -> str:
    """``12.3 MB (45 files)``, or ``none`` for no file."""
    return (
        f"{size(group['bytes'])} ({group['files']:,} files)" if group and group["files"] else "none"
    )


def growth(sizes: list[int | None]) -> str:
    """A folder's growth over a build, with its sizes before and after (a dash when absent)."""
    before, after = sizes
    if after is None:
        return "-"
    return f"+{size(after - (before or 0))} ({size(before or 0)} -> {size(after)})"


def rewritten(written: dict) -> str:
    """The published data files a build rewrote: ``none``, or how many and their bytes."""
    found = written["rewritten"]
    return f"{found['files']:,} files ({size(found['bytes'])})" if found["files"] else "none"


def bytes_rows(builds: dict[str, dict]) -> list[str]:
    """The table of what each build wrote under data/ (per stage, manifests and card, DVC
    pointers), the published data files it rewrote, and the DVC cache and remote's growth."""
    written = {n: builds[n]["written"] for n in BUILDS}
    lines = ["| written | " + " | ".join(BUILDS) + " |", "|---|---:|---:|---:|"]
    rows = [("**under data/, in all**", {n: files(w) for n, w in written.items()})]
    groups = [*BUILT, MANIFESTS, POINTERS, OTHER]
    for group in groups:
        cells = {n: files(w["groups"].get(group)) for n, w in written.items()}
        if group != OTHER or any(c != "none" for c in cells.values()):
            label = f"{group} data files" if group in STAGES else group
            rows.append((label, cells))
    rows += [
        ("**published data files rewritten**", {n: rewritten(w) for n, w in written.items()}),
        ("DVC cache (`.dvc/cache`)", {n: growth(w["dvc_cache"]) for n, w in written.items()}),
        (
            f"DVC remote (`{DEFAULT_REMOTE}`)",
            {n: growth(w["dvc_remote"]) for n, w in written.items()},
        ),
    ]
    lines += [f"| {label} | " + " | ".join(c[n] for n in BUILDS) + " |" for label, c in rows]
    named = [
        f"{n}: {', '.join(f'`{p}`' for p in w['rewritten']['names'])}"
        + (f" and {w['rewritten']['files'] - 5:,} more" if w["rewritten"]["files"] > 5 else "")
        for n, w in written.items()
        if w["rewritten"]["files"]
    ]
    if named:
        lines += ["", "Published data files rewritten (under data/): " + "; ".join(named) + "."]
    return lines


def index_per_row(builds: dict[str, dict]) -> dict[str, float | None]:
    """deduplicated_documents' ``index_bytes_per_row`` after each build (None: not recorded)."""
    return {
        n: builds[n]["counts"].get("deduplicated_documents", {}).get("index_bytes_per_row")
        for n in BUILDS
    }


def index_verdict(builds: dict[str, dict]) -> str:
    """Whether the index holds at most 1 KB per document after every build."""
    found = index_per_row(builds).values()
    return verdict(None if None in found else max(found), INDEX_GOAL)


def index_line(builds: dict[str, dict]) -> str:
    """The sentence on the index bytes per document after each build, with its goal."""
    cells = ", ".join(
        f"{'after ' if n in APPENDS else ''}{n} " + ("?" if v is None else f"**{v:,.1f}**")
        for n, v in index_per_row(builds).items()
    )
    return (
        "Index bytes per document (deduplicated_documents' `index_bytes_per_row`: its "
        "band-key index `index/`, every generation, in bytes on disk per row it read): "
        f"{cells} (goal: at most 1 KB: {index_verdict(builds)})."
    )


def render(run: dict) -> str:
    """The "bench-append" section from a run's plain results (no build, no file access)."""
    builds, quality, args = run["builds"], run["quality"], run["args"]
    through = {n: summed(b, THROUGH_SPLIT) for n, b in builds.items()}
    whole = {n: summed(b, BUILT) for n, b in builds.items()}
    split_share = {n: share(through[n], through["base"]) for n in APPENDS}
    whole_share = {n: share(whole[n], whole["base"]) for n in APPENDS}
    every = {**builds, "scratch": run["scratch"]}
    loads = [f"{n}: {b['load'][0][0]:.2f} -> {b['load'][1][0]:.2f}" for n, b in every.items()]
    high = [n for n, b in every.items() if b["load"][0][0] >= HIGH_LOAD]
    edited = run["edited"]
    failures = [f"{n}: {f}" for n, b in builds.items() for f in b["failures"]]
    gap = quality["append"]["f1"] - quality["scratch"]["f1"]
    same_f1 = (
        "gives the same F1 as a build from scratch."
        if abs(gap) < 5e-5
        else f"differs from a build from scratch by {gap:+.4f} F1."
    )
    written = {n: builds[n]["written"] for n in APPENDS}
    stable = all(w["rewritten"]["files"] == 0 for w in written.values())
    wrote = "; ".join(
        f"{n} wrote {size(w['bytes'])} under data/ "
        f"({size(w['groups'].get(MANIFESTS, {}).get('bytes', 0))} of it manifests and card) "
        + (
            f"and rewrote {w['rewritten']['files']:,} published data files "
            f"({size(w['rewritten']['bytes'])})"
            if w["rewritten"]["files"]
            else "and rewrote no published data file"
        )
        for n, w in written.items()
    )
    cache_type = run["dvc_cache_type"]
    relinks = not cache_type.startswith("hardlink")
    percent = {n: "-" if v is None else f"{v:.0%}" for n, v in split_share.items()}
    whole_percent = {n: "-" if v is None else f"{v:.0%}" for n, v in whole_share.items()}
    command = (
        f".bench-venv/bin/python bench/append_benchmark.py --docs {args['docs']} "
        f"--append {args['append']} --out {args['out']}"
    )
    return "\n".join(
        [
            BEGIN,
            "## Appends: an append against the base build, through the split and through the "
            "whole graph",
            "",
            f"Command: `{command}` (run by `make bench`), {run['date']}.",
            f"Machine: {run['machine']}.",
            f"Crawl: `bench/webcorpus.py`, seed {args['seed']}; base {args['docs']:,} documents "
            f"({run['megabytes']:,.0f} MB of text) in {args['files']} raw jsonl files of "
            f"consecutive documents (each file a batch); corpus.yaml as in the sections above "
            f"(engine local, {args['workers']} workers, {run['shards']} shards, sized for the "
            "base and kept). Every build runs every stage (raw_documents to training_shards) "
            "in a fresh process on an ephemeral Dagster instance. Append A: the next "
            f"{args['append']:,} documents of the crawl in one new file. Append B (on a copy of "
            f"the base project): {args['append']:,} copies of published documents in one new "
            f"file, {run['exact']:,} byte-identical and {len(edited):,} with words replaced "
            f"(measured word 5-gram Jaccard {min(edited, default=0):.2f} to "
            f"{max(edited, default=0):.2f}, mean {np.mean(edited or [0]):.2f}; "
            f"{sum(j >= run['threshold'] for j in edited):,} at or above the threshold).",
            "",
            *stage_rows(builds),
            "",
            "What each build did per stage (`build` from its metadata; counts as recorded, `?` "
            "where the stage records none):",
            "",
            *action_rows(builds),
            "",
            "The checks of split_documents (seconds each, from its metadata; a stage runs as "
            "many checks at once as the engine has workers). The independent recall check, "
            f"`{RECALL_CHECK}`: `split.recall_sample` held-out rows against every train row by "
            "exact Jaccard (an append: the new held-out rows' sample against every train row, "
            "every held-out row's sample against the new train rows; train shingles cached):",
            "",
            *check_rows(builds),
            "",
            "What each build wrote: a file under data/ whose inode (and modification time) was "
            "not there before the build was written by it (a published file an append takes "
            "into its new snapshot is a hard link: not written); a path there before whose "
            "bytes changed (the MD5 its snapshot lists before and after the build; DVC links "
            "identical files to one cache object, which is no rewrite) is a rewritten published "
            "file (manifests, card and DVC pointers aside, which an append writes anew). DVC "
            f"cache and remote: sums of file sizes before -> after. DVC `cache.type`: {cache_type}"
            + (
                " (where DVC relinks pinned files by reflink, every relinked file has a new "
                "inode: the files counted as written or rewritten then overstate what was "
                "written; the cache's growth does not)."
                if relinks
                else "."
            ),
            "",
            *bytes_rows(builds),
            "",
            index_line(builds),
            "",
            f"Dedup quality (threshold {run['threshold']}, pairs inside clusters against the "
            "truth's clusters, on the documents the filters kept; as `dedup_benchmark.py`): "
            f"base + append A F1 **{quality['append']['f1']:.4f}** (precision "
            f"{quality['append']['precision']:.4f}, recall {quality['append']['recall']:.4f}); "
            f"one build of all {args['docs'] + args['append']:,} from scratch (to "
            f"deduplicated_documents, {run['scratch']['total']:,.1f} s) F1 "
            f"**{quality['scratch']['f1']:.4f}** (precision "
            f"{quality['scratch']['precision']:.4f}, recall "
            f"{quality['scratch']['recall']:.4f}); filters kept the same documents in both: "
            f"{'yes' if quality['same_kept'] else 'NO'}.",
            "",
            "Load average (1 minute) at the start -> end of each build: "
            + "; ".join(loads)
            + "."
            + (
                f" Other work was running on this {os.cpu_count()}-core machine (load at or "
                f"above {HIGH_LOAD} at the start of: {', '.join(high)}): these seconds are "
                "pessimistic."
                if high
                else ""
            ),
            "",
            f"Result, append without moving: append A took **{percent['append A']}** of the "
            "base build's time through split_documents (goal: at most 20%: "
            f"{verdict(split_share['append A'], TIME_GOAL)}); append B {percent['append B']}. "
            f"The index holds at most 1 KB per document after every build: "
            f"{index_verdict(builds)}. "
            f"Dedup after the append {same_f1}",
            "",
            f"Result, append-stable outputs: append A took **{whole_percent['append A']}** of "
            "the base build's time for the whole graph (goal: at most 20%: "
            f"{verdict(whole_share['append A'], TIME_GOAL)}); append B "
            f"{whole_percent['append B']}. {wrote[0].upper()}{wrote[1:]} (goal: the new data "
            f"and the manifests only: {'met' if stable else 'not met'})."
            + (" Failures: " + "; ".join(failures) + "." if failures else ""),
            END,
        ]
    )


def put_section(current: str, text: str) -> str:
    """``current`` with its bench-append section replaced by ``text``, or ``text`` appended
    after everything when it has none; nothing else changes."""
    if BEGIN in current and END in current:
        start, stop = current.index(BEGIN), current.index(END) + len(END)
        return current[:start] + text + current[stop:]
    return (current.rstrip("\n") + "\n\n" if current.strip() else "") + text + "\n"


def main() -> int:
    """Write the crawl, build base, append A, append B and the scratch build, write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents of the base")
    parser.add_argument("--append", type=int, default=10_000, help="documents of each append")
    parser.add_argument("--files", type=int, default=10, help="raw files of the base")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3, help="corpus seed")
    parser.add_argument("--shard-docs", type=int, default=12_500)
    parser.add_argument("--work", type=Path, default=Path("/work/tmp/append-bench"))
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--keep", action="store_true", help="keep the projects")
    args = parser.parse_args()
    kernel_cache.warm()  # numba's kernels compiled (first run of a checkout) before any timing
    shutil.rmtree(args.work, ignore_errors=True)
    start = time.perf_counter()
    crawl = write_crawl(args.work / "raw", args.docs, args.append, args.files, args.seed)
    print(f"crawl written in {time.perf_counter() - start:.0f} s", flush=True)
    base_raw = sorted((args.work / "raw" / "base").iterdir())
    file_a, file_b = (
        args.work / "raw" / f / raw_name(args.files) for f in ("append-a", "append-b")
    )
    base, copy, scratch = (args.work / n for n in ("base", "append-b-project", "scratch"))
    shards = write_project(base, base_raw, args.docs, args)
    builds = {"base": timed_build(base, BUILT)}
    copy_project(base, copy)  # before append A touches the base
    shutil.copy2(file_a, base / "data" / "raw" / file_a.name)
    builds["append A"] = timed_build(base, BUILT)
    shutil.copy2(file_b, copy / "data" / "raw" / file_b.name)
    builds["append B"] = timed_build(copy, BUILT)
    write_project(scratch, [*base_raw, file_a], args.docs, args)
    scratch_build = timed_build(scratch, SCRATCH_BUILT)
    threshold = yaml.safe_load((base / "corpus.yaml").read_text())["dedup"]["threshold"]
    quality = {
        name: dedup_quality(project, shards, crawl["truth"], threshold)
        for name, project in (("append", base), ("scratch", scratch))
    }
    quality["same_kept"] = quality["append"].pop("kept") == quality["scratch"].pop("kept")
    run = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "machine": machine(),
        "megabytes": crawl["megabytes"],
        "exact": crawl["exact"],
        "edited": crawl["edited"],
        "shards": shards,
        "threshold": threshold,
        "dvc_cache_type": dvc_cache_type(base),
        "builds": builds,
        "scratch": scratch_build,
        "quality": quality,
    }
    (args.work / "results.json").write_text(json.dumps(run, indent=1), encoding="utf-8")
    text = render(run)
    current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    args.out.write_text(put_section(current, text), encoding="utf-8")
    print(text)
    if not args.keep:
        for project in (base, copy, scratch):
            shutil.rmtree(project, ignore_errors=True)
    return 0 if all(b["ok"] for b in [*builds.values(), scratch_build]) else 1


if __name__ == "__main__":
    sys.exit(main())
