"""corpus_platform: leak-free, reproducible and auditable training datasets with Dagster."""

import os as _os

# Arrow's allocator, chosen before pyarrow first allocates (a user's own setting wins):
# jemalloc hands freed pages back to the system; pyarrow's default here, mimalloc, keeps them,
# so a process that reads shard after shard (the dedup driver verifying pairs) holds every
# read's buffers at its peak and grows with the corpus although its live data does not.
# Measured on 400,000 documents (bench/dedup_benchmark.py): 831 MB peak with mimalloc, 567 MB
# with jemalloc. Worker processes inherit the setting through the environment.
_os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
