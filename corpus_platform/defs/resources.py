"""The project resource: where the corpus lives and how it is configured."""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from corpus_platform.config import CorpusConfig, load_config
from corpus_platform.kernels.engine import LocalEngine
from corpus_platform.store.datasets import stage_path


class CorpusProject(dg.ConfigurableResource):
    """A corpus project folder: ``corpus.yaml``, ``data/`` and the DVC project.

    Attributes:
        root: The project folder; relative paths resolve against the working directory.
        config_file: The pipeline config, relative to ``root``.
    """

    root: str = "."
    config_file: str = "corpus.yaml"

    @property
    def root_path(self) -> Path:
        """The project folder as an absolute path."""
        return Path(self.root).resolve()

    def load(self) -> CorpusConfig:
        """The validated pipeline config."""
        return load_config(self.root_path / self.config_file)

    def stage_dir(self, asset: str) -> Path:
        """The published folder of a stage, ``data/<asset>``."""
        return stage_path(self.root_path, asset)

    def raw_dir(self, config: CorpusConfig) -> Path:
        """The folder of raw input files."""
        return self.root_path / config.input.path

    def engine(self, config: CorpusConfig) -> LocalEngine:
        """The shard engine the config asks for."""
        return LocalEngine(workers=config.engine.workers)

    @contextmanager
    def scratch(self, name: str) -> Iterator[Path]:
        """A scratch folder for intermediate files, removed afterwards whatever happens."""
        path = self.root_path / ".scratch" / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
