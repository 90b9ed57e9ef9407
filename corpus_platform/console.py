"""What a build prints: one line per stage as it starts and ends; Dagster's own log to a file.

``corpus run`` configures the ``corpus`` logger with a log file under ``.corpus/logs/`` and
``progress: true``: the terminal shows only the stage lines and the summary, and the file keeps
every Dagster event with its stack traces (its path is printed when the build fails). Runs
launched from the UI use the defaults: Dagster's events to stderr, which the UI captures.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import dagster as dg

LOGGER_KEY = "corpus"
_FORMAT = "%(asctime)s %(levelname)s %(message)s"


class StageProgress(logging.Handler):
    """Print a line when a step starts and when it ends (rows and seconds, or FAILED)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(level=logging.DEBUG)
        self.stream = stream
        self.rows: dict[str, Any] = {}

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def emit(self, record: logging.LogRecord) -> None:
        """Turn a step's Dagster events into one line each for start and end."""
        meta = getattr(record, "dagster_meta", None)
        event = meta.get("dagster_event") if isinstance(meta, dict) else None
        step = getattr(event, "step_key", None)
        if event is None or step is None:
            return
        if event.is_step_start:
            self._line(f"{step:<24} started")
        elif event.is_step_materialization:
            metadata = event.step_materialization_data.materialization.metadata
            rows = metadata.get("rows")
            self.rows[step] = getattr(rows, "value", rows)
        elif event.is_step_success:
            seconds = event.event_specific_data.duration_ms / 1000.0
            rows = self.rows.get(step)
            count = f"{rows:>10,} rows" if isinstance(rows, int) else f"{'':>15}"
            self._line(f"{step:<24} built  {count} {seconds:8.1f} s")
        elif event.is_step_failure:
            self._line(f"{step:<24} FAILED (see below)")
        elif event.is_step_skipped:
            self._line(f"{step:<24} skipped: an upstream stage did not build")


@dg.logger(
    config_schema={
        "log_file": dg.Field(str, default_value="", description="write Dagster's log here"),
        "progress": dg.Field(bool, default_value=False, description="stage lines to stdout"),
    },
    description="Dagster's events to a file (or stderr), and optionally one line per stage.",
)
def corpus_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    """The build's logger: see the module docstring."""
    config = init_context.logger_config
    logger = logging.getLogger("corpus_platform.build")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    if config["log_file"]:
        sink: logging.Handler = logging.FileHandler(config["log_file"], encoding="utf-8")
    else:
        sink = logging.StreamHandler(sys.stderr)
        sink.setLevel(logging.INFO)
    sink.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(sink)
    if config["progress"]:
        logger.addHandler(StageProgress(sys.stdout))
    return logger
