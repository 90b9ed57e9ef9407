"""fitted_statistics and normalized_splits: statistics fitted on train, their recomputation."""
