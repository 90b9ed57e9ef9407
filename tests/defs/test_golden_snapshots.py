"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code of
commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same commit,
with the reason in its message and in docs/upgrading.md. The last one: the dataset card prints the
shards' totals with their keys sorted (a rerun's came in another order), so the training shards'
README, and with it their snapshot id, changed; no other file did. The one before: the stage files
are written with LZ4 instead of zstd (the same rows in other bytes), so every stage's snapshot id
changed; the training shards' tar and Parquet files did not (they keep zstd), only their manifest
(the digests of the mix generations it was made from) and the dataset card. The one before:
``filtered_documents`` stores a kept row's text only where the filters edited it (the readers take
the others from ``raw_documents``), so its row files changed; so did the dedup manifest (the digests
of the filtered batches it took) and the dataset card (the snapshot ids), and no other file. The one
before: ``deduplicated_documents`` and ``training_mix`` store no text (the split takes it from
``filtered_documents``, the shards from ``split_documents``), so their row files changed; every
other Parquet and tar file did not, only the split's and the shards' manifests (which record the
digests of the generations they were made from) and the dataset card. The one before:
``normalized_splits`` stores no text (the mix takes it from ``split_documents``). Before that:
language identification defaults to fastText (``filters.language_backend``).
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "1258167e09755e4b2a3e17027e659e83.dir",
    "filtered_documents": "98588e078cecea63ef478eb470838606.dir",
    "deduplicated_documents": "dbef3c484df10e766aad2a636d5abc47.dir",
    "split_documents": "78ae12c765de266a38bd9ee18734495b.dir",
    "fitted_statistics": "05b1edfa5c2121ec5036cfdef628ea08.dir",
    "normalized_splits": "3888019f4530cddb6de1950032439662.dir",
    "training_mix": "6eb38f995f6531b9c6de5c48f33dbd21.dir",
    "training_shards": "7611217f77ee14bc15857658554abdf1.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
