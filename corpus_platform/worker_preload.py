"""What every local engine worker loads, imported once by the fork server workers are forked from.

A spawned worker starts an empty interpreter and imports on its first tasks what every build's
workers need: Great Expectations for the raw stage's suite (about 3 s), Arrow, the kernels,
numba and its compiled kernels (about 1.3 s to load them all,
:func:`corpus_platform.kernel_cache.warm`). Two workers paid that twice, at the start of the
first stages. The local engine's fork server (:func:`corpus_platform.engine.local.warm`)
imports this module once instead, and a forked worker finds all of it loaded.

First the workers' allocator settings (:mod:`corpus_platform.engine.allocators`), because
Arrow's allocator reads them when pyarrow loads, which happens below: the server, and every
worker forked from it, allocate as a worker does. Only imports and the kernels' calls on tiny
inputs run here; nothing starts a thread, so forking stays safe.

Last, everything loaded is frozen out of the cyclic garbage collector (``gc.freeze()``, made for
fork servers): a worker's collections no longer walk the few hundred thousand objects of the
modules above (sampled by ``perf``: 1.5% of a 100,000-document build's CPU was the workers'
collector) nor write to their pages, which the worker shares with the server until it does.
"""

from __future__ import annotations

import gc
import importlib

from corpus_platform.engine.allocators import start_worker, worker_settings

# The modules of the engine's tasks, whose imports bring Arrow, numpy and numba.
WORKER_MODULES = (
    "corpus_platform.engine.graph",
    "corpus_platform.kernels.dedup.signatures",
    "corpus_platform.kernels.filtering.stage",
    "corpus_platform.kernels.ingest.canonical",
    "corpus_platform.kernels.mixing.mix",
    "corpus_platform.kernels.sharding.audit",
    "corpus_platform.kernels.splitting.split",
    "corpus_platform.kernels.statistics.fit",
)

start_worker(worker_settings())

for name in WORKER_MODULES:
    importlib.import_module(name)

from corpus_platform import kernel_cache  # noqa: E402
from corpus_platform.kernels.ingest.expectations import import_great_expectations  # noqa: E402

import_great_expectations()
kernel_cache.warm()  # numba's compiled code, loaded from its cache (compiled if missing)
gc.freeze()  # after the last import: nothing above is garbage
