"""The thin Dagster layer: one folder per stage family, plus resources and schedules."""
