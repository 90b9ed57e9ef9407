"""``corpus croissant RELEASE``: the release's Croissant 1.1 metadata, written beside the release
(``.corpus/releases/<name>/croissant.json``), never inside ``data/`` (a stage folder's bytes are a
function of the data, the config and the code; a release carries a run id and a time).

The release must be the one checked out in ``data/``: its training_shards snapshot is the
published one and every file the manifest lists still has the manifest's MD5. Each file is hashed
(SHA-256) for its ``cr:FileObject``. Beside the JSON-LD a folder ``parquet/`` holds relative links
to the Parquet shards: Croissant resolves a ``cr:FileSet`` below the JSON-LD's folder, and
``samples`` is read from that FileSet (mlcroissant joins no FileObjects into one table).
The facts come from the registry (:func:`corpus_platform.defs.card.card_facts`, the dataset
card's), the JSON-LD from :mod:`corpus_platform.kernels.sharding.croissant`.
"""

from __future__ import annotations

import filecmp
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pydantic import ValidationError

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.files import digest_files, known_md5
from corpus_platform.base.names import (
    FILTERED_DOCUMENTS,
    SHARDS_MANIFEST,
    TRAINING_MIX,
    TRAINING_SHARDS,
)
from corpus_platform.config import FilterConfig
from corpus_platform.defs.card import card_facts
from corpus_platform.kernels.filtering.filters import DOMAIN, FILTERS, LANGUAGE
from corpus_platform.kernels.sharding.croissant import (
    PARQUET_TYPE,
    FileFact,
    FilterFact,
    ReleaseFacts,
    croissant,
    media_type,
)
from corpus_platform.store.datasets import STAGE_ROOT
from corpus_platform.store.releases import find_release
from corpus_platform.store.snapshots import current_snapshot

RELEASES_DIR = Path(".corpus") / "releases"
CROISSANT_FILE = "croissant.json"
LINKS_DIR = "parquet"  # beside croissant.json: links to the Parquet shards (the FileSet)
C4_TEXT = {"c4_lorem_ipsum": "'lorem ipsum'", "c4_curly_braces": "a curly brace"}
DESCRIPTIONS = {
    ".parquet": "Parquet shard {shard} ({samples:,} samples, {tokens:,} tokens).",
    ".tar": "WebDataset shard {shard} ({samples:,} samples, {tokens:,} tokens): <key>.json "
    "metadata and <key>.txt text per sample.",
}


def release_output(
    root: Path, name: str, out: Path | None, file: str
) -> tuple[dict[str, Any], Path]:
    """The release called ``name`` and where to write its ``file`` (``out``, a file or a folder,
    or ``.corpus/releases/NAME/``), refusing an unknown release and a path inside ``data/``."""
    release = find_release(root, name)
    if release is None:
        raise CorpusError(f"no release called {name!r} (`corpus releases` lists them)")
    out = (out or root / RELEASES_DIR / name / file).resolve()
    out = out / file if out.is_dir() else out
    if out.is_relative_to(root / STAGE_ROOT):
        raise CorpusError(
            f"{out}: write outside {STAGE_ROOT}/ (its folders' bytes are a function of the "
            "data, the config and the code; a release carries a run id and a time)"
        )
    return release, out


def default_path(root: Path, name: str) -> Path:
    """Where ``corpus croissant NAME`` writes by default."""
    return root / RELEASES_DIR / name / CROISSANT_FILE


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def filter_rules(filters: dict[str, Any]) -> dict[str, str]:
    """Every quality filter's rule with its recorded threshold, by filter name (the names of
    ``removed_by_filter``), PII drops included. Empty when the recorded section no longer
    validates (a config of other code)."""
    try:
        config = FilterConfig.model_validate(filters)
    except ValidationError:
        return {}
    rules = {}
    for f in FILTERS:
        if f.name in C4_TEXT:
            state = "on" if f.threshold(config) < 1 else "off"
            rule = f"removes a row whose text contains {C4_TEXT[f.name]} ({f.name}: {state})"
        else:
            side = "above" if f.fails_above else "below"
            limit = _number(f.threshold(config))
            rule = f"removes a row whose {f.score} score is {side} {limit}"
        exempt = config.exempt.get(f.name)
        rules[f.name] = rule + (f" (not for source {', '.join(exempt)})" if exempt else "")
    deny, allow = config.domains.deny, config.domains.allow
    rules[DOMAIN] = (
        f"removes a row whose url host is on the deny list [{', '.join(deny)}]"
        + (f" or off the allow list [{', '.join(allow)}]" if allow else "")
        if deny or allow
        else "not applied (no domain lists)"
    )
    rules[LANGUAGE] = (
        f"removes a row whose confidence in {', '.join(config.languages)} is below "
        f"{_number(config.min_language_confidence)} (lingua)"
        if config.languages
        else "not applied (no filters.languages)"
    )
    for kind, action in config.pii.items():
        if action == "drop":
            rules[f"pii_{kind}"] = f"removes a row containing a {kind} (filters.pii: drop)"
    return rules


def filter_facts(config: dict[str, Any], counts: dict[str, Any]) -> tuple[FilterFact, ...]:
    """Each filter's rule and the rows it removed (first failure), in the filters' order; a
    filter the registry counted but the rules do not know comes last, without a rule."""
    rules = filter_rules(config.get("filters", {}))
    removed = counts.get("removed_by_filter", {})
    names = [*rules, *sorted(set(removed) - set(rules))]
    return tuple(
        FilterFact(name, rules.get(name, "rule not recorded"), int(removed.get(name, 0)))
        for name in names
    )


def hash_file(path: Path) -> tuple[str, str]:
    """SHA-256 and MD5 of a file, in one pass; the MD5 this process read of the file as it is
    now (:func:`~corpus_platform.base.files.known_md5`: a shard the build just hashed) is not
    computed again."""
    known = known_md5(path)
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(2**20):
            sha.update(block)
            if known is None:
                md5.update(block)
    return sha.hexdigest(), md5.hexdigest() if known is None else known


def _url(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (POSIX separators), or absolute on another drive."""
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:
        return str(path.resolve())


# SHA-256 and MD5 of each published file of a release, by path (:func:`release_digests`)
Digests = dict[Path, tuple[str, str]]


def listed_files(folder: Path, manifest: dict[str, Any]) -> list[tuple[dict[str, Any], Path]]:
    """Every file the manifest lists (shards, then the card) and the manifest itself, with its
    manifest entry; a file missing fails."""
    entries = [*manifest.get("shards", []), *manifest.get("card", []), {"name": SHARDS_MANIFEST}]
    listed = [(entry, folder / entry["name"]) for entry in entries]
    for _, path in listed:
        if not path.is_file():
            raise CorpusError(f"{path}: listed in {SHARDS_MANIFEST} but missing")
    return listed


def release_digests(root: Path, name: str) -> Digests:
    """SHA-256 and MD5 of every file of release ``name`` (checked out in ``data/``), hashed
    once on every core, for writers of one release's documents to share
    (:func:`export_croissant` and the audit page each hash them otherwise)."""
    release, _ = release_output(root.resolve(), name, None, CROISSANT_FILE)
    folder = checked_out(root.resolve(), release)
    manifest = json.loads((folder / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    paths = [path for _, path in listed_files(folder, manifest)]
    return dict(zip(paths, digest_files(paths, hash_file), strict=True))


def published_files(
    folder: Path, manifest: dict[str, Any], base: Path, digests: Digests | None = None
) -> list[FileFact]:
    """Every file the manifest lists (shards, then the card) and the manifest itself, hashed
    (or their ``digests`` when given, :func:`release_digests`); a file missing or whose MD5
    differs from the manifest's fails."""
    listed = listed_files(folder, manifest)
    paths = [path for _, path in listed]
    if digests is None or any(path not in digests for path in paths):
        digests = dict(zip(paths, digest_files(paths, hash_file), strict=True))
    files = []
    for (entry, path), (sha256, md5) in zip(listed, map(digests.__getitem__, paths), strict=True):
        if "md5" in entry and md5 != entry["md5"]:
            raise CorpusError(
                f"{path}: MD5 {md5} differs from {SHARDS_MANIFEST}'s {entry['md5']}: the file "
                "was changed after it was published; restore it with `corpus checkout`"
            )
        template = DESCRIPTIONS.get(path.suffix, "")
        description = template.format(**entry) if template else _describe(entry["name"])
        size = path.stat().st_size
        files.append(FileFact(entry["name"], _url(path, base), sha256, size, description))
    return files


def _describe(name: str) -> str:
    if name == SHARDS_MANIFEST:
        return "The shards' manifest: every file with its samples, tokens, bytes and MD5."
    if name.endswith(".md"):
        return "The dataset card (datasheet sections filled from the registry)."
    return f"Dataset card chart {name}."


def parquet_schema(paths: list[Path]) -> Any:
    """The Parquet shards' common schema (without pandas metadata)."""
    schemas = [pq.read_schema(p).remove_metadata() for p in paths]
    if any(s != schemas[0] for s in schemas[1:]):
        raise CorpusError("the Parquet shards do not share one schema")
    return schemas[0]


def link_parquet(out: Path, shards: list[Path]) -> str:
    """Relative links ``parquet/<shard>`` beside ``out`` to every Parquet shard (stale links,
    and copies of a shard that a copy of the project made of them, replaced); return the
    FileSet's ``includes`` glob."""
    links = out.parent / LINKS_DIR
    links.mkdir(parents=True, exist_ok=True)
    by_name = {shard.name: shard for shard in shards}
    for old in links.iterdir():
        copied = old.name in by_name and filecmp.cmp(old, by_name[old.name], shallow=False)
        if not old.is_symlink() and not copied:  # a copy of the project may hold the bytes
            raise CorpusError(f"{old}: not a link this command wrote; move it away first")
        old.unlink()
    for shard in shards:
        try:
            (links / shard.name).symlink_to(_url(shard, links))
        except OSError as error:
            raise CorpusError(f"{links}: cannot link the Parquet shards ({error})") from None
    return f"{LINKS_DIR}/*.parquet"


def checked_out(root: Path, release: dict[str, Any]) -> Path:
    """The published shards folder, when it holds ``release``; else a clear error."""
    folder = root / STAGE_ROOT / TRAINING_SHARDS
    published = current_snapshot(root, folder) or "nothing"
    if published != release["snapshot_id"]:
        raise CorpusError(
            f"release {release['name']} is not the chain published in {STAGE_ROOT}/: its "
            f"{TRAINING_SHARDS} snapshot is {release['snapshot_id']}, {STAGE_ROOT}/"
            f"{TRAINING_SHARDS} holds {published}. Run `corpus checkout {release['name']}` first"
        )
    return folder


def export_croissant(
    root: Path, name: str, out: Path | None = None, digests: Digests | None = None
) -> Path:
    """Write release ``name``'s Croissant 1.1 JSON-LD (default :func:`default_path`); return
    where it was written. ``digests``: the files' hashes when already made
    (:func:`release_digests`), else they are hashed here.

    Raises:
        CorpusError: unknown release, a release not checked out in ``data/``, a published file
            changed since, or ``out`` inside ``data/``.
    """
    root = root.resolve()
    release, out = release_output(root, name, out, CROISSANT_FILE)
    folder = checked_out(root, release)
    manifest = json.loads((folder / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    files = published_files(folder, manifest, out.parent, digests)
    shards = [folder / f.path for f in files if media_type(f.path) == PARQUET_TYPE]
    card = card_facts(root, release["snapshots"][TRAINING_MIX])
    facts = ReleaseFacts(
        release=release,
        card=card,
        files=tuple(files),
        schema=parquet_schema(shards),
        parquet_includes=link_parquet(out, shards),
        filters=filter_facts(card.config, card.counts(FILTERED_DOCUMENTS)),
        totals=manifest.get("totals", {}),
    )
    checked_out(root, release)  # a build that published meanwhile makes the hashes stale
    staging = out.with_name(f".{out.name}.tmp")
    text = json.dumps(croissant(facts), indent=2, ensure_ascii=False)
    staging.write_text(text + "\n", encoding="utf-8")
    staging.replace(out)
    return out
