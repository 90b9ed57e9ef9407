"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one: language
identification defaults to fastText (``filters.language_backend``), so the sample's language
scores, hence its rows' ``quality_score``, changed from filtered_documents on: the same rows pass
the filters, and one duplicate cluster keeps another of its members (its best quality score).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "767b6485db389d789051569b1f11b7d0.dir",
    "deduplicated_documents": "bd44e2aebcf3198af843c519bf49c7ce.dir",
    "split_documents": "a7f8a70ac20d4b53db77714b18d7145e.dir",
    "fitted_statistics": "95aadb7d58ff175d7a44177aa945f56f.dir",
    "normalized_splits": "f91d2dcde69f23f7fb0afe8b34fc4b9a.dir",
    "training_mix": "c8929a511c0f6cfbc15891108139f1ed.dir",
    "training_shards": "c40fb7c3d10e96c0bf9dfe3561e25e4f.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
