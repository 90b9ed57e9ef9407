"""Raw batches in the Dagster layer: the ``raw_batches`` partitions, and which published batch
files a build may take as they are.

Every raw file is a batch and a partition of ``raw_documents`` and ``filtered_documents`` (a
dynamic partition whose key is the file's path relative to ``input.path``). ``corpus run``, the
new-files sensor and the nightly schedule add a partition per new raw file and remove the
partitions of removed files (:func:`sync_raw_batches`), then run the build over a range of
partitions (:func:`partition_range_tags`); each batch shows in the UI with its materializations.
Every run of the build job names its partitions (Dagster cannot run a partitioned stage below
a partitioned one without a partition range).

Both stages keep every raw batch in files of their own. A build takes a published batch's files
as they are (hard-linked, so they stay byte-identical) when the published snapshot was built with
the same settings and the same code of the stage's family; otherwise every batch is built again.
The stage records its family's code digest in its counts (``stage_code``) so the next build can
tell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from corpus_platform.base.generations import link_file
from corpus_platform.base.shards import batch_part_path, read_manifest
from corpus_platform.config import CorpusConfig
from corpus_platform.defs.generations import STAGE_CODE
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.ingest.readers import list_input_files
from corpus_platform.store.provenance import stage_code_version
from corpus_platform.store.registry import find_snapshot
from corpus_platform.store.snapshots import current_snapshot

RAW_BATCHES = dg.DynamicPartitionsDefinition(name="raw_batches")
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def raw_file_names(corpus: CorpusProject) -> list[str]:
    """Every raw file's path relative to ``input.path``, sorted (the batches there are now)."""
    root = corpus.raw_dir(corpus.load())
    return [f.relative_to(root).as_posix() for f in list_input_files(root)]


def sync_raw_batches(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Make the ``raw_batches`` partitions the raw files ``names``: add a partition per new file
    (in name order, after the existing ones), remove those of files no longer there. Returns the
    partitions in the instance's order."""
    known = instance.get_dynamic_partitions(RAW_BATCHES.name)
    for gone in sorted(set(known) - set(names)):
        instance.delete_dynamic_partition(RAW_BATCHES.name, gone)
    new = [name for name in names if name not in set(known)]
    if new:
        instance.add_dynamic_partitions(RAW_BATCHES.name, new)
    return instance.get_dynamic_partitions(RAW_BATCHES.name)


def partition_range_tags(keys: Sequence[str]) -> dict[str, str]:
    """The run tags that make a run materialize the partitions from ``keys[0]`` to ``keys[-1]``
    (in the instance's order); none for no keys (the run then builds every raw file)."""
    return {RANGE_START: keys[0], RANGE_END: keys[-1]} if keys else {}


def requested_batches(context: dg.AssetExecutionContext) -> set[str] | None:
    """The raw batches a run materializes: its partition keys; None for a run without
    partitions, which builds every raw file."""
    if context.has_partition_key or context.has_partition_key_range:
        return set(context.partition_keys)
    return None


@dataclass(frozen=True)
class PublishedBatches:
    """The batches of a published stage folder a build may keep.

    Attributes:
        folder: The published folder, or None when nothing can be kept.
        snapshot: Its snapshot id.
        batches: Its manifest's ``batches`` (raw file -> record); empty when nothing is kept.
    """

    folder: Path | None = None
    snapshot: str | None = None
    batches: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def published_batches(
    corpus: CorpusProject,
    asset: str,
    config: CorpusConfig,
    settings: Mapping[str, tuple[str, ...]],
    family: str,
    recorded: Mapping[str, Any] | None = None,
) -> PublishedBatches:
    """The published batches of ``asset`` when its snapshot was built with the same
    ``settings`` (see :meth:`CorpusProject.published_alike`), the same code of ``family`` and
    the same ``recorded`` counts (e.g. the blocklist's digest); nothing on a first or ``--full``
    build, a changed setting, changed code or a changed recorded value."""
    folder = corpus.published_alike(asset, config, settings)
    snapshot = current_snapshot(corpus.root_path, folder) if folder else None
    if folder is None or snapshot is None:
        return PublishedBatches()
    counts = find_snapshot(corpus.root_path, snapshot).get("counts", {})
    expected = {STAGE_CODE: stage_code_version(family), **(recorded or {})}
    if any(counts.get(key) != value for key, value in expected.items()):
        return PublishedBatches()
    batches = read_manifest(folder).get("batches") or {}
    return PublishedBatches(folder, snapshot, batches)


def link_batch(published: Path, staging: Path, shard: int, key: str) -> None:
    """Take a published batch file into a candidate folder unchanged (hard-linked)."""
    link_file(batch_part_path(published, shard, key), batch_part_path(staging, shard, key))
