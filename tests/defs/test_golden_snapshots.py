"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one:
``deduplicated_documents`` and ``training_mix`` store no text (the split takes it from
``filtered_documents``, the shards from ``split_documents``), so their row files changed; every
other Parquet and tar file did not, only the split's and the shards' manifests (which record the
digests of the generations they were made from) and the dataset card. The one before:
``normalized_splits`` stores no text (the mix takes it from ``split_documents``). Before that:
language identification defaults to fastText (``filters.language_backend``).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "767b6485db389d789051569b1f11b7d0.dir",
    "deduplicated_documents": "371979c9d3cf06f3487ba65ad821b113.dir",
    "split_documents": "7323542ee436ae9a052d83ac95823aa7.dir",
    "fitted_statistics": "95aadb7d58ff175d7a44177aa945f56f.dir",
    "normalized_splits": "36b40f6bba6a8fce951b9f8cb1dfcff7.dir",
    "training_mix": "3ed279c3fa0eb381bad742d762c749f5.dir",
    "training_shards": "c1d1d2202b92c15a4e1529b6230f9c5b.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
