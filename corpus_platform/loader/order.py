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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

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
        if self.block < 1 or self.seed < 0 or self.epoch < 0:
            raise ValueError(f"shuffle_block {self.block} >= 1, seed and epoch >= 0 required")

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

    def consumer_blocks(self, consumer: Consumer) -> Iterator[np.ndarray]:
        """The global positions ``consumer`` reads, one array per shuffle block, in order."""
        for block in range(consumer.start // self.block, self.blocks):
            low = max(block * self.block, consumer.start)
            positions = np.arange(low, min((block + 1) * self.block, self.total), dtype=np.int64)
            mine = positions[consumer.owns(positions)]
            if len(mine):
                yield mine
