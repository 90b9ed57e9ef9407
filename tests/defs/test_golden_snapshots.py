"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one:
``filtered_documents`` stores a kept row's text only where the filters edited it (the readers
take the others from ``raw_documents``), so its row files changed; so did the dedup manifest
(the digests of the filtered batches it took) and the dataset card (the snapshot ids), and no
other file. The one before: ``deduplicated_documents`` and ``training_mix`` store no text (the
split takes it from ``filtered_documents``, the shards from ``split_documents``), so their row
files changed; every other Parquet and tar file did not, only the split's and the shards'
manifests (which record the digests of the generations they were made from) and the dataset
card. The one before:
``normalized_splits`` stores no text (the mix takes it from ``split_documents``). Before that:
language identification defaults to fastText (``filters.language_backend``).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "8db010a9904b7b82e07c1edb8a14733b.dir",
    "deduplicated_documents": "5d7c5823ea8565c045a4ece85fa70784.dir",
    "split_documents": "7323542ee436ae9a052d83ac95823aa7.dir",
    "fitted_statistics": "95aadb7d58ff175d7a44177aa945f56f.dir",
    "normalized_splits": "36b40f6bba6a8fce951b9f8cb1dfcff7.dir",
    "training_mix": "3ed279c3fa0eb381bad742d762c749f5.dir",
    "training_shards": "359cd0981f7c623fe1dfc2d67d63a28b.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
