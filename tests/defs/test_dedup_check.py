"""The dedup check passes on the built sample and fails when a dropped duplicate comes back."""

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.generations import generation_path
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SIMILAR_PAIRS
from corpus_platform.base.shards import part_path, read_parquet, read_shard, write_parquet
from corpus_platform.config import load_config
from corpus_platform.defs.dedup.checks import no_kept_near_duplicate_pair
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.stages import check_on_published


def check(root: Path):
    return check_on_published(no_kept_near_duplicate_pair, CorpusProject(root=str(root)))


def test_passes_on_the_sample_and_fails_on_a_revived_duplicate(built, tmp_path: Path) -> None:
    source, _, _ = built
    honest = check(source)
    assert honest.passed
    assert honest.metadata()["verdict"].startswith("near-duplicate pairs kept as separate rows: 0")

    root = tmp_path / "copy"
    shutil.copytree(source, root)
    shards = load_config(root / "corpus.yaml").num_shards
    dedup, filtered = root / "data" / "deduplicated_documents", root / "data" / "filtered_documents"
    membership = read_parquet(part_path(dedup / "clusters", 0))
    for shard in range(1, shards):
        membership = pa.concat_tables([membership, read_shard(dedup / "clusters", shard)])
    pairs = read_parquet(dedup / SIMILAR_PAIRS)
    dropped = set(
        membership.filter(pc.invert(membership.column("kept"))).column("doc_id").to_pylist()
    )
    close = pairs.filter(pc.greater_equal(pairs.column("similarity"), 0.8)).to_pylist()
    revived = next(p["doc_b"] if p["doc_b"] in dropped else p["doc_a"] for p in close)
    shard = shard_of(revived, shards)
    row = read_shard(filtered, shard).filter(pc.equal(pc.field("doc_id"), revived))
    row = row.append_column("cluster_id", pa.array([revived], pa.string()))
    published = read_shard(dedup, shard)  # the row back, as if a generation had kept it
    write_parquet(row.select(published.column_names), generation_path(dedup, shard, 1))

    leaky = check(root)
    assert not leaky.passed
    assert revived in leaky.metadata()["offenders (up to 10)"]
