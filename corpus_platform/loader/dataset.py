"""An iterable dataset over a training_shards folder, resumable exactly and elastically.

Reads the Parquet shards listed in ``manifest.json`` through fsspec: a local path, a
``file://`` URL, or any fsspec URL or filesystem (``s3://`` with s3fs, or a DVC repository's
pinned data via ``dvc.api.DVCFileSystem`` passed as ``filesystem=``). Only the row groups that
hold the reader's samples are read.

Order and splitting: :mod:`corpus_platform.loader.order`. The epoch's global order does not
depend on the world size or the worker count, each rank reads the positions congruent to its
rank from where the run started, and the state is a single number, the global samples
consumed: after ``t`` samples on each of ``W`` ranks the ranks together have read exactly the
first ``W * t`` positions. So a run resumed with another world size (or worker count) goes on
with the next position of the same global order: nothing lost, nothing read twice (this is the
approach of MosaicML streaming). The shuffle buffer is a block of the global order, permuted by
the seed, the epoch and the block's index, so no buffer contents need saving.

Generations. A folder grown by appends lists its generations in the manifest (``generations``:
each with the numbers of its shards; a manifest without them is one generation 0 holding every
shard). The epoch's order is each generation's own order laid end to end
(:class:`~corpus_platform.loader.order.GenerationalOrder`), so an append only adds positions
after the old ones. The state records each generation's fingerprint (number, samples, MD5 of
its Parquet entries), and a state whose generations are a prefix of the dataset's resumes on
it: the rest of the old generations' part of the epoch, then the new generations. A state of
rebuilt shards (generations not a prefix) or of another seed, shuffle or shuffle block is
refused. States of version 1 (before generations) resume on the unchanged shards only.

With torch installed the dataset is a ``torch.utils.data.IterableDataset`` and reads the
DataLoader worker from ``torch.utils.data.get_worker_info()``; without torch it is a plain
iterable and the worker comes from ``worker_id`` / ``num_workers`` (or the environment
variables ``CORPUS_LOADER_WORKER_ID`` / ``CORPUS_LOADER_NUM_WORKERS``). Rank and world size come
from the arguments or from ``RANK`` / ``WORLD_SIZE`` (set by torchrun).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.loader.generations import (
    describe_fingerprint,
    fingerprint_key,
    manifest_generations,
)
from corpus_platform.loader.order import Consumer, GenerationalOrder

try:  # torch is optional: the loader works without it
    from torch.utils.data import IterableDataset as _Base
    from torch.utils.data import get_worker_info as _torch_worker_info
except ImportError:
    _Base = object  # type: ignore[assignment,misc]
    _torch_worker_info = None

STATE_VERSION = 2  # 2: records the generations; 1 (no generations) still loads, unchanged shards
OPEN_FILES = 8  # shards a reader keeps open (a block spans one or two)
TO_PYTHON_ROWS = 256  # rows made into Python dicts at a time
ROW_GROUP_HINT = 1024  # rows per row group of training_shards' Parquet files


class ShardDataset(_Base):  # type: ignore[misc,valid-type]
    """Samples (dicts of the Parquet columns) of a training_shards folder, in the epoch's
    seeded global order, this rank's and this worker's share of them.

    Args:
        path: The training_shards folder: a path or an fsspec URL (``file:///...``).
        seed: Salts the shard order and the shuffle blocks (>= 0).
        epoch: The first epoch to read; each finished pass moves to the next.
        shuffle: False reads the shards in manifest order (the writer's seeded order), unshuffled.
        shuffle_block: Samples per shuffle block (the bounded shuffle buffer).
        batch_size: The DataLoader batch size, the unit dealt to its workers (see the module).
        rank, world_size: This process's data-parallel rank (default ``RANK`` / ``WORLD_SIZE``).
        worker_id, num_workers: Without torch: this reader's worker (default: the environment,
            or 0 of 1). With torch they override ``get_worker_info()``.
        columns: Columns to read (default all).
        filesystem: An fsspec filesystem holding ``path`` (default: from the URL).
        storage_options: Options for the filesystem made from the URL.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        seed: int = 0,
        epoch: int = 0,
        shuffle: bool = True,
        shuffle_block: int = 8192,
        batch_size: int = 1,
        rank: int | None = None,
        world_size: int | None = None,
        worker_id: int | None = None,
        num_workers: int | None = None,
        columns: list[str] | None = None,
        filesystem: fsspec.AbstractFileSystem | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        if filesystem is None:
            filesystem, root = fsspec.core.url_to_fs(os.fspath(path), **(storage_options or {}))
        else:
            root = os.fspath(path)
        self.fs, self.root = filesystem, root.rstrip("/")
        with self.fs.open(self._path(SHARDS_MANIFEST), "rb") as handle:
            raw = handle.read()
        self.dataset_md5 = hashlib.md5(raw, usedforsecurity=False).hexdigest()
        self.generations = manifest_generations(json.loads(raw))
        entries = [e for generation in self.generations for e in generation.entries]
        self.names = tuple(e["name"] for e in entries)
        self.sizes = tuple(int(e["samples"]) for e in entries)
        self.file_bytes = tuple(int(e["bytes"]) for e in entries)
        self.seed, self.shuffle, self.shuffle_block = seed, shuffle, shuffle_block
        self.batch_size, self.columns = batch_size, columns
        self.rank, self.world_size = rank, world_size
        self.worker_id, self.num_workers = worker_id, num_workers
        self._epoch, self._start, self._consumed = epoch, 0, 0
        self.order(epoch)  # validates seed, epoch and shuffle_block now

    @property
    def num_samples(self) -> int:
        """Samples in one epoch (all ranks)."""
        return int(sum(self.sizes))

    @property
    def epoch(self) -> int:
        """The epoch being read (or the next to be read)."""
        return self._epoch

    def order(self, epoch: int) -> GenerationalOrder:
        """The global order of ``epoch``: each generation's, one after the other."""
        counts = tuple(len(g.entries) for g in self.generations)
        return GenerationalOrder(
            self.names, self.sizes, counts, self.seed, epoch, self.shuffle_block, self.shuffle
        )

    def set_epoch(self, epoch: int) -> None:
        """Read ``epoch`` from its beginning next, unless it is the epoch in progress (as after
        :meth:`load_state_dict`), which goes on where it stopped. With DataLoader workers call
        it before each epoch (the workers' copies never report back), and do not make the
        workers persistent: they would keep the epoch they were started with."""
        if epoch != self._epoch:
            self._epoch, self._start, self._consumed = epoch, 0, 0

    def consumer(self) -> Consumer:
        """This reader: its rank and worker, where the current pass starts."""
        rank, world = self._distributed()
        worker, workers = self._worker()
        return Consumer(rank, world, worker, workers, self.batch_size, self._start)

    def __len__(self) -> int:
        """Samples this rank (all its workers) reads from the current position to the end of
        the epoch."""
        return self.consumer().rank_samples(self.num_samples)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._start = self._samples_seen(self._consumed)
        if self.num_samples and self._start >= self.num_samples:  # that epoch was read through
            self._epoch, self._start = self._epoch + 1, 0
        self._consumed = 0
        order, consumer = self.order(self._epoch), self.consumer()
        reader = _ShardReader(self, order)
        try:
            for positions in order.consumer_blocks(consumer):
                for sample in reader.samples(positions):
                    self._consumed += 1
                    yield sample
        finally:
            reader.close()
        self._epoch, self._start, self._consumed = self._epoch + 1, 0, 0  # a whole pass read

    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """Where the epoch stands: the global samples consumed by all ranks together.

        The state holds ``version``, ``epoch``, ``samples_seen`` (global positions of the epoch
        consumed), the order's ``seed``, ``shuffle`` and ``shuffle_block``, the dataset's
        ``num_samples`` and ``dataset_md5`` (the MD5 of its manifest; informational from
        version 2 on) and ``generations``, each generation's :meth:`Generation.fingerprint`.
        A state that has consumed the whole epoch without the pass ending (saved at its last
        step) keeps the epoch: if shards are appended before it is loaded, the new generations'
        part of that epoch is still read; without an append, loading moves to the next epoch.

        Args:
            consumed: Samples this rank consumed since the current pass began (every rank the
                same: ``steps * batch_size`` in data-parallel training). Needed with DataLoader
                workers, whose iteration this object does not see; without them it defaults to
                the samples this object yielded.
        """
        if consumed is None and self._worker()[1] > 1:
            raise ValueError("with several workers, pass consumed= (samples this rank consumed)")
        seen = self._samples_seen(self._consumed if consumed is None else consumed)
        return {
            "version": STATE_VERSION,
            "epoch": self._epoch,
            "samples_seen": seen,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "shuffle_block": self.shuffle_block,
            "num_samples": self.num_samples,
            "dataset_md5": self.dataset_md5,
            "generations": [g.fingerprint() for g in self.generations],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from ``state`` (saved under any world size and worker count, possibly before
        generations were appended to these shards): the rest of the state's epoch, the state's
        generations' part first, then the generations appended since. A state that consumed
        every sample of its epoch on these shards moves on to the next epoch.

        Raises:
            ValueError: when the state belongs to rebuilt shards (its generations are not a
                prefix of this dataset's) or another order (seed, shuffle, shuffle block), whose
                positions would mean other samples; or is a version 1 state of other shards.
        """
        refusals = self._order_refusals(state)
        if state.get("version") == 1:
            refusals += self._version1_refusals(state)
        elif state.get("version") == STATE_VERSION:
            refusals += self._generation_refusals(state)
        else:
            refusals = [
                f"version {state.get('version')!r} (this loader reads 1 and {STATE_VERSION})"
            ]
        if refusals:
            raise ValueError("cannot resume from this state: " + "; ".join(refusals))
        epoch, seen = int(state["epoch"]), int(state["samples_seen"])
        if self.num_samples and seen >= self.num_samples:  # nothing left of that epoch here
            epoch, seen = epoch + 1, 0
        self._epoch, self._start, self._consumed = epoch, seen, 0

    def _order_refusals(self, state: dict[str, Any]) -> list[str]:
        differ = [
            f"{k} {state.get(k)!r} (this dataset: {getattr(self, k)!r})"
            for k in ("seed", "shuffle", "shuffle_block")
            if state.get(k) != getattr(self, k)
        ]
        if not differ:
            return []
        fix = "make the dataset with the state's seed, shuffle and shuffle_block"
        return [", ".join(differ) + f": another order, whose positions are other samples; {fix}"]

    def _version1_refusals(self, state: dict[str, Any]) -> list[str]:
        """A version 1 state names the whole manifest (its MD5): it resumes on those shards."""
        differ = [
            f"{k} {state.get(k)!r} (this dataset: {getattr(self, k)!r})"
            for k in ("num_samples", "dataset_md5")
            if state.get(k) != getattr(self, k)
        ]
        if not differ:
            return []
        return [
            ", ".join(differ) + ": a version 1 state resumes only on the unchanged shards it was "
            "saved on; load it on those (e.g. their DVC revision) and save state_dict() there, "
            "which records their generations and resumes on these if they were appended to"
        ]

    def _generation_refusals(self, state: dict[str, Any]) -> list[str]:
        """A state's generations must be this dataset's first ones, and its position in them."""
        saved = [fingerprint_key(g) for g in state.get("generations") or []]
        mine = [fingerprint_key(g.fingerprint()) for g in self.generations]
        common = min(len(saved), len(mine))
        differ = next((i for i in range(common) if saved[i] != mine[i]), None)
        if differ is None and len(saved) <= len(mine):
            total, seen = sum(s[1] for s in saved), state.get("samples_seen")
            if isinstance(seen, int) and 0 <= seen <= total:
                return []
            return [f"samples_seen {seen!r} is not within the state's {total} samples"]
        if differ is not None:
            theirs, ours = describe_fingerprint(saved[differ]), describe_fingerprint(mine[differ])
            what = f"{theirs} (this dataset: {ours})"
            why = "these shards were rebuilt, not appended to"
        else:
            extra = describe_fingerprint(saved[len(mine)])
            what = f"{extra} (not in this dataset, which has {len(mine)})"
            why = "the state was saved after an append these shards do not have"
        return [
            f"its generations (saved on dataset_md5 {state.get('dataset_md5')!r}) are not a "
            f"prefix of this dataset's: {what}. So {why}, and the state's positions would be "
            "other samples; resume on the shards it was saved on (e.g. their DVC revision), or "
            "start the epoch from its beginning without the state"
        ]

    def _samples_seen(self, consumed: int) -> int:
        _, world = self._distributed()
        return min(self._start + consumed * world, self.num_samples)

    def _distributed(self) -> tuple[int, int]:
        rank = self.rank if self.rank is not None else int(os.environ.get("RANK", 0))
        world = self.world_size if self.world_size is not None else None
        return rank, world or int(os.environ.get("WORLD_SIZE", 1))

    def _worker(self) -> tuple[int, int]:
        if self.worker_id is not None or self.num_workers is not None:
            return self.worker_id or 0, self.num_workers or 1
        info = _torch_worker_info() if _torch_worker_info is not None else None
        if info is not None:
            return info.id, info.num_workers
        env = os.environ
        return int(env.get("CORPUS_LOADER_WORKER_ID", 0)), int(
            env.get("CORPUS_LOADER_NUM_WORKERS", 1)
        )

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"


class _ShardReader:
    """Reads given global positions of one epoch: opens shards as needed and keeps the row
    groups of the current block (and the block boundary's) decoded."""

    def __init__(self, dataset: ShardDataset, order: GenerationalOrder) -> None:
        self.dataset, self.order = dataset, order
        self.files: OrderedDict[int, tuple[Any, pq.ParquetFile, np.ndarray]] = OrderedDict()
        self.groups: OrderedDict[tuple[int, int], pa.Table] = OrderedDict()
        self.capacity = 2  # row groups kept from one block to the next: the boundary ones

    def samples(self, positions: np.ndarray) -> Iterator[dict[str, Any]]:
        """The samples at ``positions``, in that order. The row groups holding them are read
        (or taken from the cache) and joined; rows are taken from that and made into dicts a
        slice at a time."""
        shards, rows = self.order.locate(positions)
        tables: list[pa.Table] = []
        index = np.empty(len(positions), dtype=np.int64)
        for shard in np.unique(shards):
            chosen = np.flatnonzero(shards == shard)
            _, parquet, offsets = self._open(int(shard))
            groups = np.searchsorted(offsets, rows[chosen], side="right") - 1
            for group in np.unique(groups):
                mine = chosen[groups == group]
                base = sum(len(t) for t in tables)
                index[mine] = base + rows[mine] - offsets[group]
                tables.append(self._group(int(shard), int(group), parquet))
        # one contiguous copy of the block: take() on a many-chunk table re-joins it every call
        combined = pa.concat_tables(tables, promote_options="default").combine_chunks()
        del tables  # the block's row groups now live in ``combined`` (and the cache)
        for start in range(0, len(index), TO_PYTHON_ROWS):
            chunk = pa.array(index[start : start + TO_PYTHON_ROWS])
            yield from combined.take(chunk).to_pylist()

    def _group(self, shard: int, group: int, parquet: pq.ParquetFile) -> pa.Table:
        key = (shard, group)
        if key in self.groups:
            self.groups.move_to_end(key)
            return self.groups[key]
        # decoded in this thread: a DataLoader worker is one process per core, and Arrow's
        # thread pool, once started in a worker, can abort it at exit while a pool thread lives
        table = parquet.read_row_group(group, columns=self.dataset.columns, use_threads=False)
        self.groups[key] = table
        while len(self.groups) > self.capacity:
            self.groups.popitem(last=False)
        return table

    def _open(self, shard: int) -> tuple[Any, pq.ParquetFile, np.ndarray]:
        if shard in self.files:
            self.files.move_to_end(shard)
        else:
            dataset = self.dataset
            path = dataset._path(dataset.names[shard])
            size = dataset.fs.size(path)  # None where the filesystem does not know it
            if size is not None and size != dataset.file_bytes[shard]:
                raise ValueError(
                    f"{path}: {size} bytes, the manifest lists {dataset.file_bytes[shard]}"
                )
            handle = dataset.fs.open(path, "rb")
            parquet = pq.ParquetFile(handle)
            counts = [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)]
            if sum(counts) != dataset.sizes[shard]:
                raise ValueError(
                    f"{path}: {sum(counts)} rows, the manifest lists {dataset.sizes[shard]}"
                )
            offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self.files[shard] = (handle, parquet, offsets)
            while len(self.files) > OPEN_FILES:
                self.files.popitem(last=False)[1][0].close()
        return self.files[shard]

    def close(self) -> None:
        """Close every open shard."""
        for handle, _, _ in self.files.values():
            handle.close()
        self.files.clear()
        self.groups.clear()
