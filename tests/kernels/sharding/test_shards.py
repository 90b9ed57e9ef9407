"""training_shards' writer and audit kernels on a synthetic mix (no Dagster)."""

import json
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import webdataset as wds

from corpus_platform.base.files import known_md5
from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.base.shards import iter_shards, read_json
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.sharding import audit as shard_audit
from corpus_platform.kernels.sharding import draw_audit
from corpus_platform.kernels.sharding.audit import (
    draw_report,
    read_tar,
    sample_ids_of,
    sample_ids_table,
    unlisted_files,
    verify_shard,
)
from corpus_platform.kernels.sharding.draw_audit import draw_reports
from corpus_platform.kernels.sharding.manifest import HASHED
from corpus_platform.kernels.sharding.shards import (
    BLOCK,
    member_bytes,
    order_hash,
    sample_key,
    shard_starts,
    tar_file_bytes,
)
from tests.conftest import tree_digest
from tests.shardtools import make_shards, mix_rows, write_mix


def entries(folder: Path, fmt: str) -> list[dict]:
    return [e for e in read_json(folder / SHARDS_MANIFEST)["shards"] if e["format"] == fmt]


def tar_samples(folder: Path) -> list:
    return [s for e in entries(folder, "webdataset") for s in read_tar(folder / e["name"])]


def test_every_draw_is_one_sample_in_both_formats_in_the_seeded_order(tmp_path: Path) -> None:
    rows = mix_rows(300)
    folder = make_shards(tmp_path, rows)
    samples = tar_samples(folder)
    expected = Counter({r["doc_id"]: r["times_drawn"] for r in rows})
    assert Counter(s.meta["doc_id"] for s in samples) == expected
    assert len({s.key for s in samples}) == len(samples) == sum(expected.values())
    tripled = next(r for r in rows if r["times_drawn"] == 3)["doc_id"]
    assert sorted(s.key for s in samples if s.meta["doc_id"] == tripled) == [
        f"{tripled}-0",
        f"{tripled}-1",
        f"{tripled}-2",
    ]
    unsafe = [s for s in samples if s.meta["doc_id"] == "site.example/page 1.html"]
    assert len(unsafe) == 1 and unsafe[0].key.startswith("site_example_page_1_html_")
    assert "." not in unsafe[0].key and "/" not in unsafe[0].key
    keys = [s.key for s in samples]
    assert keys == sorted(keys, key=lambda k: (order_hash(k, 7), k))  # the global order
    parquet = pa.concat_tables(
        pq.read_table(folder / e["name"]) for e in entries(folder, "parquet")
    )
    assert parquet.column("key").to_pylist() == keys
    by_key = {s.key: s for s in samples}
    for row in parquet.to_pylist()[:50]:
        sample = by_key[row["key"]]
        assert sample.text == (row["text"] or "")
        assert sample.meta["draw"] == row["draw"] and sample.meta["entity"] == row["entity"]
    nan_row = next(s for s in samples if s.meta["doc_id"] == "doc-00011")
    assert nan_row.meta["clicks"] is None and nan_row.meta["timestamp"].endswith("+00:00")


def test_webdatasets_own_reader_reads_the_tars(tmp_path: Path) -> None:
    folder = make_shards(tmp_path)
    urls = [str(folder / e["name"]) for e in entries(folder, "webdataset")]
    read = list(wds.WebDataset(urls, shardshuffle=False).decode())
    assert [s["__key__"] for s in read] == [s.key for s in tar_samples(folder)]
    assert isinstance(read[0]["json"], dict) and read[0]["json"]["key"] == read[0]["__key__"]
    assert read[0]["txt"] == tar_samples(folder)[0].text


def test_tars_are_deterministic_archives(tmp_path: Path) -> None:
    folder = make_shards(tmp_path)
    with tarfile.open(folder / entries(folder, "webdataset")[0]["name"]) as archive:
        members = archive.getmembers()
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {
        (0, 0, 0, "corpus", "corpus", 0o444)
    }
    assert [m.name.split(".")[1] for m in members[:4]] == ["json", "txt", "json", "txt"]
    assert not any(m.pax_headers for m in members)


def test_outputs_are_byte_identical_across_runs_workers_and_mix_layouts(tmp_path: Path) -> None:
    rows = mix_rows(300)
    first = make_shards(tmp_path / "a", rows)
    again = make_shards(tmp_path / "b", rows)
    workers = make_shards(tmp_path / "c", rows, engine=LocalEngine(2))
    relaid = make_shards(tmp_path / "d", rows, num_shards=3)  # other mix shards, same rows
    digests = {tree_digest(f) for f in (first, again, workers, relaid)}
    assert len(digests) == 1
    other_seed = make_shards(tmp_path / "e", rows, seed=8)
    assert [s.key for s in tar_samples(other_seed)] != [s.key for s in tar_samples(first)]


def test_size_cap_is_a_hard_cap_on_tar_files_and_shards_are_full(tmp_path: Path) -> None:
    rows = mix_rows(300)
    rows[5]["text"] = "word " * 30_000  # 150 KB: larger than the cap, alone in its shard
    cap = 100_000
    folder = make_shards(tmp_path, rows, max_bytes=cap, max_samples=None)
    tars = entries(folder, "webdataset")
    samples = tar_samples(folder)
    sizes = {
        s.key: member_bytes(len(json.dumps(s.meta, sort_keys=True, separators=(",", ":"))))
        + member_bytes(len(s.text.encode()))
        for s in samples
    }
    keys = [s.key for s in samples]
    position = 0
    for entry in tars:
        path = folder / entry["name"]
        assert path.stat().st_size == entry["bytes"] and entry["bytes"] % (20 * BLOCK) == 0
        mine = keys[position : position + entry["samples"]]
        assert entry["bytes"] == tar_file_bytes(sum(sizes[k] for k in mine))
        if entry["samples"] > 1:
            assert entry["bytes"] <= cap
        else:
            assert entry["bytes"] > cap and mine[0].startswith("doc-00005")
        position += entry["samples"]
        if position < len(keys):  # greedy: the next sample did not fit
            assert tar_file_bytes(sum(sizes[k] for k in [*mine, keys[position]])) > cap
    assert position == len(keys) and len(tars) > 3


def test_sample_cap_and_the_planner() -> None:
    assert shard_starts([100] * 10, 10**9, 4) == [0, 4, 8]
    assert shard_starts([3000, 3000, 3000, 30_000, 10], 10_240, None) == [0, 3, 4]
    assert shard_starts([], 10_240, None) == []
    assert sample_key("a-b_C9", 2) == "a-b_C9-2"
    assert sample_key("x" * 65, 0) != sample_key("x" * 66, 0)
    assert len(sample_key("x" * 500, 0)) < 100


def test_manifest_counts_tokens_bytes_and_md5(tmp_path: Path) -> None:
    rows = mix_rows(300)
    folder = make_shards(tmp_path, rows)
    document = read_json(folder / SHARDS_MANIFEST)
    words = sum(len((r["text"] or "").split()) * r["times_drawn"] for r in rows)
    assert document["totals"]["tokens"] == words
    assert document["totals"]["samples"] == sum(r["times_drawn"] for r in rows)
    assert all(len(e["md5"]) == 32 for e in document["shards"])
    by_shard = {}
    for entry in document["shards"]:
        by_shard.setdefault(entry["shard"], []).append(entry)
    assert all(verify_shard(s, folder, by_shard) == [] for s in by_shard)
    assert unlisted_files(folder, document) == []


def test_the_md5s_the_workers_read_are_known_to_the_process_that_pins(tmp_path: Path) -> None:
    """The workers hash the files they write for the manifest; the identity of each file
    hashed comes back with its entry and stays out of manifest.json, so the pin of the shards
    hands DVC those MD5s (base.files.known_md5) instead of DVC reading every byte again."""
    folder = make_shards(tmp_path, mix_rows(300), engine=LocalEngine(2))
    listed = read_json(folder / SHARDS_MANIFEST)["shards"]
    assert listed and all(HASHED not in entry for entry in listed)
    assert {e["name"]: known_md5(folder / e["name"]) for e in listed} == {
        e["name"]: e["md5"] for e in listed
    }


def mix_draws(mix: Path, num_shards: int) -> pa.Table:
    """``(doc_id, times_drawn)`` of every mix row drawn at least once, in one table."""
    parts = [t for _, t in iter_shards(mix, num_shards, ["doc_id", "times_drawn"])]
    table = pa.concat_tables(parts)
    return table.filter(pc.greater(table.column("times_drawn"), 0))


def audit_reports(files: list[Path], mix: Path) -> list:
    """The draw reports of every sample id in one table (the reference)."""
    ids = pa.concat_tables([sample_ids_table([], [], [], [])] + [sample_ids_of(f) for f in files])
    expected = mix_draws(mix, 4)
    return [draw_report(fmt, ids, expected) for fmt in ("webdataset", "parquet")]


def audit(folder: Path, mix: Path) -> tuple[list[str], list]:
    document = read_json(folder / SHARDS_MANIFEST)
    by_shard = {}
    for entry in document["shards"]:
        by_shard.setdefault(entry["shard"], []).append(entry)
    problems = [p for s in by_shard for p in verify_shard(s, folder, by_shard)]
    problems += unlisted_files(folder, document)
    files = sorted([*folder.glob("*.tar"), *folder.glob("*.parquet")])
    reports = audit_reports(files, mix)
    for partitions, workers in ((1, 1), (3, 2)):  # partitioned on the engine: the same reports
        work = folder.parent / f"draws-{partitions}"
        engine = LocalEngine(workers)
        assert draw_reports(files, mix, 4, work, engine, 1024, partitions) == reports
    return problems, [r for r in reports if r.wrong or r.duplicate_keys or r.samples != r.draws]


def test_the_audit_finds_a_changed_byte_an_unlisted_file_and_wrong_draws(tmp_path: Path) -> None:
    folder = make_shards(tmp_path)
    mix = tmp_path / "mix"
    assert audit(folder, mix) == ([], [])

    changed = tmp_path / "changed"
    shutil.copytree(folder, changed)
    tar = changed / entries(changed, "webdataset")[1]["name"]
    data = bytearray(tar.read_bytes())
    data[700] ^= 0x01  # inside the first sample's json
    tar.write_bytes(bytes(data))
    problems, _ = audit(changed, mix)
    assert any(p.startswith(f"{tar.name}: md5 ") for p in problems)

    extra = tmp_path / "extra"
    shutil.copytree(folder, extra)
    (extra / "notes").mkdir()
    (extra / "notes" / "readme.txt").write_text("not a shard")
    assert audit(extra, mix)[0] == ["notes/readme.txt"]

    # a writer that duplicated one sample and lost another, consistently in both formats
    # and in the manifest: the files agree with the manifest, the draws do not
    bad = tmp_path / "bad"
    rows = mix_rows(300)
    rows[3]["times_drawn"], rows[4]["times_drawn"] = 2, 0
    make_shards(bad, rows)
    write_mix(bad / "mix", mix_rows(300), 4)  # the mix as it really is
    problems, failed = audit(bad / "training_shards", bad / "mix")
    assert problems == [] and {r.fmt for r in failed} == {"webdataset", "parquet"}
    assert failed[0].examples == (
        "doc-00003: drawn 1, webdataset holds 2 (2 distinct draws)",
        "doc-00004: drawn 2, webdataset holds 0 (0 distinct draws)",
    )


@pytest.mark.parametrize("drop", [False, True])
def test_duplicate_keys_are_counted(drop: bool) -> None:
    ids = sample_ids_table(["parquet"] * 3, ["a-0", "a-0", "b-0"], ["a", "a", "b"], [0, 0, 0])
    expected = pa.table({"doc_id": ["a", "b"], "times_drawn": pa.array([1, 1], pa.int32())})
    if drop:
        expected = expected.slice(0, 1)
    report = draw_report("parquet", ids, expected)
    assert report.duplicate_keys == 1 and report.wrong == (2 if drop else 1)


def test_batched_tasks_find_what_per_file_ones_find(tmp_path: Path, monkeypatch) -> None:
    folder = make_shards(tmp_path)
    changed = folder / entries(folder, "webdataset")[1]["name"]
    data = bytearray(changed.read_bytes())
    data[700] ^= 0x01
    changed.write_bytes(bytes(data))
    document = read_json(folder / SHARDS_MANIFEST)
    by_shard: dict[int, list] = {}
    for entry in document["shards"]:
        by_shard.setdefault(entry["shard"], []).append(entry)
    expected = [p for s in sorted(by_shard) for p in verify_shard(s, folder, by_shard)]
    batches = range(-(-len(by_shard) // 2))
    assert len(batches) > 1 and expected
    assert [p for b in batches for p in shard_audit.verify_batch(b, folder, 2)] == expected
    files = sorted([*folder.glob("*.tar"), *folder.glob("*.parquet")])
    whole = audit_reports(files, tmp_path / "mix")
    monkeypatch.setattr(draw_audit, "FILE_BATCH", 3)
    assert len(files) > 3
    batched = draw_reports(files, tmp_path / "mix", 4, tmp_path / "work", LocalEngine(1), 1024, 2)
    assert batched == whole and batched[0].samples > 0


def test_the_files_are_compared_block_by_block_as_a_whole_read_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tar and the Parquet file are read side by side a few samples at a time: a sample
    that differs in a later block, or a file that ends early, is found at its position."""
    monkeypatch.setattr(shard_audit, "VERIFY_ROWS", 7)
    folder = make_shards(tmp_path, max_samples=None)  # one output shard of ~350 samples
    manifest = read_json(folder / SHARDS_MANIFEST)
    entry = next(e for e in manifest["shards"] if e["format"] == "parquet")
    by_shard = {entry["shard"]: [e for e in manifest["shards"] if e["shard"] == entry["shard"]]}
    path = folder / entry["name"]
    table = pq.read_table(path)
    assert verify_shard(entry["shard"], folder, by_shard) == []

    def rewrite(changed: pa.Table) -> list[str]:
        path.chmod(0o644)
        pq.write_table(changed, path)
        return verify_shard(entry["shard"], folder, by_shard)

    texts = table.column("text").to_pylist()
    texts[23] = (texts[23] or "").upper()  # the same words, in capitals: same token count
    problems = rewrite(table.set_column(table.column_names.index("text"), "text", [texts]))
    assert problems[-1] == f"shard {entry['shard']}: tar and Parquet differ from sample 23 on"
    assert not any("samples and" in p for p in problems)

    samples, tokens = entry["samples"], entry["tokens"]
    last = len(table.column("text")[samples - 1].as_py().split())
    problems = rewrite(table.slice(0, samples - 1))
    assert f"{path.name}: {samples - 1} samples and {tokens - last} tokens, listed " in (
        "\n".join(problems)
    )
    assert problems[-1] == (
        f"shard {entry['shard']}: tar and Parquet differ from sample {samples - 1} on"
    )
