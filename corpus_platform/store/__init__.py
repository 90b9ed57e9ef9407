"""Datasets on disk: layout, atomic publication, DVC snapshots, the snapshot registry."""
