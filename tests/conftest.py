"""Shared fixtures: a corpus project on tmp_path with the bundled sample corpus."""

from pathlib import Path

import pytest
import yaml

from corpus_platform.config import CorpusConfig, parse_config
from corpus_platform.sample import write_sample

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
    return root


@pytest.fixture
def config() -> CorpusConfig:
    """The repository's config, validated."""
    return parse_config(project_config())


@pytest.fixture
def sample_project(tmp_path: Path) -> Path:
    """A fresh project with the full sample corpus."""
    return make_project(tmp_path / "project")
