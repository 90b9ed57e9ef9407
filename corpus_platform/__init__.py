"""corpus_platform: leak-free, reproducible and auditable training datasets with Dagster."""

from corpus_platform.base.allocators import use_driver_pool as _use_driver_pool

# Arrow's allocator in this process, chosen before pyarrow first allocates: jemalloc, which
# hands freed pages back (corpus_platform.base.allocators; engine workers start with their own).
_use_driver_pool()
