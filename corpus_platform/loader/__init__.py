"""Read training_shards for training: an iterable dataset with a seeded, resumable global order.

    from corpus_platform.loader import ShardDataset

    dataset = ShardDataset("data/training_shards", seed=7, rank=0, world_size=1)
    for sample in dataset:          # dicts: key, draw, doc_id, text, source, ...
        ...
    state = dataset.state_dict()    # resume exactly, under any world size, after appends

Never imports Dagster; torch is optional (see :mod:`corpus_platform.loader.dataset`).
"""

from corpus_platform.loader.dataset import ShardDataset
from corpus_platform.loader.order import Consumer, EpochOrder, GenerationalOrder

__all__ = ["Consumer", "EpochOrder", "GenerationalOrder", "ShardDataset"]
