"""A rebuild with nothing new publishes every stage as it was: the same snapshot ids and the
same bytes in every file, the training mix's manifest and the dataset card included (an append
followed by a rebuild with nothing new: tests/defs/test_append.py)."""

from pathlib import Path

from corpus_platform.base.names import TRAINING_MIX, TRAINING_SHARDS
from corpus_platform.base.shards import read_manifest
from tests.conftest import build, published_stages


def test_a_rebuild_with_nothing_new_publishes_every_stage_as_it_was(built_copy: Path) -> None:
    before = published_stages(built_copy)
    card = (built_copy / "data" / TRAINING_SHARDS / "README.md").read_text(encoding="utf-8")
    report = build(built_copy)
    assert report.ok, report.render()
    assert published_stages(built_copy) == before
    manifest = read_manifest(built_copy / "data" / TRAINING_MIX)
    assert "new_generation_drawn_per_source" not in manifest  # built from scratch: one generation
    assert (built_copy / "data" / TRAINING_SHARDS / "README.md").read_text() == card
    again = build(built_copy)  # and again: the rerun's own records change nothing either
    assert again.ok and published_stages(built_copy) == before
