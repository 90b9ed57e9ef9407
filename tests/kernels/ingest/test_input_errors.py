"""Bad input names itself: every decode or parse error of a raw file is an InputError naming
the file, the row, line or byte, and the fix; ``input.encoding`` and ``input.decode_errors``
read what can be read. Fixtures are generated on tmp_path."""

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_platform.config import ConfigError, parse_config
from corpus_platform.kernels.ingest.canonical import FileSummary, canonicalize_file
from corpus_platform.kernels.ingest.readers import (
    Decoding,
    InputError,
    ReadStats,
    list_input_files,
    read_batches,
)
from corpus_platform.store.snapshots import cache_dir
from tests.conftest import build, make_project, project_config

ENCODING_FIX = "input.encoding: latin-1"
REPLACE_FIX = "input.decode_errors: replace"
UTF8_FIX = "re-encode the file as UTF-8"
CSV_HEADER = b"id,body\n"
UNKNOWN_ENCODING = "input.encoding: unknown text encoding"
CODEC_HINT = "use a Python codec name such as utf-8, latin-1 or cp1252"


def config(**input_fields: object):
    """A minimal config mapping ``id`` and ``body``, with extra ``input`` fields."""
    columns = {"doc_id": "id", "text": "body"}
    return parse_config({"num_shards": 2, "input": {"columns": columns, **input_fields}})


def read(path: Path, decoding: Decoding | None = None) -> tuple[list[dict], ReadStats]:
    """Every row of ``path`` and what reading it counted."""
    stats = ReadStats()
    rows = [row for _, table in read_batches(path, decoding, stats) for row in table.to_pylist()]
    return rows, stats


def message_of(path: Path, decoding: Decoding | None = None) -> str:
    """The InputError reading ``path`` raises; it must start with the file's path."""
    with pytest.raises(InputError) as caught:
        read(path, decoding)
    message = str(caught.value)
    assert message.startswith(str(path)), message
    return message


def bad_jsonl(tmp_path: Path) -> Path:
    """Three lines; line 2 holds a latin-1 byte (0xE9) and a stray 0xFF in its body."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(
        b'{"id": "a", "body": "fine"}\n{"id": "b", "body": "caf\xe9 \xff"}\n{"id": "c"}\n'
    )
    return path


def latin1_csv(tmp_path: Path) -> Path:
    path = tmp_path / "table.csv"
    path.write_bytes(CSV_HEADER + "a,plain\nb,café crème\n".encode("latin-1"))
    return path


def test_invalid_utf8_jsonl_fails_naming_file_line_byte_and_fix(tmp_path: Path) -> None:
    message = message_of(bad_jsonl(tmp_path))
    assert "docs.jsonl: line 2, byte offset 24 in the line" in message
    assert r"b'\xe9'" in message
    assert ENCODING_FIX in message and REPLACE_FIX in message and UTF8_FIX in message


def test_invalid_utf8_jsonl_with_replace_reads_and_counts(tmp_path: Path) -> None:
    rows, stats = read(bad_jsonl(tmp_path), Decoding(errors="replace"))
    assert [r["body"] for r in rows] == ["fine", "caf\ufffd \ufffd", None]
    assert [r["__row"] for r in rows] == [1, 2, 3]
    assert stats.replaced_chars == 2


def test_jsonl_encoding_decodes_every_line(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "body": "été"}\n', encoding="utf-16")
    rows, stats = read(path, Decoding(encoding="utf-16"))
    assert rows[0]["body"] == "été" and stats.replaced_chars == 0


def test_latin1_csv_fails_naming_file_line_and_fix(tmp_path: Path) -> None:
    message = message_of(latin1_csv(tmp_path))
    assert "table.csv: line 3, byte offset 21" in message  # the é of "café"
    assert r"b'\xe9'" in message
    assert ENCODING_FIX in message and REPLACE_FIX in message


def test_latin1_csv_reads_with_its_encoding(tmp_path: Path) -> None:
    rows, stats = read(latin1_csv(tmp_path), Decoding(encoding="latin-1"))
    assert [r["body"] for r in rows] == ["plain", "café crème"]
    assert [r["__row"] for r in rows] == [1, 2]
    assert stats.replaced_chars == 0


def test_latin1_csv_with_replace_counts_replaced_characters(tmp_path: Path) -> None:
    rows, stats = read(latin1_csv(tmp_path), Decoding(errors="replace"))
    assert [r["body"] for r in rows] == ["plain", "caf\ufffd cr\ufffdme"]
    assert stats.replaced_chars == 2


def test_transcoded_csv_equals_the_native_read_across_chunks(tmp_path: Path) -> None:
    # > 3 chunks of 1 MiB, multi-byte characters cut at chunk edges, > 1 pyarrow block.
    body = "".join(f"r{i},caf\u00e9 cr\u00e8me \u2603 {i}\n" for i in range(200_000))
    native = tmp_path / "utf8.csv"
    native.write_text("id,body\n" + body, encoding="utf-8")
    latin = tmp_path / "latin.csv"
    latin.write_text("id,body\n" + body.replace("\u2603", "*"), encoding="latin-1")
    expected, _ = read(native)
    replaced, stats = read(native, Decoding(errors="replace"))
    assert replaced == expected and stats.replaced_chars == 0
    decoded, _ = read(latin, Decoding(encoding="latin-1"))
    assert [r["body"] for r in decoded] == [r["body"].replace("\u2603", "*") for r in expected]


def test_csv_byte_the_declared_encoding_cannot_decode_is_named(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_bytes(CSV_HEADER + b"a,ok\nb,bad \x81 byte\n")  # 0x81 is undefined in cp1252
    message = message_of(path, Decoding(encoding="cp1252"))
    assert "table.csv: line 3, byte offset 19" in message and r"b'\x81'" in message
    assert "not valid cp1252" in message and REPLACE_FIX in message


def test_invalid_utf8_after_the_first_csv_block_is_named(tmp_path: Path) -> None:
    # pyarrow infers types from the first 4 MiB block; a later bad byte fails the conversion.
    path = tmp_path / "big.csv"
    rows = b"".join(b"r%07d,some text\n" % i for i in range(260_000))
    path.write_bytes(CSV_HEADER + rows + b"z,caf\xe9\n")
    message = message_of(path)
    assert f"big.csv: line 260002, byte offset {len(CSV_HEADER) + len(rows) + 5}" in message
    assert ENCODING_FIX in message


def test_invalid_utf8_in_the_csv_header_is_named(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_bytes(b"id,b\xe9dy\na,x\n")
    message = message_of(path)
    assert "table.csv: line 1, byte offset 4" in message and ENCODING_FIX in message


def test_ragged_csv_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_bytes(CSV_HEADER + b"a,one\nb,two,extra\nc,three\n")
    message = message_of(path)
    assert "table.csv: line 3: expected 2 columns, got 3 ('b,two,extra')" in message
    assert "quote fields" in message


def test_truncated_parquet_is_named_with_the_fix(tmp_path: Path) -> None:
    whole = tmp_path / "whole.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "body": ["x", "y"]}), whole)
    path = tmp_path / "cut.parquet"
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    message = message_of(path)
    assert "cut.parquet: not a readable Parquet file" in message
    assert "the file is truncated or not Parquet: re-export it or remove it" in message


def test_corrupt_parquet_pages_are_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "body": ["x", "y"]}), path)
    data = bytearray(path.read_bytes())
    data[4:40] = b"\xab" * 36  # the first page header; the footer stays intact
    path.write_bytes(bytes(data))
    message = message_of(path)
    assert "broken.parquet: rows from 1: corrupt Parquet data" in message
    assert "re-export it or remove it from the input folder" in message


def invalid_utf8_parquet(tmp_path: Path) -> Path:
    """A Parquet file whose row 2 body holds 0xFF, patched in after writing."""
    path = tmp_path / "bad.parquet"
    table = pa.table({"id": ["a", "b"], "body": ["fine", "PLACEHOLDER"]})
    pq.write_table(table, path, compression="none", use_dictionary=False, write_statistics=False)
    data = path.read_bytes()
    assert data.count(b"PLACEHOLDER") == 1
    path.write_bytes(data.replace(b"PLACEHOLDER", b"PLACE\xffHOLDE"))
    return path


def test_invalid_utf8_in_parquet_names_row_and_column(tmp_path: Path) -> None:
    message = message_of(invalid_utf8_parquet(tmp_path))
    assert "bad.parquet: row 2, column 'body', byte offset 5 in the value" in message
    assert r"b'\xff'" in message and "Parquet text must be UTF-8" in message


def test_invalid_utf8_in_parquet_with_replace_is_repaired(tmp_path: Path) -> None:
    rows, stats = read(invalid_utf8_parquet(tmp_path), Decoding(errors="replace"))
    assert [r["body"] for r in rows] == ["fine", "PLACE\ufffdHOLDE"]
    assert stats.replaced_chars == 1


def gzip_lines(count: int) -> bytes:
    lines = b"".join(b'{"id": "%d", "body": "text %d"}\n' % (i, i) for i in range(count))
    return gzip.compress(lines, mtime=0)


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (lambda data: data[: len(data) // 2], "Compressed file ended before"),
        (lambda data: data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:], "CRC"),
        (lambda data: b'{"id": "a"}\n', "Not a gzipped file"),
    ],
    ids=["truncated", "corrupt", "not-gzip"],
)
def test_truncated_or_corrupt_jsonl_gz_is_named(tmp_path: Path, damage, what: str) -> None:
    path = tmp_path / "docs.jsonl.gz"
    path.write_bytes(damage(gzip_lines(5000)))
    message = message_of(path)
    assert "docs.jsonl.gz: after line " in message and what in message
    assert "the file is truncated or not gzip: re-compress or re-export it" in message


def test_jsonl_gz_is_decoded_with_the_configured_encoding(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl.gz"
    path.write_bytes(gzip.compress('{"id": "a", "body": "café"}\n'.encode("latin-1")))
    assert "docs.jsonl.gz: line 1" in message_of(path)
    rows, _ = read(path, Decoding(encoding="latin-1"))
    assert rows[0]["body"] == "café"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"encoding": "latin-9x"}, f"{UNKNOWN_ENCODING} 'latin-9x'; {CODEC_HINT}"),
        ({"encoding": "base64"}, f"{UNKNOWN_ENCODING} 'base64'; {CODEC_HINT}"),
        ({"decode_errors": "ignore"}, "input.decode_errors: Input should be 'fail' or 'replace'"),
    ],
)
def test_bad_decoding_config_is_named(fields: dict, expected: str) -> None:
    with pytest.raises(ConfigError, match=r"corpus\.yaml: invalid configuration") as caught:
        config(**fields)
    assert expected in str(caught.value)


def test_canonicalize_file_counts_replaced_characters(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    bad_jsonl(root)
    files = list_input_files(root)
    summary = canonicalize_file(0, files, root, config(decode_errors="replace"), tmp_path / "stage")
    assert summary == FileSummary(rows=3, replaced_chars=2)


def add_bad_jsonl(root: Path) -> Path:
    """A sample-shaped document whose body holds two undecodable bytes."""
    sample = root / "data" / "raw" / "web" / "crawl-0.jsonl"
    record = json.loads(sample.read_text(encoding="utf-8").splitlines()[0])
    record.update(id="bad-bytes-1", body="MARKER " + record["body"])
    path = root / "data" / "raw" / "latin.jsonl"
    path.write_bytes(json.dumps(record).encode().replace(b"MARKER", b"caf\xe9 \xff"))
    return path


def test_failed_ingest_names_the_file_and_publishes_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    add_bad_jsonl(root)
    report = build(root, assets=["raw_documents"])
    assert not report.success
    assert any("latin.jsonl: line 1" in f and REPLACE_FIX in f for f in report.failures)
    assert not (root / "data" / "raw_documents").exists()
    assert not list((root / "data").glob(".staging-*"))
    # the raw files' pin, started beside the ingest, ran (their bytes are in DVC's cache) and
    # was waited for; its pointer was taken back
    assert any(p.is_file() for p in cache_dir(root).rglob("*"))
    assert not (root / "data" / "raw.dvc").exists()
    assert not list((root / "data").glob(".input-pointers-*"))


def test_replaced_characters_are_in_the_raw_documents_metadata(tmp_path: Path) -> None:
    inputs = {**project_config()["input"], "decode_errors": "replace"}
    root = make_project(tmp_path / "project", input=inputs)
    add_bad_jsonl(root)
    report = build(root, assets=["raw_documents"])
    meta = report.materialized["raw_documents"]
    assert meta["replaced_chars"] == 2
    assert meta["replaced_chars_per_file"] == {"latin.jsonl": 2}
