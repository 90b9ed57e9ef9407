"""matplotlib for the charts of the review metadata and the dataset card.

Importing matplotlib and pyplot takes about 0.8 s of CPU (measured under py-spy in the Dagster
process, 2026-11-28). A stage renders its chart after its workers are done, so a build starts
the import on a thread of its own when the run begins (:func:`import_in_background`), while the
engine's workers do the stage's work, and the first chart finds pyplot imported.
"""

from __future__ import annotations

import threading
from types import ModuleType


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def import_in_background() -> threading.Thread:
    """Start importing :func:`pyplot` on a daemon thread; the caller need not wait for it (a
    chart that comes first waits on the import lock, as it would have imported it anyway)."""
    thread = threading.Thread(target=pyplot, name="import-pyplot", daemon=True)
    thread.start()
    return thread
