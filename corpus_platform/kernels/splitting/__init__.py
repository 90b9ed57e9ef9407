"""split_documents: components of entities and similar rows, their placement, the temporal
and as-of modes, and the leakage measurements behind the split's checks."""
