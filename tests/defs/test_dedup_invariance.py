"""Dedup output does not depend on the number of workers; clusters and kept rows do not
depend on the number of logical shards."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import read_all_shards
from tests.conftest import build, make_project, tree_digest

UP_TO_DEDUP = ["raw_documents", "filtered_documents", "deduplicated_documents"]


def dedup_result(root: Path, shards: int) -> tuple[set[tuple[str, str, bool]], set[str]]:
    folder = root / "data" / "deduplicated_documents"
    membership = read_all_shards(folder / "clusters", shards)
    rows = set(
        zip(
            membership.column("cluster_id").to_pylist(),
            membership.column("doc_id").to_pylist(),
            membership.column("kept").to_pylist(),
            strict=True,
        )
    )
    kept: pa.Table = read_all_shards(folder, shards)
    return rows, set(kept.column("doc_id").to_pylist())


def test_1_2_and_4_workers_write_byte_identical_dedup_output(tmp_path: Path) -> None:
    digests = {}
    for workers in (1, 2, 4):
        root = make_project(
            tmp_path / f"workers{workers}", engine={"kind": "local", "workers": workers}
        )
        report = build(root, UP_TO_DEDUP)
        assert report.ok, report.render()
        digests[workers] = tree_digest(root / "data" / "deduplicated_documents")
    assert digests[1] == digests[2] == digests[4]


def test_4_and_16_shards_give_the_same_clusters_and_kept_rows(tmp_path: Path) -> None:
    results = []
    for shards in (4, 16):
        root = make_project(tmp_path / f"shards{shards}", num_shards=shards)
        report = build(root, UP_TO_DEDUP)
        assert report.ok, report.render()
        results.append(dedup_result(root, shards))
    (clusters_4, kept_4), (clusters_16, kept_16) = results
    assert clusters_4 == clusters_16 and len(clusters_4) > 200
    assert kept_4 == kept_16
