"""training_shards: WebDataset and Parquet shards, their audits and the dataset card."""
