"""corpus_platform.loader across appends: the order of generations, resume into new generations
(also elastically and in worker processes), and what is refused."""

import io
import json
import multiprocessing
import os
import pickle
import shutil
from collections import Counter
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.files import file_md5
from corpus_platform.base.names import PARQUET, SHARDS_MANIFEST, WEBDATASET
from corpus_platform.base.shards import read_json, write_json
from corpus_platform.loader import Consumer, EpochOrder, GenerationalOrder, ShardDataset
from corpus_platform.loader.generations import manifest_generations
from tests.loader.spawned import read_keys
from tests.loader.test_loader import dataloader_order, dataset, interleave, keys
from tests.shardtools import generation_files, make_generations, make_shards, mix_rows

OLD, NEW = 420, 140  # samples of generation 0 (7 shards) and of the appended generation 1 (3)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The shards before the append (one generation) and after it (two)."""
    return make_generations(tmp_path_factory.mktemp("generations"))


def generation_keys(folder: Path, generation: int) -> set[str]:
    """The keys of a generation's samples, read from its Parquet files (not by the loader)."""
    names = generation_files(folder, generation, PARQUET)
    return {k for n in names for k in pq.read_table(folder / n, columns=["key"])["key"].to_pylist()}


def resume(folder: Path, state: dict, world: int = 1, **options) -> list[ShardDataset]:
    """One dataset per rank of ``world`` on ``folder``, each resumed from ``state``."""
    ranks = [dataset(folder, rank=r, world_size=world, **options) for r in range(world)]
    for reader in ranks:
        reader.load_state_dict(state)
    return ranks


def save_mid_epoch(folder: Path, epoch: int, world: int, steps: int) -> tuple[list, dict]:
    """``world`` ranks each read ``steps`` samples of ``epoch``; their keys and the state."""
    ranks = [dataset(folder, epoch=epoch, rank=r, world_size=world) for r in range(world)]
    read = [keys(islice(iter(reader), steps)) for reader in ranks]
    states = [reader.state_dict() for reader in ranks]
    assert all(s == states[0] for s in states)
    return read, states[0]


def test_an_append_adds_shards_and_leaves_generation_0_byte_identical(folders) -> None:
    before, after = folders
    old, new = read_json(before / SHARDS_MANIFEST), read_json(after / SHARDS_MANIFEST)
    assert [g["generation"] for g in old["generations"]] == [0]
    assert [(g["generation"], g["shards"], g["samples"]) for g in new["generations"]] == [
        (0, list(range(7)), OLD),
        (1, [7, 8, 9], NEW),
    ]
    assert new["shards"][: len(old["shards"])] == old["shards"]
    for fmt in (WEBDATASET, PARQUET):
        for name in generation_files(before, 0, fmt):
            assert file_md5(after / name) == file_md5(before / name), name
        assert generation_files(after, 1, fmt)[0].startswith("train-000007.")
    fingerprints = [ShardDataset(f).state_dict()["generations"] for f in folders]
    assert fingerprints[1][0] == fingerprints[0][0] and len(fingerprints[1]) == 2
    assert not generation_keys(after, 0) & generation_keys(after, 1)


@pytest.mark.parametrize(("epoch", "shuffle"), [(0, True), (3, True), (0, False)])
def test_the_epoch_is_generation_0s_order_then_generation_1s(
    folders, epoch: int, shuffle: bool
) -> None:
    before, after = folders
    old = keys(dataset(before, epoch=epoch, shuffle=shuffle))
    new = keys(dataset(after, epoch=epoch, shuffle=shuffle))
    assert len(new) == len(set(new)) == OLD + NEW
    assert new[:OLD] == old  # positions 0 .. N0-1: exactly the order before the append
    assert set(new[OLD:]) == generation_keys(after, 1)
    manifest_order = [
        k
        for name in generation_files(after, 1, PARQUET)
        for k in pq.read_table(after / name, columns=["key"])["key"].to_pylist()
    ]
    assert (new[OLD:] == manifest_order) is not shuffle  # the new generation is shuffled too
    assert len(dataset(after, epoch=epoch, shuffle=shuffle)) == OLD + NEW


def test_a_manifest_without_generations_is_one_generation_0(folders, tmp_path: Path) -> None:
    before, after = folders
    legacy = shutil.copytree(before, tmp_path / "legacy")
    document = read_json(legacy / SHARDS_MANIFEST)
    del document["generations"]
    document["shards"] = [
        {k: v for k, v in e.items() if k != "generation"} for e in document["shards"]
    ]
    write_json(document, legacy / SHARDS_MANIFEST)
    assert keys(dataset(legacy, epoch=1)) == keys(dataset(before, epoch=1))
    read, state = save_mid_epoch(legacy, epoch=1, world=1, steps=99)
    assert state["generations"] == ShardDataset(before).state_dict()["generations"]
    (resumed,) = resume(after, state)
    assert read[0] + keys(resumed) == keys(dataset(after, epoch=1))


@pytest.mark.parametrize(
    ("saved_world", "steps", "resumed_world"),
    [(1, 137, 1), (2, 40, 3), (4, 23, 2), (3, 140, 1)],  # the last: generation 0 read through
)
def test_a_state_saved_before_the_append_resumes_into_the_new_generation(
    folders, saved_world: int, steps: int, resumed_world: int
) -> None:
    before, after = folders
    epoch = 2
    full = keys(dataset(after, epoch=epoch))
    read, state = save_mid_epoch(before, epoch, saved_world, steps)
    seen = saved_world * steps
    assert state["epoch"] == epoch and state["samples_seen"] == seen
    assert [g["generation"] for g in state["generations"]] == [0]
    assert interleave(read) == keys(dataset(before, epoch=epoch))[:seen] == full[:seen]

    runs = [[keys(r) for r in resume(after, state, resumed_world)] for _ in range(2)]
    assert runs[0] == runs[1]  # deterministic
    rest = runs[0]
    consumed = Counter(k for stream in rest for k in stream)
    assert set(consumed.values()) == {1} and sum(consumed.values()) == OLD + NEW - seen
    old_rest = set(generation_keys(after, 0)) - {k for stream in read for k in stream}
    resumed_order = interleave(rest)
    assert resumed_order == full[seen:]
    assert set(resumed_order[: OLD - seen]) == old_rest  # the rest of generation 0 first,
    assert set(resumed_order[OLD - seen :]) == generation_keys(after, 1)  # then generation 1


def test_worker_processes_resume_across_the_append(folders) -> None:
    """Saved by 3 ranks before the append; resumed by 2 ranks of 2 DataLoader workers each, every
    worker a spawned process given its pickled dataset."""
    before, after = folders
    batch, epoch = 8, 1
    read, state = save_mid_epoch(before, epoch, world=3, steps=31)
    full = keys(dataset(after, epoch=epoch))
    assert state["samples_seen"] == 93 and interleave(read) == full[:93]
    remaining = full[93:]
    shares = [(rank, worker) for rank in range(2) for worker in range(2)]
    readers = []
    for rank, worker in shares:
        options = {"worker_id": worker, "num_workers": 2, "batch_size": batch}
        readers.append(dataset(after, rank=rank, world_size=2, **options))
        readers[-1].load_state_dict(state)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [
        context.Process(target=read_keys, args=(reader, index, results))
        for index, reader in enumerate(readers)
    ]
    for process in processes:
        process.start()
    reports = {}
    for _ in processes:
        index, pid, streamed, error = results.get(timeout=300)
        assert error is None, error
        reports[shares[index]] = (pid, streamed)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    pids = {pid for pid, _ in reports.values()}
    assert len(pids) == len(shares) and os.getpid() not in pids
    streams = {share: streamed for share, (_, streamed) in reports.items()}
    everything = Counter(k for stream in streams.values() for k in stream)
    assert set(everything) == set(remaining) and set(everything.values()) == {1}
    ranks = [dataloader_order([streams[(r, 0)], streams[(r, 1)]], batch) for r in range(2)]
    assert interleave(ranks) == remaining  # the DataLoaders yield the global order


def test_a_dataset_pickles_without_open_files(folders) -> None:
    after = folders[1]
    reader = dataset(after, epoch=1)
    iterator = iter(reader)
    first = keys(islice(iterator, 5))  # shards are open in the iterator, not in the dataset
    assert not [k for k, v in vars(reader).items() if isinstance(v, io.IOBase)]
    copy = pickle.loads(pickle.dumps(reader))
    iterator.close()
    assert first + keys(copy) == keys(dataset(after, epoch=1))  # the copy goes on from there


@pytest.mark.parametrize("resumed_world", [1, 2])
def test_a_state_saved_at_the_end_of_an_epoch_goes_on_with_the_new_generation(
    folders, resumed_world: int
) -> None:
    before, after = folders
    reader = dataset(before, epoch=1)
    read = keys(islice(iter(reader), OLD))  # every sample, the pass not yet ended
    state = reader.state_dict()
    main = dataset(before, epoch=1, batch_size=4, worker_id=0, num_workers=2)
    assert main.state_dict(consumed=OLD) == state  # as a DataLoader's process saves it
    assert state["epoch"] == 1 and state["samples_seen"] == OLD

    unchanged = resume(before, state, resumed_world)  # nothing more in epoch 1: on to epoch 2
    assert [r.epoch for r in unchanged] == [2] * resumed_world
    assert interleave([keys(r) for r in unchanged]) == keys(dataset(before, epoch=2))

    appended = resume(after, state, resumed_world)  # epoch 1 goes on with generation 1
    assert [r.epoch for r in appended] == [1] * resumed_world
    assert sum(len(r) for r in appended) == NEW
    rest = interleave([keys(r) for r in appended])
    assert read + rest == keys(dataset(after, epoch=1))
    assert set(rest) == generation_keys(after, 1)
    assert [r.epoch for r in appended] == [2] * resumed_world
    assert interleave([keys(r) for r in appended]) == keys(dataset(after, epoch=2))


def test_a_pass_read_to_its_end_moves_the_state_to_the_next_epoch(folders) -> None:
    before, after = folders
    reader = dataset(before, epoch=1)
    assert len(keys(reader)) == OLD
    state = reader.state_dict()
    assert (state["epoch"], state["samples_seen"]) == (2, 0)
    (resumed,) = resume(after, state)
    assert keys(resumed) == keys(dataset(after, epoch=2))


@pytest.fixture(scope="module")
def other_append(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same generation 0 with another generation 1 appended."""
    root = tmp_path_factory.mktemp("other-append")
    return make_generations(root, appended=mix_rows(80, seed=2, first=300))[1]


def rebuilt(tmp_path: Path) -> Path:
    return make_shards(tmp_path, max_samples=50)  # the same mix, other shard boundaries


@pytest.mark.parametrize(
    ("saved_on", "loaded_on", "options", "message"),
    [
        ("before", "rebuilt", {}, r"not a prefix .*generation 0 of 420 samples, md5 \w+ \(this"),
        ("before", "rebuilt", {}, r"rebuilt, not appended to.*DVC revision"),
        (
            "after",
            "before",
            {},
            r"generation 1 of 140 .*\(not in this dataset, which has 1\)\. So the state was saved",
        ),
        (
            "after",
            "other_append",
            {},
            r"generation 1 of 140 samples, md5 \w+ \(this dataset: generation 1 of 112 .*rebuilt",
        ),
        ("before", "after", {"seed": 4}, r"seed 3 \(this dataset: 4\).*with the state's seed"),
        ("before", "after", {"shuffle_block": 64}, r"shuffle_block 50 \(this dataset: 64\)"),
        ("before", "after", {"shuffle": False}, r"shuffle True \(this dataset: False\)"),
    ],
)
def test_a_state_of_rebuilt_shards_or_another_order_is_refused(
    folders, other_append: Path, tmp_path: Path, saved_on, loaded_on, options, message
) -> None:
    named = {"before": folders[0], "after": folders[1], "other_append": other_append}
    _, state = save_mid_epoch(
        named[saved_on], epoch=0, world=1, steps=430 if saved_on == "after" else 30
    )
    target = rebuilt(tmp_path) if loaded_on == "rebuilt" else named[loaded_on]
    reader = dataset(target, **options)
    with pytest.raises(ValueError, match=f"cannot resume from this state: .*{message}"):
        reader.load_state_dict(state)
    assert (reader.epoch, reader.state_dict()["samples_seen"]) == (0, 0)  # left as it was


def version1(state: dict, folder: Path) -> dict:
    """The state the previous loader (version 1) saved at the same point on ``folder``."""
    document = json.loads((folder / SHARDS_MANIFEST).read_bytes())
    return {
        "version": 1,
        **{k: state[k] for k in ("epoch", "samples_seen", "seed", "shuffle", "shuffle_block")},
        "num_samples": document["totals"]["samples"],
        "dataset_md5": ShardDataset(folder).dataset_md5,
    }


def test_a_version_1_state_resumes_on_the_unchanged_shards_only(folders) -> None:
    before, after = folders
    read, state = save_mid_epoch(before, epoch=1, world=2, steps=60)
    old = version1(state, before)
    (unchanged,) = resume(before, old)
    assert interleave(read) + keys(unchanged) == keys(dataset(before, epoch=1))
    with pytest.raises(ValueError, match=r"version 1 state resumes only on the unchanged shards"):
        dataset(after).load_state_dict(old)
    with pytest.raises(ValueError, match=r"version 3 \(this loader reads 1 and 2\)"):
        dataset(before).load_state_dict({**state, "version": 3})
    migrated = resume(before, old)[0].state_dict()  # load it there, save it again: version 2
    assert migrated == state
    (appended,) = resume(after, migrated)
    assert interleave(read) + keys(appended) == keys(dataset(after, epoch=1))


@pytest.mark.parametrize(
    ("sizes", "counts"),
    [
        ((5, 0, 7), (3,)),  # one generation: its EpochOrder, position for position
        ((5, 0, 7, 4, 9, 3), (3, 0, 3)),  # an empty generation between two
        ((6, 6, 11), (1, 2, 0)),  # an empty generation at the end
    ],
)
def test_generations_are_laid_end_to_end(sizes: tuple, counts: tuple) -> None:
    names = tuple(f"shard-{i}" for i in range(len(sizes)))
    order = GenerationalOrder(names, sizes, counts, seed=1, epoch=2, block=4)
    positions = np.arange(order.total)
    shards, rows = order.locate(positions)
    start = first = 0
    for count in counts:  # each generation's stretch is its own EpochOrder
        part = EpochOrder(names[first : first + count], sizes[first : first + count], 1, 2, 4)
        local = positions[start : start + part.total]
        expected_shards, expected_rows = part.locate(local - start)
        assert shards[local].tolist() == (expected_shards + first).tolist()
        assert rows[local].tolist() == expected_rows.tolist()
        start, first = start + part.total, first + count
    assert sorted(zip(shards.tolist(), rows.tolist(), strict=True)) == [
        (s, r) for s, size in enumerate(sizes) for r in range(size)
    ]
    for consumer_start in (0, 3, order.total - 1):
        dealt = [
            order.consumer_blocks(Consumer(rank=r, world=3, start=consumer_start)) for r in range(3)
        ]
        blocks = [b for rank in dealt for b in rank]
        assert sorted(np.concatenate(blocks).tolist()) == list(range(consumer_start, order.total))
        boundaries = order.offsets[1:-1]
        assert all(((b < g).all() or (b >= g).all()) for b in blocks for g in boundaries)
    if len(counts) == 1:
        single = EpochOrder(names, sizes, seed=1, epoch=2, block=4)
        consumer = Consumer(rank=1, world=2, worker=1, workers=2, batch=2, start=5)
        assert [b.tolist() for b in order.consumer_blocks(consumer)] == [
            b.tolist() for b in single.consumer_blocks(consumer)
        ]
    with pytest.raises(ValueError, match="do not add up"):
        GenerationalOrder(names, sizes, (len(sizes) + 1,), seed=1, epoch=0)


def manifest(generations: list | None, shards: tuple = (0, 1, 2)) -> dict:
    entries = [
        {"name": f"train-{s:06d}.parquet", "shard": s, "format": "parquet", "samples": 5}
        for s in shards
    ]
    return {"shards": entries} | ({} if generations is None else {"generations": generations})


@pytest.mark.parametrize(
    ("generations", "expected"),
    [
        (None, [(0, [0, 1, 2])]),  # written before appends: one generation 0
        (
            [{"generation": 0, "shards": [0, 1]}, {"generation": 1, "shards": [2]}],
            [(0, [0, 1]), (1, [2])],
        ),
        (
            [{"generation": 0, "shards": [0, 1, 2]}, {"generation": 1, "shards": []}],
            [(0, [0, 1, 2]), (1, [])],
        ),
        (
            [{"generation": 0, "shards": [0, 1]}, {"generation": 1, "shards": [1, 2]}],
            "listed twice",
        ),
        ([{"generation": 0, "shards": [0, 1, 2, 3]}], r"shards \[3\] that have no Parquet entry"),
        ([{"generation": 0, "shards": [0, 0, 1, 2]}], r"shards \[0\]"),
        ([{"generation": 0, "shards": [0, 2]}], r"Parquet shards \[1\] are in no generation"),
    ],
)
def test_the_manifest_names_each_shards_generation(generations, expected) -> None:
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            manifest_generations(manifest(generations))
        return
    found = manifest_generations(manifest(generations))
    assert [(g.number, [e["shard"] for e in g.entries]) for g in found] == expected
