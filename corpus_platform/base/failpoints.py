"""Fault injection at the step boundaries of a publication, for the tests that kill a build.

``CORPUS_FAILPOINT=<asset>:<point>`` in a build's environment makes that build kill itself with
SIGKILL when the publication of ``asset`` reaches ``point``. The points, in order: ``written``
(the candidate is written), ``added`` (DVC added the candidate while its checks run: its objects
are in the cache and its pointer sits beside it, nothing pushed yet), ``pinned`` (DVC pushed it
to the remote), ``checked`` (its checks ran and passed), ``renamed`` (it is ``data/<asset>``),
``pointed`` (its pointer moved to ``data/<asset>.dvc``), ``journaled`` (the publication's
journal is written), ``registered`` (the registry holds its records). Without the
variable nothing happens; it is read when a point is reached, never on import.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "CORPUS_FAILPOINT"
POINTS = (
    "written",
    "added",
    "pinned",
    "checked",
    "renamed",
    "pointed",
    "journaled",
    "registered",
)


def armed(asset: str, point: str) -> bool:
    """Whether the environment asks for ``asset:point`` (a step that is one action in a build,
    such as DVC's add and push, is then run as two so that the point lies between them)."""
    return os.environ.get(VARIABLE) == f"{asset}:{point}"


def failpoint(asset: str, point: str) -> None:
    """Kill this process now when the environment asks for ``asset:point``."""
    if point not in POINTS:
        raise ValueError(f"unknown failpoint {point!r}; one of {POINTS}")
    if os.environ.get(VARIABLE) == f"{asset}:{point}":
        os.kill(os.getpid(), signal.SIGKILL)
