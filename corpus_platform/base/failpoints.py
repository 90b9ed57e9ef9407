"""Fault injection at the step boundaries of a publication, for the tests that kill a build.

``CORPUS_FAILPOINT=<asset>:<point>`` in a build's environment makes that build kill itself with
SIGKILL when the publication of ``asset`` reaches ``point``. The points, in order: ``written``
(the candidate is written), ``checked`` (its checks ran and passed), ``renamed`` (it is
``data/<asset>``), ``pinned`` (DVC added and pushed it, its pointer moved), ``journaled`` (the
publication's journal is written), ``registered`` (the registry holds its records). Without the
variable nothing happens; it is read when a point is reached, never on import.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "CORPUS_FAILPOINT"
POINTS = ("written", "checked", "renamed", "pinned", "journaled", "registered")


def failpoint(asset: str, point: str) -> None:
    """Kill this process now when the environment asks for ``asset:point``."""
    if point not in POINTS:
        raise ValueError(f"unknown failpoint {point!r}; one of {POINTS}")
    if os.environ.get(VARIABLE) == f"{asset}:{point}":
        os.kill(os.getpid(), signal.SIGKILL)
