"""Refactoring changes no output: the sample corpus builds to the same snapshot ids as the code
of commit eafa1cf (before the layering change of issue 16).

A deliberate change of an output (a new default, a new column) updates these ids in the same
commit, with the reason in its message and in docs/upgrading.md. The last one: every stage
after filtered_documents keeps its shards as folders of generation files
(``part-N.parquet/g00000.parquet``, its side tables too) and its manifest lists its generations;
deduplicated_documents keeps the band keys of every row under ``index/``; filtered_documents'
manifest records each raw batch's digest, the mix its epoch's exact rates and the shards'
manifest its generations; fitted_statistics is byte for byte what it was.
"""

from corpus_platform.base.names import STAGES

EXPECTED = {
    "raw_documents": "22db3609ec447d98fc3e19eb1a8f7b4a.dir",
    "filtered_documents": "bbd1fa4df697c872225b658d8749b062.dir",
    "deduplicated_documents": "06b560179b22c856ba9555d537765a6f.dir",
    "split_documents": "5d22d38acb8008ed11656692e59d779a.dir",
    "fitted_statistics": "5c3276389e9be3607737603fa0a9c1c8.dir",
    "normalized_splits": "f183e54bd5d8e36272c014689447668f.dir",
    "training_mix": "db494e3e97dc01f66efeda91d4cb481d.dir",
    "training_shards": "23dc501a906d30740939ce814f72f188.dir",
}


def test_the_sample_corpus_builds_to_the_recorded_snapshot_ids(built) -> None:
    _, report, _ = built
    assert report.ok, report.render()
    assert {s: report.materialized[s]["snapshot_id"] for s in STAGES} == EXPECTED
