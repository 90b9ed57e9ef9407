"""corpus_platform: leak-free, reproducible and auditable training datasets with Dagster."""
