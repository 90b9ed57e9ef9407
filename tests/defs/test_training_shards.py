"""training_shards through Dagster: published and pinned like every stage, read back by the
loader (also through DVC), and refused when a shard is tampered with."""

import shutil
import tarfile
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.names import SHARDS_MANIFEST, TRAINING_SHARDS
from corpus_platform.base.shards import read_json, read_parquet, write_parquet
from corpus_platform.kernels.sharding import shards as shard_kernels
from corpus_platform.loader import ShardDataset
from corpus_platform.runner import run_build
from corpus_platform.store.registry import list_snapshots
from tests.conftest import tree_digest


def test_the_sample_mix_is_sharded_and_read_back_by_the_loader(built) -> None:
    root, report, _ = built
    folder = root / "data" / TRAINING_SHARDS
    document = read_json(folder / SHARDS_MANIFEST)
    drawn = sum(report.materialized["training_mix"]["drawn_per_source"].values())
    assert document["totals"]["samples"] == drawn == report.materialized[TRAINING_SHARDS]["rows"]
    assert document["totals"]["shards"] > 3  # shards.max_bytes in corpus.yaml: 1 MB
    assert all(e["bytes"] <= 1_000_000 for e in document["shards"])
    samples = list(ShardDataset(folder.as_uri(), seed=1))
    assert len({s["key"] for s in samples}) == drawn
    assert (root / "data" / f"{TRAINING_SHARDS}.dvc").is_file()
    assert "training shards: " in report.render()


def test_the_loader_reads_pinned_shards_through_dvc(built, tmp_path: Path) -> None:
    from dvc.api import DVCFileSystem

    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    expected = [s["key"] for s in ShardDataset(root / "data" / TRAINING_SHARDS, seed=2)]
    shutil.rmtree(root / "data" / TRAINING_SHARDS)  # only the DVC cache holds the bytes now
    fs = DVCFileSystem(str(root))
    read = ShardDataset(f"data/{TRAINING_SHARDS}", filesystem=fs, seed=2)
    assert [s["key"] for s in read] == expected


def flip_a_text_byte(staging: Path) -> None:
    """Change one letter of the first sample's text in the first tar (valid UTF-8 still)."""
    tar = staging / "train-000000.tar"
    with tarfile.open(tar) as archive:
        text = next(m for m in archive.getmembers() if m.name.endswith(".txt"))
    data = bytearray(tar.read_bytes())
    data[text.offset_data] ^= 0x01
    tar.write_bytes(bytes(data))


def tamper_samples(scratch: Path, shard: int, how: str) -> None:
    """Duplicate the first sample of a mix shard, or lose its last one, before planning."""
    path = scratch / "samples" / f"part-{shard:05d}.parquet"
    table = pq.read_table(path)
    rows = range(len(table) - 1) if how == "missing" else [*range(len(table)), 0]
    table = table.take(list(rows))
    pq.write_table(table, path)


@pytest.mark.parametrize("tamper", ["byte", "duplicated", "missing"])
def test_a_tampered_shard_fails_the_checks_and_leaves_data_as_it_was(
    built, tmp_path: Path, monkeypatch, tamper: str
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    data_before = tree_digest(root / "data")
    pointer = (root / "data" / f"{TRAINING_SHARDS}.dvc").read_bytes()
    published = list_snapshots(root, TRAINING_SHARDS)
    if tamper == "byte":
        write_shard = shard_kernels.write_shard

        def tampered_write(shard: int, **kwargs):
            entries = write_shard(shard, **kwargs)
            if shard == 0:  # after its md5 went into the manifest entry
                flip_a_text_byte(kwargs["staging"])
            return entries

        monkeypatch.setattr(shard_kernels, "write_shard", tampered_write)
    else:
        explode = shard_kernels.explode_shard

        def tampered_explode(shard: int, folder: Path, scratch: Path, seed: int, **kwargs):
            samples = explode(shard, folder=folder, scratch=scratch, seed=seed, **kwargs)
            if shard != 0:
                return samples
            tamper_samples(scratch, shard, tamper)
            order = read_parquet(shard_kernels.order_path(scratch, shard))
            if tamper == "missing":
                order = order.slice(0, len(order) - 1)
            else:  # the copy's index: the row appended
                first = order.slice(0, 1).set_column(5, "index", pa.array([len(order)], pa.int64()))
                order = pa.concat_tables([order, first])
            write_parquet(order, shard_kernels.order_path(scratch, shard))
            return len(order)

        monkeypatch.setattr(shard_kernels, "explode_shard", tampered_explode)

    # --full: the shards are written again (an ordinary build keeps the published ones)
    instance = dg.DagsterInstance.ephemeral()
    report = run_build(root, instance=instance, assets=[TRAINING_SHARDS], full=True)

    assert not report.ok and TRAINING_SHARDS not in report.materialized
    verdicts = {c.name: c for c in report.checks if c.asset == TRAINING_SHARDS}
    if tamper == "byte":
        assert not verdicts["shards_match_manifest"].passed
        assert verdicts["every_draw_sharded_once"].passed  # keys and draws are intact
    else:
        assert verdicts["shards_match_manifest"].passed  # files and manifest agree ...
        failed = verdicts["every_draw_sharded_once"]  # ... but a draw is twice or missing
        assert not failed.passed
        draws = read_json(root / "data" / TRAINING_SHARDS / SHARDS_MANIFEST)["totals"]["samples"]
        missing = f"{draws - 1} samples for {draws} mix"  # one draw short, in both formats
        assert ("keys repeated 1" if tamper == "duplicated" else missing) in failed.verdict
    assert tree_digest(root / "data") == data_before
    assert (root / "data" / f"{TRAINING_SHARDS}.dvc").read_bytes() == pointer
    assert list_snapshots(root, TRAINING_SHARDS) == published
