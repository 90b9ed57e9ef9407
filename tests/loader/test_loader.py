"""corpus_platform.loader: seeded epochs, rank and worker splitting, exact and elastic resume."""

import os
import subprocess
import sys
import textwrap
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.base.shards import read_json
from corpus_platform.loader import Consumer, EpochOrder, ShardDataset
from tests.shardtools import make_shards

BLOCK = 50  # small shuffle blocks, so an epoch spans many of them


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """420 samples in 7 shards of at most 64."""
    return make_shards(tmp_path_factory.mktemp("loader"), max_samples=64)


def dataset(shards: Path, **options) -> ShardDataset:
    return ShardDataset(shards, **{"seed": 3, "shuffle_block": BLOCK, **options})


def keys(samples) -> list[str]:
    return [s["key"] for s in samples]


def all_keys(shards: Path) -> set[str]:
    document = read_json(shards / SHARDS_MANIFEST)
    assert document["totals"]["samples"] == 420 and document["totals"]["shards"] == 7
    return set(keys(dataset(shards, shuffle=False)))


def interleave(streams: list[list[str]]) -> list[str]:
    """What ranks consumed, step by step: position i of every rank, in rank order."""
    longest = max(len(s) for s in streams)
    return [s[i] for i in range(longest) for s in streams if i < len(s)]


def test_an_epoch_is_every_sample_once_seeded_and_reproducible(shards: Path) -> None:
    epoch0 = keys(dataset(shards))
    assert len(epoch0) == 420 and set(epoch0) == all_keys(shards)
    assert keys(dataset(shards)) == epoch0  # same seed, same order
    assert keys(dataset(shards, epoch=1)) != epoch0  # another epoch, another order
    assert sorted(keys(dataset(shards, epoch=1))) == sorted(epoch0)
    assert keys(dataset(shards, seed=4)) != epoch0
    again = dataset(shards)
    assert keys(again) == epoch0 and again.epoch == 1  # a finished pass moves to the next epoch
    assert keys(again) == keys(dataset(shards, epoch=1))


def test_the_shuffle_buffer_is_a_bounded_block_of_the_global_order(shards: Path) -> None:
    unshuffled = keys(dataset(shards, shuffle=False))
    ordered = dataset(shards).order(0)
    sequence = [unshuffled[i] for i in range(420)]  # manifest order
    by_shard = [
        sequence[start : start + size]
        for start, size in zip(
            [sum(ordered.sizes[:i]) for i in range(7)], ordered.sizes, strict=True
        )
    ]
    shard_ordered = [k for i in ordered.shard_order for k in by_shard[i]]
    shuffled = keys(dataset(shards))
    for block in range(0, 420, BLOCK):  # each block is a permutation of its stretch
        assert set(shuffled[block : block + BLOCK]) == set(shard_ordered[block : block + BLOCK])
    assert shuffled != shard_ordered
    assert list(ordered.shard_order) != list(range(7))
    assert list(dataset(shards, epoch=1).order(1).shard_order) != list(ordered.shard_order)


def test_file_url_reads_the_same(shards: Path) -> None:
    assert keys(ShardDataset(shards.as_uri(), seed=3, shuffle_block=BLOCK)) == keys(dataset(shards))
    first = next(iter(ShardDataset(shards.as_uri(), columns=["key", "text"])))
    assert set(first) == {"key", "text"}


def test_exact_resume_mid_epoch(shards: Path) -> None:
    uninterrupted = keys(dataset(shards, epoch=2))
    reader = dataset(shards, epoch=2)
    before = keys(islice(iter(reader), 137))
    state = reader.state_dict()
    assert state["epoch"] == 2 and state["samples_seen"] == 137
    resumed = dataset(shards)
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # the epoch in progress: goes on where it stopped
    after = keys(resumed)
    assert before + after == uninterrupted
    assert resumed.state_dict()["epoch"] == 3


def test_exact_resume_of_two_ranks(shards: Path) -> None:
    full = [keys(dataset(shards, rank=r, world_size=2)) for r in range(2)]
    ranks = [dataset(shards, rank=r, world_size=2) for r in range(2)]
    readers = [iter(d) for d in ranks]
    before = [keys(islice(it, 40)) for it in readers]
    states = [d.state_dict() for d in ranks]
    assert states[0] == states[1] and states[0]["samples_seen"] == 80
    resumed = [dataset(shards, rank=r, world_size=2) for r in range(2)]
    for d in resumed:
        d.load_state_dict(states[0])
    assert [b + keys(d) for b, d in zip(before, resumed, strict=True)] == full


def test_elastic_resume_from_four_ranks_to_three(shards: Path) -> None:
    global_order = keys(dataset(shards, epoch=1))
    four = [dataset(shards, epoch=1, rank=r, world_size=4) for r in range(4)]
    before = [keys(islice(iter(d), 23)) for d in four]
    state = four[0].state_dict()
    assert all(d.state_dict() == state for d in four) and state["samples_seen"] == 92
    three = [dataset(shards, rank=r, world_size=3) for r in range(3)]
    for d in three:
        d.load_state_dict(state)
    after = [keys(d) for d in three]
    consumed = Counter(k for stream in before + after for k in stream)
    assert set(consumed) == set(global_order) and set(consumed.values()) == {1}
    assert interleave(before) + interleave(after) == global_order  # the same global order
    assert [len(a) for a in after] == [110, 109, 109]  # (420 - 92) dealt over 3 ranks
    assert [len(d) for d in three] == [140, 140, 140]  # each finished: the next epoch ahead
    assert three[0].epoch == 2


def dataloader_order(workers: list[list[str]], batch: int) -> list[str]:
    """The order a DataLoader yields: one batch from each worker in turn."""
    batches = [[w[i : i + batch] for i in range(0, len(w), batch)] for w in workers]
    out = []
    for step in range(max(len(b) for b in batches)):
        for worker in batches:
            if step < len(worker):
                out += worker[step]
    return out


def test_two_workers_on_two_ranks_split_the_epoch(shards: Path) -> None:
    batch = 8
    epoch = keys(dataset(shards))
    streams = {
        (rank, worker): keys(
            dataset(
                shards, rank=rank, world_size=2, worker_id=worker, num_workers=2, batch_size=batch
            )
        )
        for rank in range(2)
        for worker in range(2)
    }
    everything = Counter(k for stream in streams.values() for k in stream)
    assert set(everything) == set(epoch) and set(everything.values()) == {1}
    # 210 samples a rank: 27 batches of 8 (the last holds 2), 14 to worker 0 and 13 to worker 1
    assert [len(streams[(r, w)]) for r in range(2) for w in range(2)] == [106, 104, 106, 104]
    ranks = [dataloader_order([streams[(r, 0)], streams[(r, 1)]], batch) for r in range(2)]
    assert ranks == [keys(dataset(shards, rank=r, world_size=2)) for r in range(2)]
    assert interleave(ranks) == epoch


def test_resume_with_workers_uses_the_consumed_count(shards: Path) -> None:
    batch, steps = 4, 9
    epoch = keys(dataset(shards))
    workers = [
        dataset(shards, worker_id=w, num_workers=2, batch_size=batch, rank=0, world_size=1)
        for w in range(2)
    ]
    streams = [keys(w) for w in workers]
    consumed = dataloader_order(streams, batch)[: steps * batch]
    with pytest.raises(ValueError, match="pass consumed="):
        workers[0].state_dict()
    main = dataset(shards, rank=0, world_size=1, batch_size=batch)  # the DataLoader's process
    state = main.state_dict(consumed=steps * batch)
    assert state["samples_seen"] == steps * batch

    def resumed(worker: int) -> ShardDataset:
        reader = dataset(shards, worker_id=worker, num_workers=3, batch_size=batch)
        reader.load_state_dict(state)
        return reader

    rest = [keys(resumed(w)) for w in range(3)]
    assert consumed + dataloader_order(rest, batch) == epoch
    assert len(resumed(0)) == 420 - steps * batch  # the rank's remaining samples


def test_a_state_of_other_shards_or_another_order_is_refused(shards: Path, tmp_path: Path) -> None:
    state = dataset(shards).state_dict()
    with pytest.raises(ValueError, match=r"seed 3 \(this dataset: 4\)"):
        dataset(shards, seed=4).load_state_dict(state)
    other = make_shards(tmp_path, max_samples=50)
    with pytest.raises(ValueError, match="dataset_md5"):
        dataset(other).load_state_dict(state)


def test_epoch_order_is_independent_of_world_size() -> None:
    order = EpochOrder(("a", "b", "c"), (5, 0, 7), seed=1, epoch=0, block=4)
    shards, rows = order.locate(list(range(12)))
    assert sorted(zip(shards.tolist(), rows.tolist(), strict=True)) == [
        (0, r) for r in range(5)
    ] + [(2, r) for r in range(7)]
    with pytest.raises(ValueError, match="rank 3 of 3"):
        Consumer(rank=3, world=3)


def test_without_torch_it_is_a_plain_iterable_and_with_torch_a_torch_dataset(
    shards: Path, tmp_path: Path
) -> None:
    assert ShardDataset.__mro__[1] is object  # torch is not installed here
    fake = tmp_path / "fake" / "torch"
    (fake / "utils").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "utils" / "__init__.py").write_text("")
    (fake / "utils" / "data.py").write_text(
        textwrap.dedent(
            """
            from types import SimpleNamespace
            class IterableDataset:
                pass
            def get_worker_info():  # what a DataLoader worker process sees
                return SimpleNamespace(id=1, num_workers=2)
            """
        )
    )
    code = textwrap.dedent(
        f"""
        from torch.utils.data import IterableDataset
        from corpus_platform.loader import ShardDataset
        dataset = ShardDataset({str(shards)!r}, seed=3, shuffle_block={BLOCK}, batch_size=5)
        assert isinstance(dataset, IterableDataset)
        print(",".join(s["key"] for s in dataset))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), os.getcwd()])}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    worker1 = keys(dataset(shards, worker_id=1, num_workers=2, batch_size=5))
    assert done.stdout.strip().split(",") == worker1
