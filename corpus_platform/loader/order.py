"""The global sample order of an epoch and how it is dealt to ranks and workers (pure: no I/O).

An epoch's order is a function of the shards' names and sizes, the seed, the epoch and the
shuffle block size only; never of the world size, the worker count or how far anyone got:

1. the shards are put in a seeded order for the epoch: sorted by
   ``xxh3("loader" 0x1f epoch 0x1f name, seed)``;
2. their samples, concatenated in that order, form a sequence of ``N`` positions;
3. the sequence is cut into consecutive blocks of ``block`` samples (the last may be shorter),
   and each block is permuted by its own generator (numpy's PCG64 seeded with
   ``(seed, epoch, block index)``; its raw output is stable across numpy versions, and the
   permutation is the stable argsort of it). The block is the shuffle buffer: it bounds how far
   a sample moves and how much a reader holds, and because it is part of the global order
   rather than per-reader state, resuming needs no buffer contents.

Global position ``g`` of the epoch is read by rank ``(g - start) mod world`` (interleaved, from
the position ``start`` where the current run resumed), and within that rank the ``i``-th sample
goes to worker ``(i // batch) mod workers``: a DataLoader that takes one batch from each worker
in turn then yields the rank's samples in global order.

Generations. A dataset grown by appends is a list of generations (its manifest's, in order),
each a set of shards that never changes. Its epoch's order (:class:`GenerationalOrder`) is each
generation's own :class:`EpochOrder` (the same seed, epoch, block and shuffle flag, over that
generation's shards only) laid end to end: positions ``0 .. N0-1`` are generation 0's order,
exactly the dataset's order before anything was appended, the next ``N1`` generation 1's, and
so on. An append therefore moves no sample of an epoch, it only adds positions after the old
ones; a single generation's order is its :class:`EpochOrder`, position for position.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

import numpy as np

from corpus_platform.base.hashing import stable_hash


@dataclass(frozen=True)
class Consumer:
    """One reader of an epoch: a rank of ``world`` and a worker of ``workers`` on it, reading
    from global position ``start``; ``batch`` is the DataLoader batch size (the unit dealt to
    workers)."""

    rank: int = 0
    world: int = 1
    worker: int = 0
    workers: int = 1
    batch: int = 1
    start: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.rank < self.world and 0 <= self.worker < self.workers):
            raise ValueError(
                f"rank {self.rank} of {self.world}, worker {self.worker} of {self.workers}: "
                "need 0 <= rank < world_size and 0 <= worker < num_workers"
            )
        if self.batch < 1 or self.start < 0:
            raise ValueError(f"batch_size {self.batch} must be >= 1, start {self.start} >= 0")

    def owns(self, positions: np.ndarray) -> np.ndarray:
        """Which of ``positions`` (all >= start) this consumer reads."""
        relative = positions - self.start
        mine = relative % self.world == self.rank
        index = relative // self.world  # the position's index in its rank's sequence
        return mine & ((index // self.batch) % self.workers == self.worker)

    def rank_samples(self, total: int) -> int:
        """Samples this consumer's rank (all its workers) reads from ``start`` to the end."""
        remaining = max(total - self.start, 0)
        return max(remaining - self.rank + self.world - 1, 0) // self.world


@dataclass(frozen=True)
class EpochOrder:
    """The order of one epoch over shards of ``sizes`` samples called ``names``.

    ``shuffle=False`` keeps the shards in their listed order and every block unpermuted: the
    order the shards were written in (itself a seeded order for training_shards).
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    seed: int
    epoch: int
    block: int = 8192
    shuffle: bool = True

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes):
            raise ValueError("one size per shard name")
        _check_order(self.seed, self.epoch, self.block)

    @property
    def total(self) -> int:
        """Samples in the epoch."""
        return int(sum(self.sizes))

    @cached_property
    def shard_order(self) -> np.ndarray:
        """Shard indices (into ``names``) in the epoch's order."""
        if not self.shuffle:
            return np.arange(len(self.names), dtype=np.int64)
        keys = [stable_hash(f"loader\x1f{self.epoch}\x1f{n}", self.seed) for n in self.names]
        return np.array(sorted(range(len(keys)), key=lambda i: (keys[i], i)), dtype=np.int64)

    @cached_property
    def starts(self) -> np.ndarray:
        """First sequence position of each shard in epoch order, then the total."""
        sizes = np.asarray(self.sizes, dtype=np.int64)[self.shard_order]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def blocks(self) -> int:
        """Shuffle blocks in the epoch."""
        return -(-self.total // self.block)

    def permutation(self, block: int) -> np.ndarray:
        """The permutation of block ``block`` (identity without shuffle)."""
        length = min(self.block, self.total - block * self.block)
        if not self.shuffle:
            return np.arange(length, dtype=np.int64)
        generator = np.random.PCG64(np.random.SeedSequence([self.seed, self.epoch, block]))
        return np.argsort(generator.random_raw(length), kind="stable").astype(np.int64)

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(shard index, row in that shard)`` of global ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        blocks = positions // self.block
        sequence = np.empty_like(positions)
        for block in np.unique(blocks):
            chosen = blocks == block
            offsets = positions[chosen] - block * self.block
            sequence[chosen] = block * self.block + self.permutation(int(block))[offsets]
        slot = np.searchsorted(self.starts, sequence, side="right") - 1
        return self.shard_order[slot], sequence - self.starts[slot]

    def consumer_blocks(self, consumer: Consumer, offset: int = 0) -> Iterator[np.ndarray]:
        """The global positions ``consumer`` reads, one array per shuffle block, in order.

        Args:
            consumer: The reader; its ``start`` is a global position.
            offset: The global position of this order's first sample (where an epoch is several
                orders end to end, :class:`GenerationalOrder`).
        """
        first = max(consumer.start - offset, 0) // self.block
        for block in range(first, self.blocks):
            low = offset + max(block * self.block, consumer.start - offset)
            high = offset + min((block + 1) * self.block, self.total)
            positions = np.arange(low, high, dtype=np.int64)
            mine = positions[consumer.owns(positions)]
            if len(mine):
                yield mine


@dataclass(frozen=True)
class GenerationalOrder:
    """The order of one epoch over generations of shards: each generation's :class:`EpochOrder`
    laid end to end, in the listed order.

    ``names`` and ``sizes`` list every shard, generation by generation (shard ``i`` of the
    whole is ``names[i]``); ``counts`` says how many shards each generation has (0 for an
    empty one). Shard indices (``locate``, ``shard_order``) are into ``names``.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    counts: tuple[int, ...]
    seed: int
    epoch: int
    block: int = 8192
    shuffle: bool = True

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes):
            raise ValueError("one size per shard name")
        if any(c < 0 for c in self.counts) or sum(self.counts) != len(self.names):
            raise ValueError(f"generations of {self.counts} shards do not add up to the shards")
        _check_order(self.seed, self.epoch, self.block)

    @cached_property
    def first_shards(self) -> np.ndarray:
        """Index (into ``names``) of each generation's first shard, then the shard count."""
        return np.concatenate([[0], np.cumsum(self.counts, dtype=np.int64)]).astype(np.int64)

    @cached_property
    def parts(self) -> tuple[EpochOrder, ...]:
        """Each generation's own order of the epoch."""
        bounds = self.first_shards.tolist()
        return tuple(
            EpochOrder(
                self.names[low:high],
                self.sizes[low:high],
                self.seed,
                self.epoch,
                self.block,
                self.shuffle,
            )
            for low, high in pairwise(bounds)
        )

    @cached_property
    def offsets(self) -> np.ndarray:
        """The global position of each generation's first sample, then the total."""
        totals = [part.total for part in self.parts]
        return np.concatenate([[0], np.cumsum(totals, dtype=np.int64)]).astype(np.int64)

    @property
    def total(self) -> int:
        """Samples in the epoch (every generation)."""
        return int(sum(self.sizes))

    @cached_property
    def shard_order(self) -> np.ndarray:
        """Shard indices (into ``names``) in the epoch's order, generation by generation."""
        firsts = self.first_shards[:-1]
        orders = [p.shard_order + f for p, f in zip(self.parts, firsts, strict=True)]
        return np.concatenate([np.empty(0, np.int64), *orders]).astype(np.int64)

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(shard index into names, row in that shard)`` of global ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        shards, rows = np.empty_like(positions), np.empty_like(positions)
        # the last generation starting at or before each position: empty ones are skipped
        owner = np.searchsorted(self.offsets[:-1], positions, side="right") - 1
        for generation in np.unique(owner):
            chosen = owner == generation
            part, offset = self.parts[generation], self.offsets[generation]
            local, row = part.locate(positions[chosen] - offset)
            shards[chosen], rows[chosen] = local + self.first_shards[generation], row
        return shards, rows

    def consumer_blocks(self, consumer: Consumer) -> Iterator[np.ndarray]:
        """The global positions ``consumer`` reads, one array per shuffle block of each
        generation, in order (a block never spans two generations)."""
        for part, offset in zip(self.parts, self.offsets[:-1].tolist(), strict=True):
            yield from part.consumer_blocks(consumer, offset)


def _check_order(seed: int, epoch: int, block: int) -> None:
    if block < 1 or seed < 0 or epoch < 0:
        raise ValueError(f"shuffle_block {block} >= 1, seed and epoch >= 0 required")
