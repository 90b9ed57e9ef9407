"""Raw ingest: every format, the column mapping, clear errors, deterministic shards."""

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.files import identity, known_md5
from corpus_platform.base.names import batch_key
from corpus_platform.base.shards import batch_part_path, read_parquet, read_shard
from corpus_platform.config import parse_config
from corpus_platform.kernels.ingest import readers
from corpus_platform.kernels.ingest.canonical import (
    assemble_shard,
    canonical_schema,
    canonicalize_file,
    repeated_ids,
)
from corpus_platform.kernels.ingest.readers import InputError, list_input_files, read_batches
from tests.realtext import real_text_records

ROWS = [
    {
        "id": "a",
        "body": "alpha text",
        "src": "web",
        "author": "u1",
        "created_at": "2024-01-02T03:04:05Z",
        "clicks": 3,
        "label": 1,
    },
    {
        "id": "b",
        "body": "beta text",
        "src": "wiki",
        "author": "u2",
        "created_at": "2024-02-02T00:00:00Z",
        "clicks": 4.5,
        "label": 0,
    },
]


def config(**columns: str):
    mapping = {
        "doc_id": "id",
        "text": "body",
        "source": "src",
        "entity": "author",
        "timestamp": "created_at",
        "label": "label",
    }
    mapping.update(columns)
    return parse_config({"num_shards": 2, "input": {"columns": mapping, "features": ["clicks"]}})


def write_all_formats(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "a.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    with gzip.open(root / "b.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({**ROWS[0], "id": "c"}) + "\n")
    pq.write_table(
        pa.Table.from_pylist([{**ROWS[1], "id": "d", "clicks": 1.0}]), root / "c.parquet"
    )
    (root / "d.csv").write_text(
        "id,body,src,author,created_at,clicks,label\ne,csv text,code,u3,1700000000,2,1\n",
        encoding="utf-8",
    )


def ingest(root: Path, staging: Path, cfg) -> list:
    """Every input file spilled (held in memory up to 0 bytes), then assembled shard by shard."""
    files = list_input_files(root)
    for index in range(len(files)):
        assert canonicalize_file(index, files, root, cfg, staging, hold_bytes=0).spilled
    batches = tuple((i, batch_key(f.relative_to(root).as_posix())) for i, f in enumerate(files))
    return [
        assemble_shard(s, staging, canonical_schema(cfg.input.features), batches)
        for s in range(cfg.num_shards)
    ]


def ingest_in_memory(root: Path, staging: Path, cfg) -> list:
    """Every input file held in memory and written at once, as the raw stage does by default."""
    files = list_input_files(root)
    return [canonicalize_file(i, files, root, cfg, staging) for i in range(len(files))]


def test_all_formats_are_mapped_onto_the_canonical_schema(tmp_path: Path) -> None:
    write_all_formats(tmp_path / "raw")
    cfg = config()
    summaries = ingest(tmp_path / "raw", tmp_path / "out", cfg)
    assert sum(s.rows for s in summaries) == 5
    rows = {r["doc_id"]: r for s in range(2) for r in read_shard(tmp_path / "out", s).to_pylist()}
    assert sorted(rows) == ["a", "b", "c", "d", "e"]
    assert rows["a"]["raw_file"] == "a.jsonl" and rows["a"]["raw_row"] == 1
    assert rows["b"]["raw_row"] == 2
    assert rows["e"]["raw_file"] == "d.csv" and rows["e"]["source"] == "code"
    assert rows["e"]["timestamp"].year == 2023  # epoch seconds
    assert rows["b"]["clicks"] == 4.5 and rows["a"]["label"] == 1.0
    assert rows["a"]["timestamp"].isoformat() == "2024-01-02T03:04:05+00:00"
    assert rows["a"]["content_hash"] == rows["c"]["content_hash"]


def test_each_written_file_comes_back_with_the_md5_of_its_bytes(tmp_path: Path) -> None:
    # what the raw stage hands DVC for its pin: every batch file of the shard, hashed as it is
    write_all_formats(tmp_path / "raw")
    summaries = ingest(tmp_path / "raw", tmp_path / "out", config())
    files = list_input_files(tmp_path / "raw")
    for summary in summaries:
        written = [
            batch_part_path(tmp_path / "out", summary.shard, batch_key(f.name)) for f in files
        ]
        assert [md5 for md5, _ in summary.hashed] == [
            hashlib.md5(path.read_bytes()).hexdigest() for path in written
        ]
        assert [hashed for _, hashed in summary.hashed] == [identity(p.stat()) for p in written]
        assert known_md5(written[0]) == summary.hashed[0][0]  # remembered where it was read


def test_shards_are_sorted_and_identical_on_rerun(tmp_path: Path) -> None:
    write_all_formats(tmp_path / "raw")
    ingest(tmp_path / "raw", tmp_path / "one", config())
    ingest(tmp_path / "raw", tmp_path / "two", config())
    names = ["a.jsonl", "b.jsonl.gz", "c.parquet", "d.csv"]
    for shard in range(2):  # one file per raw batch in every shard, even an empty one
        for name in names:
            one = batch_part_path(tmp_path / "one", shard, batch_key(name))
            assert (
                one.read_bytes()
                == batch_part_path(tmp_path / "two", shard, batch_key(name)).read_bytes()
            )
            ids = read_parquet(one).column("doc_id").to_pylist()
            assert ids == sorted(ids)
        files = sorted(p.name for p in (tmp_path / "one" / f"part-{shard:05d}.parquet").iterdir())
        assert files == sorted(f"{batch_key(n)}.parquet" for n in names)


def write_real_text_files(root: Path) -> None:
    """Two jsonl files of real Debian text (copyright files, changelogs, manual pages)."""
    root.mkdir(parents=True)
    records = real_text_records(90)
    for number, part in enumerate((records[:50], records[50:])):
        lines = (
            json.dumps(
                {
                    **r,
                    "author": r["package"],
                    "created_at": "2024-01-01T00:00:00Z",
                    "clicks": 1,
                    "label": 0,
                }
            )
            for r in part
        )
        (root / f"part-{number}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def batch_files_of(staging: Path) -> dict[str, bytes]:
    files = (p for p in staging.rglob("*.parquet") if p.is_file())
    return {p.relative_to(staging).as_posix(): p.read_bytes() for p in files}


def test_a_file_held_in_memory_writes_the_bytes_the_spill_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rows held in memory, spilled from the first batch, or spilled once they outgrow the budget
    # midway: the same batch files, byte for byte, and each MD5 handed over is of those bytes
    monkeypatch.setattr(readers, "BATCH_ROWS", 7)  # several batches a file
    root = tmp_path / "raw"
    write_real_text_files(root)
    cfg = parse_config({**config().model_dump(), "num_shards": 3})
    files = list_input_files(root)
    held = [canonicalize_file(i, files, root, cfg, tmp_path / "held") for i in range(2)]
    assert not any(s.spilled for s in held) and not (tmp_path / "held" / "_spill").exists()
    assert [s.rows for s in held] == [50, 40]
    written = batch_files_of(tmp_path / "held")
    assert len(written) == 6 and len(set(written.values())) == 6
    md5s = {md5 for s in held for md5, _ in s.hashed}
    assert md5s == {hashlib.md5(data).hexdigest() for data in written.values()}
    ingest(root, tmp_path / "spilled", cfg)
    half = (root / "part-0.jsonl").stat().st_size // 2  # outgrown after a few batches
    midway = [
        canonicalize_file(i, files, root, cfg, tmp_path / "midway", hold_bytes=half)
        for i in range(2)
    ]
    assert all(s.spilled and not s.hashed for s in midway)
    schema = canonical_schema(cfg.input.features)
    batches = ((0, batch_key("part-0.jsonl")), (1, batch_key("part-1.jsonl")))
    for shard in range(3):
        assemble_shard(shard, tmp_path / "midway", schema, batches)
    for way in ("spilled", "midway"):
        assert batch_files_of(tmp_path / way) == written, way
    ids = {r["doc_id"] for s in range(3) for r in read_shard(tmp_path / "held", s).to_pylist()}
    assert len(ids) == 90


def test_duplicate_ids_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    (root / "a.jsonl").write_text(
        "\n".join(json.dumps(r) for r in [ROWS[0], ROWS[0]]), encoding="utf-8"
    )
    ingest(root, tmp_path / "out", config())
    assert repeated_ids(tmp_path / "out", config().num_shards) == (2, ["a"])


def test_missing_mapped_column_names_file_and_fix(tmp_path: Path) -> None:
    write_all_formats(tmp_path / "raw")
    with pytest.raises(InputError, match=r"a\.jsonl: column 'writer' \(mapped to 'entity'"):
        ingest(tmp_path / "raw", tmp_path / "out", config(entity="writer"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("created_at", "yesterday", r"row 2: column 'created_at' is not a timestamp"),
        ("clicks", "many", r"row 2: column 'clicks' must be numeric"),
        ("id", None, r"row 2: column for 'doc_id' is empty"),
    ],
)
def test_bad_values_name_the_row(tmp_path: Path, field: str, value: object, message: str) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    rows = [ROWS[0], {**ROWS[1], field: value}]
    (root / "x.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        ingest(root, tmp_path / "out", config())


def test_input_folder_problems(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="input folder not found"):
        list_input_files(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no input files"):
        list_input_files(tmp_path / "empty")
    (tmp_path / "empty" / "notes.txt").write_text("hi", encoding="utf-8")
    with pytest.raises(InputError, match=r"notes\.txt: unsupported input format"):
        list_input_files(tmp_path / "empty")


def test_broken_json_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "a"}\n\n{"id": \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"x\.jsonl: line 3: not valid JSON"):
        list(read_batches(path))
