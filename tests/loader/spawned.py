"""What a spawned process runs in the loader tests: it iterates the dataset it was given (pickled
by multiprocessing) and reports the keys, as a DataLoader worker process would read them."""

from __future__ import annotations

import os
import traceback
from multiprocessing.queues import Queue
from typing import Any


def read_keys(dataset: Any, index: int, results: Queue) -> None:
    """Put ``(index, this process's id, the keys read or None, an error or None)``."""
    try:
        results.put((index, os.getpid(), [s["key"] for s in dataset], None))
    except Exception:  # the parent's assertion shows it
        results.put((index, os.getpid(), None, traceback.format_exc()))
