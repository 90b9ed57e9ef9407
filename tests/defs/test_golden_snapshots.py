"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one: fitted_statistics
holds the rows of its fit (``fitted_on/``: doc ids and feature values, so a fit kept through
``statistics.epoch`` can be checked), and the dataset card inside training_shards names that
snapshot and lists the new checks
(``no_denied_license_in_splits``, ``train_drift_within_thresholds``, ``n/a`` on a first build
without ``licenses.deny``); every other stage is byte for byte what it was (a project that
records no licence gets no ``license`` column).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "febc3117be3c0411f53e7b25b75b9d32.dir",
    "filtered_documents": "12eb1fc95015c5e6a038fcdfc724da10.dir",
    "deduplicated_documents": "3ae4e657f111cbfc7425f8a070221dc9.dir",
    "split_documents": "f16c0217313c1344b002fa5258f47455.dir",
    "fitted_statistics": "5c3276389e9be3607737603fa0a9c1c8.dir",
    "normalized_splits": "dcc2c0ed198cddd2e7d6439ca8dea340.dir",
    "training_mix": "5b4c3b84fc065f564c84c8f3f797369a.dir",
    "training_shards": "3edaf0c1208103b7b72d77834d9f7f30.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
