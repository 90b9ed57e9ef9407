"""``corpus audit RELEASE``: the release's audit page, one self-contained HTML file written beside
the release (``.corpus/releases/<name>/audit.html``, next to ``croissant.json``), never inside
``data/``.

The facts come from where the Croissant export finds them (:mod:`corpus_platform.export`): the
release record, the registry's counts and recorded config (:func:`card_facts`), every check
verdict of every stage snapshot (:func:`latest_checks`), and the published shards, each hashed
and checked against the manifest's MD5; the release must be the one checked out in ``data/``.
Besides: the MD5 of every file of every pinned input (raw folder, evaluation sets, tokenizer)
from its DVC snapshot, compared with the file in the project now, and the code: the release's
commit and dirty flag and, for a dirty release, the SHA-256 of ``git diff HEAD`` of the package
source as it is now. The HTML comes from :mod:`corpus_platform.kernels.sharding.audit_page`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.audit import input_path
from corpus_platform.base.files import digest_files, file_md5
from corpus_platform.base.names import (
    FILTERED_DOCUMENTS,
    RAW_DOCUMENTS,
    SHARDS_MANIFEST,
    STAGES,
    TRAINING_MIX,
    TRAINING_SHARDS,
)
from corpus_platform.defs.card import card_facts
from corpus_platform.export import (
    RELEASES_DIR,
    Digests,
    checked_out,
    export_croissant,
    filter_facts,
    published_files,
    release_digests,
    release_output,
)
from corpus_platform.kernels.sharding.audit_markdown import audit_markdown
from corpus_platform.kernels.sharding.audit_page import (
    NOT_RECORDED,
    AuditFacts,
    CodeFacts,
    SourceFile,
    render_audit_page,
)
from corpus_platform.kernels.sharding.card import CardFacts, StageFacts, mix_licences
from corpus_platform.store.provenance import PACKAGE_DIR, code_version
from corpus_platform.store.registry import RAW_INPUT, check_status, find_snapshot, latest_checks
from corpus_platform.store.snapshots import ObjectCheck

AUDIT_FILE = "audit.html"
LISTING = "(directory listing)"  # the relpath ObjectCheck gives a missing .dir listing


def default_path(root: Path, name: str) -> Path:
    """Where ``corpus audit NAME`` writes by default."""
    return root / RELEASES_DIR / name / AUDIT_FILE


def source_files(
    root: Path, release: dict[str, Any], card: CardFacts
) -> tuple[list[SourceFile], dict[str, str]]:
    """Every file of every pinned input of the release with its MD5 in the DVC snapshot (and
    whether the cache or remote holds it), the rows read from it (raw files) and the MD5 of
    the file in the project now; and each input's path in the project."""
    rows = card.counts(RAW_DOCUMENTS).get("rows_per_file", {})
    licensed = card.counts(RAW_DOCUMENTS).get("licenses_per_file", {})
    objects = ObjectCheck(root)
    files, paths = [], {}
    inputs = sorted(release.get("inputs", {}).items(), key=lambda kv: (kv[0] != RAW_INPUT, kv))
    for name, snapshot in inputs:
        path = input_path(root, card.config, name)
        paths[name] = Path(os.path.relpath(path, root)).as_posix()
        entries, missing = objects.snapshot(snapshot)
        lost = {m.md5 for m in missing}
        if not entries:  # the folder's listing itself is in neither the cache nor the remote
            files.append(SourceFile(name, LISTING, snapshot, None, "", False))
        files_now = [path / relpath if relpath else path for relpath, _ in entries]
        present = [file for file in files_now if file.is_file()]
        hashed = dict(zip(present, digest_files(present, objects.md5_of), strict=True))
        for (relpath, md5), file in zip(entries, files_now, strict=True):
            now = hashed.get(file)
            counted = rows.get(relpath or path.name) if name == RAW_INPUT else None
            source = SourceFile(name, relpath, md5, counted, now, md5 not in lost)
            if name == RAW_INPUT and (found := licensed.get(relpath or path.name)):
                source = replace(
                    source, licence=", ".join(f"{k} ({v:,})" for k, v in found.items())
                )
            files.append(source)
    return files, paths


def _git(*args: str) -> bytes | None:
    """The output of git in the package's checkout (None outside git)."""
    try:
        done = subprocess.run(["git", "-C", str(PACKAGE_DIR), *args], capture_output=True)
    except FileNotFoundError:
        return None
    return done.stdout if done.returncode == 0 else None


def code_facts(root: Path, release: dict[str, Any]) -> CodeFacts:
    """The release's commit and dirty flag, the environment digest of its build, the checkout
    now and, for a dirty release, the SHA-256 of the package source's uncommitted diff now
    (``git diff HEAD -- corpus_platform``, tracked files: the files the dirty flag looks at)."""
    now = code_version()
    digest, changed = "", ()
    if release["code_dirty"] and now.dirty:
        diff = _git("diff", "HEAD", "--binary", "--no-color", "--no-ext-diff", "--", ".")
        names = _git("diff", "HEAD", "--name-only", "--", ".") or b""
        digest = hashlib.sha256(diff).hexdigest() if diff else ""
        changed = tuple(names.decode("utf-8", "replace").splitlines())
    build = find_snapshot(root, release["snapshot_id"])
    return CodeFacts(
        commit=release["code_version"],
        dirty=bool(release["code_dirty"]),
        environment=build.get("environment_digest", NOT_RECORDED),
        commit_now=now.commit,
        dirty_now=now.dirty,
        diff_sha256=digest,
        diff_files=changed,
    )


def stage_checks(root: Path, release: dict[str, Any]) -> tuple[StageFacts, ...]:
    """Every stage snapshot of the release (upstream first, training_shards included) with the
    newest status and verdict of every check evaluated on it."""
    return tuple(
        StageFacts(
            asset,
            snapshot,
            {},
            {
                name: (check_status(record), str(record.get("verdict", "")))
                for name, record in latest_checks(root, asset, snapshot).items()
            },
        )
        for asset, snapshot in sorted(release["snapshots"].items(), key=_stage_order)
    )


def _stage_order(item: tuple[str, str]) -> tuple[int, str]:
    return (STAGES.index(item[0]) if item[0] in STAGES else len(STAGES), item[0])


def audit_facts(
    root: Path, release: dict[str, Any], base: Path, digests: Digests | None = None
) -> AuditFacts:
    """Everything the page says; ``base`` is the page's folder; ``digests`` as for
    :func:`~corpus_platform.export.published_files`.

    Raises:
        CorpusError: the release is not checked out in ``data/`` or a published file changed.
    """
    folder = checked_out(root, release)
    manifest = json.loads((folder / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    files = published_files(folder, manifest, base, digests)  # verifies every MD5 of the manifest
    entries = {e["name"]: e for e in [*manifest.get("shards", []), *manifest.get("card", [])]}
    entries[SHARDS_MANIFEST] = {"format": "json", "md5": file_md5(folder / SHARDS_MANIFEST)}
    card = card_facts(root, release["snapshots"][TRAINING_MIX])
    sources, paths = source_files(root, release, card)
    return AuditFacts(
        release=release,
        card=card,
        sources=tuple(sources),
        input_paths=paths,
        licence=(card.config.get("annotations") or {}).get("license")
        or ", ".join(mix_licences(card))
        or NOT_RECORDED,
        code=code_facts(root, release),
        stages=stage_checks(root, release),
        files=tuple(files),
        entries=entries,
        filters=filter_facts(card.config, card.counts(FILTERED_DOCUMENTS)),
        totals=manifest.get("totals", {}),
    )


def write_audit_page(
    root: Path, name: str, out: Path | None = None, digests: Digests | None = None
) -> Path:
    """Write release ``name``'s audit page (default :func:`default_path`); return where.
    ``digests``: the files' hashes when already made (:func:`~.export.release_digests`).

    Raises:
        CorpusError: unknown release, a release not checked out in ``data/``, a published file
            changed since, or ``out`` inside ``data/``.
    """
    root = root.resolve()
    release, out = release_output(root, name, out, AUDIT_FILE)
    page = render_audit_page(audit_facts(root, release, out.parent, digests))
    checked_out(root, release)  # a build that published meanwhile makes the hashes stale
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.tmp")
    staging.write_text(page, encoding="utf-8")
    staging.replace(out)
    return out


def show_in_dagster(root: Path, name: str, instance: dg.DagsterInstance) -> Path:
    """Write release ``name``'s Croissant file (:func:`~corpus_platform.export.export_croissant`)
    and audit page (:func:`write_audit_page`) beside the release, and record the page's content
    in the Dagster instance as an observation of ``training_shards`` (metadata ``audit``: the
    page as Markdown; ``audit_page`` and ``croissant``: the files' paths), so the UI's asset page
    shows what the page shows. Returns the page's path."""
    digests = release_digests(root, name)  # the files hashed once for both
    croissant = export_croissant(root, name, digests=digests)
    page = write_audit_page(root, name, digests=digests)
    instance.report_runless_asset_event(
        dg.AssetObservation(
            asset_key=TRAINING_SHARDS,
            description=f"audit of release {name}",
            metadata={
                "release": dg.MetadataValue.text(name),
                "audit": dg.MetadataValue.md(audit_markdown(page.read_text(encoding="utf-8"))),
                "audit_page": dg.MetadataValue.path(str(page)),
                "croissant": dg.MetadataValue.path(str(croissant)),
            },
        )
    )
    return page
