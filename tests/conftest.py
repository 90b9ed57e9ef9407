"""Shared fixtures: a corpus project on tmp_path with the bundled sample corpus."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from corpus_platform.base.names import STAGES
from corpus_platform.config import CorpusConfig, parse_config
from corpus_platform.runner import BuildReport, run_build
from corpus_platform.sample import write_eval_set, write_recsys_sample, write_sample
from corpus_platform.store.snapshots import current_snapshot

REPO = Path(__file__).resolve().parents[1]


def project_config(**overrides: object) -> dict:
    """The repository's corpus.yaml as a dict, with top-level sections updated."""
    data = yaml.safe_load((REPO / "corpus.yaml").read_text(encoding="utf-8"))
    data["engine"] = {"kind": "local", "workers": 1}
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def make_project(root: Path, **overrides: object) -> Path:
    """A project folder with the sample corpus in data/raw and a corpus.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.yaml").write_text(yaml.safe_dump(project_config(**overrides)), encoding="utf-8")
    write_sample(root / "data" / "raw")
    write_eval_set(root / "data" / "eval" / "benchmark.jsonl")
    return root


def rows_project(
    root: Path, rows: list[dict], source: str, columns: dict[str, str], **overrides: object
) -> Path:
    """A project of one source: ``rows`` (raw rows with ``id``, ``body`` and ``src``) in
    data/raw/<source>.jsonl, the mapped ``columns`` beside doc_id, text and source, every draw
    from that source, no as-of features and no evaluation sets; ``overrides`` update sections."""
    raw = root / "data" / "raw"
    raw.mkdir(parents=True)
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (raw / f"{source}.jsonl").write_text(lines, encoding="utf-8")
    mapped = {"doc_id": "id", "text": "body", "source": "src", **columns}
    config = project_config(
        input={"path": "data/raw", "columns": mapped, "features": [], "ranges": {}},
        mix={"proportions": {source: 1.0}},
        asof_features=[],
        decontamination={"eval_sets": {}},
    )
    for key, value in overrides.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    (root / "corpus.yaml").write_text(json.dumps(config), encoding="utf-8")
    return root


def dagster_project(root: Path) -> dict[str, str]:
    """A project folder at ``root`` as `make run` sets one up for the UI: corpus.yaml (workers
    1), workspace.yaml and a DAGSTER_HOME holding the repository's dagster.yaml; returns the
    environment that points at it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.yaml").write_text(yaml.safe_dump(project_config()), encoding="utf-8")
    shutil.copy(REPO / "workspace.yaml", root / "workspace.yaml")
    home = root / ".dagster"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(home)}


def build(root: Path, assets: list[str] | None = None) -> BuildReport:
    """Run the build job (or some assets) on an ephemeral Dagster instance."""
    return run_build(root, instance=dg.DagsterInstance.ephemeral(), assets=assets)


def corpus_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The `corpus` command on ``root`` in a subprocess (it inherits this environment)."""
    return subprocess.run(
        [sys.executable, "-m", "corpus_platform.cli", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def tree_digest(folder: Path) -> str:
    """A digest of every file's relative path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def published_stages(root: Path) -> dict[str, tuple[str | None, str]]:
    """Each stage's published snapshot id and the :func:`tree_digest` of its folder."""
    return {
        stage: (current_snapshot(root, root / "data" / stage), tree_digest(root / "data" / stage))
        for stage in STAGES
    }


@pytest.fixture(scope="session", autouse=True)
def no_dagster_home() -> Iterator[None]:
    """Tests never touch the Dagster instance of the shell that runs them (`make test` exports
    the repository's DAGSTER_HOME): a test that needs an instance sets its own."""
    saved = os.environ.pop("DAGSTER_HOME", None)
    yield
    if saved is not None:
        os.environ["DAGSTER_HOME"] = saved


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildReport, str]:
    """The sample project built once per session: (root, report, digest of raw before)."""
    root = make_project(tmp_path_factory.mktemp("built") / "project")
    raw_before = tree_digest(root / "data" / "raw")
    return root, build(root), raw_before


@pytest.fixture
def built_copy(built, tmp_path: Path) -> Path:
    """A copy of the session's built sample project, to change without touching it."""
    root = tmp_path / "copy"
    shutil.copytree(built[0], root)
    return root


@pytest.fixture(scope="session")
def recsys_built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildReport]:
    """The recommendation table, split in time_group mode, built once per session."""
    root = tmp_path_factory.mktemp("recsys") / "project"
    root.mkdir()
    shutil.copy(REPO / "examples" / "recsys" / "corpus.yaml", root / "corpus.yaml")
    set_config(root, engine={"kind": "local", "workers": 1})
    write_recsys_sample(root / "data" / "raw", users=150)
    return root, build(root)


def set_config(root: Path, **overrides: object) -> None:
    """Update sections of a project's corpus.yaml in place."""
    path = root / "corpus.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in overrides.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture
def config() -> CorpusConfig:
    """The repository's config, validated."""
    return parse_config(project_config())


@pytest.fixture
def sample_project(tmp_path: Path) -> Path:
    """A fresh project with the full sample corpus."""
    return make_project(tmp_path / "project")
