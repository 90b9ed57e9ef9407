"""The project resource: where the corpus lives and how it is configured."""

import shutil
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Self

import dagster as dg

from corpus_platform.base import charts
from corpus_platform.config import CorpusConfig, load_config
from corpus_platform.engine import Engine, engine_for
from corpus_platform.engine.allocators import use_driver_pool
from corpus_platform.kernels.filtering.filters import check_exempt
from corpus_platform.store.datasets import recover_stage_folders, stage_path
from corpus_platform.store.lock import Holder, project_lock
from corpus_platform.store.publication import recover_publications
from corpus_platform.store.registry import find_snapshot
from corpus_platform.store.snapshots import current_snapshot


class CorpusProject(dg.ConfigurableResource):
    """A corpus project folder: ``corpus.yaml``, ``data/`` and the DVC project.

    Attributes:
        root: The project folder; relative paths resolve against the working directory.
        config_file: The pipeline config, relative to ``root``.
        full: Decide every row from scratch, as a first build would: no kept dedup row,
            split placement or statistics fit is carried over from the published snapshots
            (``corpus run --full``; in the UI's launchpad, ``resources: {corpus: {config:
            {full: true}}}``). The checks still compare with what is published.
        reingest: Raw files (relative to ``input.path``) to read again although a published
            batch holds them (``corpus run --reingest FILE``): the way to take a raw file that
            changed after it was ingested.
    """

    root: str = "."
    config_file: str = "corpus.yaml"
    full: bool = False
    reingest: list[str] = []  # noqa: RUF012 - pydantic copies a field default per instance

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Generator[Self, None, None]:
        """During a run (from ``corpus run``, the UI, the schedule or the sensor), hold the
        project's build lock: a second build of the same project fails at once, naming the
        holder. A build that died without releasing the lock is marked failed and what it left
        under ``data/`` is cleaned, each with a log line. Outside a run (a sensor evaluation)
        nothing is locked. A run's process allocates Arrow memory from the pool that hands freed
        pages back (:func:`~corpus_platform.engine.allocators.use_driver_pool`) and imports
        matplotlib for the charts on a thread (:func:`~corpus_platform.base.charts.
        import_in_background`)."""
        if context.dagster_run is None:
            yield self
            return
        use_driver_pool()
        charts.import_in_background()  # off the stages' path: their charts come after the work
        with project_lock(self.root_path, context.run_id) as lock:
            if lock.crashed is not None:
                _mark_crashed_run(context, lock.crashed)
            actions = recover_publications(self.root_path)  # first: journaled ends go forward
            for action in actions + recover_stage_folders(self.root_path):
                context.log.warning(f"leftover of an interrupted build: {action}")
            yield self

    @property
    def root_path(self) -> Path:
        """The project folder as an absolute path."""
        return Path(self.root).resolve()

    def load(self) -> CorpusConfig:
        """The validated pipeline config: read and validated (``filters.exempt`` included) once
        per version of the file, then cached; every asset and check of a build shares it."""
        path = self.root_path / self.config_file
        stat = path.stat() if path.is_file() else None
        return _validated_config(
            str(path), stat.st_mtime_ns if stat else 0, stat.st_size if stat else 0
        )

    def stage_dir(self, asset: str) -> Path:
        """The published folder of a stage, ``data/<asset>``."""
        return stage_path(self.root_path, asset)

    def published_alike(
        self, asset: str, config: CorpusConfig, settings: Mapping[str, tuple[str, ...]]
    ) -> Path | None:
        """The published folder of ``asset`` when its snapshot was built with the same
        ``settings`` as ``config`` (top-level section -> keys of it to ignore, e.g.
        ``{"split": ("tolerance",)}``): the settings that decide where a row lands or which row
        is kept. None on a first build, a full build (``full``) or a changed setting."""
        published = self.stage_dir(asset)
        snapshot = current_snapshot(self.root_path, published)
        if self.full or snapshot is None:
            return None
        recorded = find_snapshot(self.root_path, snapshot).get("config", {})
        now = config.recorded()
        for key, ignored in settings.items():
            if _without(recorded.get(key), ignored) != _without(now.get(key), ignored):
                return None
        return published

    def raw_dir(self, config: CorpusConfig) -> Path:
        """The folder of raw input files."""
        return self.root_path / config.input.path

    def engine(self, config: CorpusConfig) -> Engine:
        """The shard engine the config asks for (``engine.kind``)."""
        engine = config.engine
        return engine_for(engine.kind, engine.workers, engine.address)

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


def _without(value: object, ignored: tuple[str, ...]) -> object:
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in ignored}
    return value


def _mark_crashed_run(context: dg.InitResourceContext, crashed: Holder) -> None:
    """Mark the run of a build that died holding the lock as failed, if it still reads as
    running."""
    run = context.instance.get_run_by_id(crashed.run_id) if context.instance else None
    message = f"the build {crashed.describe()} died without releasing the project lock"
    if run is not None and not run.is_finished:
        context.instance.report_run_failed(run, f"{message}; marked failed by run {context.run_id}")
        message += "; its run is now marked failed"
    context.log.warning(message)


@lru_cache(maxsize=8)
def _validated_config(path: str, mtime_ns: int, size: int) -> CorpusConfig:
    """The config at ``path`` as of (``mtime_ns``, ``size``), fully validated."""
    config = load_config(Path(path))
    check_exempt(config.filters)
    return config
