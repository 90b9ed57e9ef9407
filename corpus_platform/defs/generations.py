"""Appends in the Dagster layer: whether a stage builds a new generation or from scratch.

A stage after ``filtered_documents`` appends (writes the next generation beside its published
files, :mod:`corpus_platform.base.generations`) when all of these hold, and builds from scratch
otherwise, saying why:

- a snapshot of it is published, built with the same settings (the stage's own list, see
  :meth:`~corpus_platform.defs.resources.CorpusProject.published_alike`) and not ``--full``;
- it was built by the same code of its stage family (``stage_code`` in its counts);
- every upstream unit it took (a raw batch, an upstream generation) is still upstream with the
  same digest: nothing it was built from was removed, re-ingested or rebuilt.

The upstream units that are new form the new generation. Without any, the stage takes its
published files and manifest as they are, which gives the published snapshot again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.files import file_md5
from corpus_platform.base.generations import TextSource, generation_digest
from corpus_platform.base.names import (
    BATCH_DIGESTS,
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    NORMALIZED_SPLITS,
    SPLIT_DOCUMENTS,
    TRAIN,
    batch_key,
)
from corpus_platform.base.shards import MANIFEST, read_json, read_manifest, write_json
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.store.provenance import stage_code_version
from corpus_platform.store.registry import find_snapshot
from corpus_platform.store.snapshots import current_snapshot

STAGE_CODE = "stage_code"  # counts: the digest of the stage family's code that built it
GENERATIONS = "generations"  # manifest: one entry per generation


@dataclass(frozen=True)
class BuildPlan:
    """How a stage builds this time.

    Attributes:
        generation: The generation it writes (0: from scratch).
        reason: Why it builds from scratch, or what it appends.
        published: The published folder it appends to (None: from scratch).
        generations: The published manifest's generations (empty: from scratch).
        new: The upstream units (name -> digest) the new generation takes; every upstream
            unit when it builds from scratch.
    """

    generation: int
    reason: str
    published: Path | None = None
    generations: tuple[Mapping[str, Any], ...] = ()
    new: Mapping[str, str] = field(default_factory=dict)

    @property
    def appends(self) -> bool:
        """Whether the stage adds a generation to a published snapshot."""
        return self.published is not None

    def record(self, folder: Path, rows: int) -> list[dict[str, Any]]:
        """The manifest's generations after this build: the published ones and, when there are
        new upstream units, the new one with its digest (its files must be written)."""
        entries = [dict(g) for g in self.generations]
        if self.new or not self.appends:
            entries.append(
                {
                    "generation": self.generation,
                    "upstream": dict(sorted(self.new.items())),
                    "rows": rows,
                    "digest": generation_digest(folder, self.generation),
                }
            )
        return entries

    def write_manifest(self, folder: Path, counts: Mapping[str, Any], rows: int) -> None:
        """The candidate's ``_manifest.json``: its counts and its generations (:meth:`record`)."""
        write_json({**counts, GENERATIONS: self.record(folder, rows)}, folder / MANIFEST)

    def as_counts(self) -> dict[str, Any]:
        """What the build did, for the metadata and the registry."""
        kind = "append" if self.appends else "from scratch"
        return {"build": {"kind": kind, "generation": self.generation, "reason": self.reason}}


def taken_units(generations: tuple[Mapping[str, Any], ...]) -> dict[str, str]:
    """Every upstream unit the generations took, with its digest."""
    taken: dict[str, str] = {}
    for entry in generations:
        taken.update(entry.get("upstream", {}))
    return taken


def build_plan(
    corpus: CorpusProject,
    asset: str,
    config: CorpusConfig,
    settings: Mapping[str, tuple[str, ...]],
    family: str,
    upstream: Mapping[str, str],
    recorded: Mapping[str, Any] | None = None,
    manifest_name: str = MANIFEST,
) -> BuildPlan:
    """Append or build from scratch (see the module's rules); ``upstream`` is every upstream
    unit there is now, with its digest; ``recorded``: values the published manifest must hold
    for an append (the digest of the statistics a stage applied, the rates it drew at);
    ``manifest_name``: the file holding the stage's generations (``training_shards`` keeps them
    in its ``manifest.json``)."""

    def scratch(reason: str) -> BuildPlan:
        return BuildPlan(0, reason, new=dict(upstream))

    if corpus.full:
        return scratch("a full build (corpus run --full)")
    folder = corpus.published_alike(asset, config, settings)
    snapshot = current_snapshot(corpus.root_path, corpus.stage_dir(asset))
    if snapshot is None:
        return scratch("a first build")
    if folder is None:
        return scratch(f"settings changed since the published snapshot {snapshot}")
    counts = find_snapshot(corpus.root_path, snapshot).get("counts", {})
    if counts.get(STAGE_CODE) != stage_code_version(family):
        return scratch(f"the {family} code changed since the published snapshot {snapshot}")
    if not (folder / manifest_name).is_file():
        return scratch(f"{folder / manifest_name} is missing (`corpus checkout {snapshot}`)")
    manifest = read_json(folder / manifest_name)
    generations = tuple(manifest.get(GENERATIONS) or ())
    differ = sorted(k for k, v in (recorded or {}).items() if manifest.get(k) != v)
    if differ:
        return scratch(f"{', '.join(differ)} changed since the published snapshot {snapshot}")
    if not generations:
        return scratch(f"the published snapshot {snapshot} records no generations")
    taken = taken_units(generations)
    changed = sorted(u for u, digest in taken.items() if upstream.get(u) != digest)
    if changed:
        what = "removed or rebuilt upstream"
        return scratch(f"{len(changed)} of the units it was built from were {what}: {changed[:5]}")
    new = {u: d for u, d in sorted(upstream.items()) if u not in taken}
    number = len(generations)
    reason = (
        f"appends generation {number} ({len(new)} new upstream units) to {snapshot}"
        if new
        else f"nothing new upstream: keeps {snapshot}"
    )
    return BuildPlan(number, reason, folder, generations, new)


def upstream_generations(folder: Path) -> dict[str, str]:
    """The generations of an upstream stage folder as units: number -> digest."""
    entries = read_manifest(folder).get(GENERATIONS) or []
    return {str(entry["generation"]): entry["digest"] for entry in entries}


def appended_generation(
    candidate: Path, published: Path, manifest_name: str = MANIFEST
) -> int | None:
    """The generation a candidate adds to the published folder of its stage when it is an
    append of it (the published generations, then one more), else None (check every row)."""
    if not (published / manifest_name).is_file() or not (candidate / manifest_name).is_file():
        return None
    now = read_json(candidate / manifest_name).get(GENERATIONS) or []
    before = read_json(published / manifest_name).get(GENERATIONS) or []
    if not before or len(now) != len(before) + 1 or now[:-1] != before:
        return None
    return int(now[-1]["generation"])


def changed_published_files(
    candidate: Path, published: Path, rewritten: tuple[str, ...] = (MANIFEST,)
) -> list[str]:
    """The published files that the candidate lacks or holds with other bytes, but the
    top-level files and folders ``rewritten`` (the manifests, a dataset card): none for an
    append, which takes them as they are (a hard link is the same file; a copy is compared
    byte for byte)."""
    changed = []
    for path in sorted(p for p in published.rglob("*") if p.is_file()):
        relative = path.relative_to(published)
        if relative.parts[0] in rewritten:
            continue
        mine = candidate / relative
        if not mine.is_file() or not (mine.samefile(path) or file_md5(mine) == file_md5(path)):
            changed.append(relative.as_posix())
    return changed


def units_behind(folders: list[Path], units: set[str]) -> list[str]:
    """What generations ``units`` of the first stage folder were made from, followed upstream
    through each next folder's generations (``folders`` from downstream to upstream; the last
    one's units, e.g. dedup's raw batches), sorted."""
    for folder in folders:
        entries = read_manifest(folder).get(GENERATIONS) or []
        units = {
            unit
            for entry in entries
            if str(entry["generation"]) in units
            for unit in entry.get("upstream", {})
        }
    return sorted(units)


def dedup_texts(corpus: CorpusProject, generations: Iterable[int] | None = None) -> TextSource:
    """Where the texts of ``deduplicated_documents``' rows are (of its generations
    ``generations``; every one for None): ``filtered_documents``, which stores them, in the raw
    batches those generations took. The stage keeps or drops filtered rows and adds columns, so
    it stores no text of its own.

    Raises:
        CorpusError: A batch the generations took is no longer in ``filtered_documents`` with
            the digest it had (the filter rebuilt since): rebuild the dedup stage first.
    """
    dedup, filtered = corpus.stage_dir(DEDUPLICATED_DOCUMENTS), corpus.stage_dir(FILTERED_DOCUMENTS)
    wanted = None if generations is None else {int(g) for g in generations}
    taken: dict[str, str] = {}
    for entry in read_manifest(dedup).get(GENERATIONS) or []:
        if wanted is None or int(entry["generation"]) in wanted:
            taken.update(entry.get("upstream", {}))
    now = read_manifest(filtered).get(BATCH_DIGESTS) or {}
    stale = sorted(name for name, digest in taken.items() if now.get(name) != digest)
    if stale:
        raise CorpusError(
            f"{dedup}: its rows take their text from {FILTERED_DOCUMENTS}, whose batches "
            f"{stale[:3]} changed or went since it was built; materialize "
            f"{DEDUPLICATED_DOCUMENTS} again (corpus run)"
        )
    return TextSource(filtered, batches=tuple(sorted(map(batch_key, taken))), some_rows=True)


def mix_texts(
    corpus: CorpusProject, mix: Path, generations: Iterable[int] | None = None
) -> TextSource:
    """Where the texts of ``training_mix``'s rows are (of its generations ``generations`` in
    the mix folder ``mix``, a candidate or the published one; every one for None):
    ``split_documents/train``, in the split generations they were drawn from (through
    ``normalized_splits``' generations), each found by doc id. The mix holds the drawn train
    rows and stores no text of its own."""
    train = corpus.stage_dir(SPLIT_DOCUMENTS) / TRAIN
    if generations is None:
        return TextSource(train, some_rows=True)
    units = {str(int(g)) for g in generations}
    behind = units_behind([mix, corpus.stage_dir(NORMALIZED_SPLITS)], units)
    return TextSource(train, tuple(sorted(int(u) for u in behind)), some_rows=True)
