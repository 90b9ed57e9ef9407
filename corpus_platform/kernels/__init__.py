"""Pure processing kernels: pyarrow, numpy and datasketch only. Never imports dagster."""
