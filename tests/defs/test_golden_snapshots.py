"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one:
``normalized_splits`` stores no text (the mix takes it from ``split_documents``), so its files
changed; the mix's and the shards' Parquet and tar files did not, only their manifests (which
record the digests of the generations they were made from) and the dataset card. The one
before: language identification defaults to fastText (``filters.language_backend``).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "767b6485db389d789051569b1f11b7d0.dir",
    "deduplicated_documents": "bd44e2aebcf3198af843c519bf49c7ce.dir",
    "split_documents": "a7f8a70ac20d4b53db77714b18d7145e.dir",
    "fitted_statistics": "95aadb7d58ff175d7a44177aa945f56f.dir",
    "normalized_splits": "36b40f6bba6a8fce951b9f8cb1dfcff7.dir",
    "training_mix": "637be47bb1229cde8f5061294ecd65e5.dir",
    "training_shards": "3ae1f27133869d0b1d96957f859ba897.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
