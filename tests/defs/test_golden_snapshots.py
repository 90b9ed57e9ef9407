"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one: raw_documents and
filtered_documents keep every raw batch in files of their own (``part-N.parquet/<batch>.parquet``,
the manifests list the batches and filtered_documents keeps each batch's findings under
``_batches/``); every stage after them is byte for byte what it was.
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "c5b469b8eb0c41ab88d844f5b46bea9a.dir",
    "deduplicated_documents": "3ae4e657f111cbfc7425f8a070221dc9.dir",
    "split_documents": "f16c0217313c1344b002fa5258f47455.dir",
    "fitted_statistics": "5c3276389e9be3607737603fa0a9c1c8.dir",
    "normalized_splits": "dcc2c0ed198cddd2e7d6439ca8dea340.dir",
    "training_mix": "5b4c3b84fc065f564c84c8f3f797369a.dir",
    "training_shards": "d65020943de37f4b953608a1a887b766.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
