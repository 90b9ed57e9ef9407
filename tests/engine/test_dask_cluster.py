"""The Dask engines: a real LocalCluster of worker processes, and a scheduler by address.

The outputs of a build on ``dask-local`` are byte-identical to the local engine's.
"""

import os
import shutil
from functools import partial
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from corpus_platform.base.names import STAGES
from corpus_platform.config import CorpusConfig
from corpus_platform.engine import engine_for
from corpus_platform.engine.dask_cluster import DaskEngine, close_clients
from tests.conftest import build, make_project, set_config, tree_digest
from tests.defs.test_append import append, as_raw, copies_of_published_rows, new_authors_rows
from tests.engine.test_allocators import worker_report


def _square_with_pid(shard: int, offset: int) -> tuple[int, int]:
    return shard * shard + offset, os.getpid()


@pytest.fixture(scope="module", autouse=True)
def _close_clients():
    yield
    close_clients()


def test_dask_local_maps_shards_in_order_on_worker_processes() -> None:
    engine = engine_for("dask-local", workers=2)
    assert isinstance(engine, DaskEngine)
    results = engine.map_shards(partial(_square_with_pid, offset=1), [5, 3, 0, 7, 1, 2, 6, 4])
    assert [value for value, _ in results] == [26, 10, 1, 50, 2, 5, 37, 17]
    pids = {pid for _, pid in results}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_dask_local_workers_start_with_the_keep_pages_allocators() -> None:
    reports = engine_for("dask-local", workers=2).map_shards(worker_report, [0, 1])
    for report in reports:
        assert report["pool"] == "mimalloc" and report["faults_per_round"] < 100, report
        assert report["environment"]["MALLOC_MMAP_MAX_"] == "0"


def test_a_scheduler_address_runs_the_tasks_on_its_workers() -> None:
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        engine = engine_for("dask", workers=1, address=cluster.scheduler_address)
        results = engine.map_shards(partial(_square_with_pid, offset=0), range(6))
        assert [value for value, _ in results] == [0, 1, 4, 9, 16, 25]
        with Client(cluster) as client:
            worker_pids = set(client.run(os.getpid).values())
        assert len(worker_pids) == 2 and {pid for _, pid in results} <= worker_pids
        close_clients()


def test_a_task_error_reaches_the_caller_unchanged() -> None:
    engine = DaskEngine(workers=2)
    with pytest.raises(ZeroDivisionError):
        engine.map_shards(partial(divmod, 1), [1, 0, 2])


def test_an_unreachable_scheduler_is_named_with_the_fix() -> None:
    engine = DaskEngine(address="tcp://127.0.0.1:9")
    with pytest.raises(ConnectionError, match=r"tcp://127\.0\.0\.1:9.*dask-local"):
        engine.map_shards(partial(divmod, 1), [1])


def test_config_requires_an_address_for_dask_only() -> None:
    with pytest.raises(ValueError, match=r"engine\.address"):
        CorpusConfig.model_validate({"engine": {"kind": "dask"}})
    with pytest.raises(ValueError, match=r"only read by engine\.kind dask"):
        CorpusConfig.model_validate({"engine": {"kind": "local", "address": "tcp://h:8786"}})
    config = CorpusConfig.model_validate({"engine": {"kind": "dask", "address": "tcp://h:8786"}})
    assert config.engine.address == "tcp://h:8786"


def test_dask_local_build_is_byte_identical_to_the_local_engine(built, tmp_path: Path) -> None:
    root, report, _ = built
    other = make_project(tmp_path / "dask", engine={"kind": "dask-local", "workers": 2})
    again = build(other)
    assert again.ok, [c.verdict for c in again.checks if not c.passed]
    for stage in STAGES:
        assert (
            again.materialized[stage]["snapshot_id"] == report.materialized[stage]["snapshot_id"]
        ), stage
        assert tree_digest(other / "data" / stage) == tree_digest(root / "data" / stage), stage


DASK_LOCAL = {"kind": "dask-local", "workers": 2}


def test_an_append_is_byte_identical_on_dask_local_and_local(built, tmp_path: Path) -> None:
    """The same sequence of batches (the sample, then a file of copies of published rows and new
    rows of known and new authors) gives the same snapshots on two engines and worker counts."""
    roots = []
    for name, engine in (("local", {"kind": "local", "workers": 2}), ("dask", DASK_LOCAL)):
        root = tmp_path / name
        shutil.copytree(built[0], root)
        set_config(root, engine=engine)
        rows = new_authors_rows(root, 20) + as_raw(copies_of_published_rows(root, 5))
        append(root, "crawl-2.jsonl", rows)
        report = build(root)
        assert report.ok, report.render()
        assert report.materialized["split_documents"]["build"]["kind"] == "append"
        roots.append((root, report))
    (local, first), (dask, second) = roots
    for stage in STAGES:
        assert first.materialized[stage]["snapshot_id"] == second.materialized[stage]["snapshot_id"]
        assert tree_digest(local / "data" / stage) == tree_digest(dask / "data" / stage), stage
