"""JSONL read as bytes (orjson for ASCII lines) gives exactly the rows, row numbers, replaced
characters and errors of the text-mode reader with ``json.loads`` it replaced, kept here as
the reference: on Debian's real text and on every line the two could read apart (line ends,
blank lines, big integers, nested values, undecodable bytes, bad JSON)."""

from __future__ import annotations

import gzip
import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from corpus_platform.kernels.ingest.decoding import (
    Decoding,
    InputError,
    ReadStats,
    decoded_line,
)
from corpus_platform.kernels.ingest.readers import _json_record, _records_table, read_batches
from tests.realtext import real_text_records

ROWS = 10_000  # decoding.BATCH_ROWS


def reference(path: Path, decoding: Decoding, stats: ReadStats) -> Iterator[tuple[int, pa.Table]]:
    """The reader before: text mode, universal newlines kept, ``json.loads`` on every line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    rows: list[dict] = []
    first = 0
    with opener(path, "rt", encoding=decoding.encoding, errors="surrogateescape", newline="") as f:
        for line_no, line in enumerate(f, start=1):
            text = line if line.isascii() else decoded_line(path, line_no, line, decoding, stats)
            if not text.strip():
                continue
            rows.append(_json_record(path, line_no, text))
            if len(rows) == 1:
                first = line_no
            if len(rows) >= ROWS:
                yield first, _records_table(rows)
                rows = []
    if rows:
        yield first, _records_table(rows)


def outcome(reader, path: Path, decoding: Decoding) -> tuple[object, int]:
    stats = ReadStats()
    try:
        batches = [(first, table.to_pylist()) for first, table in reader(path, decoding, stats)]
    except (InputError, ValueError, OverflowError, pa.ArrowException) as error:
        return f"{type(error).__name__}: {error}", stats.replaced_chars  # both fail alike
    return batches, stats.replaced_chars


def assert_same(path: Path, decoding: Decoding | None = None) -> object:
    decoding = decoding or Decoding()
    ours = outcome(read_batches, path, decoding)
    theirs = outcome(reference, path, decoding)
    assert json.dumps(ours, default=repr) == json.dumps(theirs, default=repr)
    assert ours == theirs or repr(ours) == repr(theirs)  # NaN != NaN
    return ours[0]


def _numbers(rng: random.Random) -> list[object]:
    bits = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(40)]
    return [
        *[v for v in bits if v == v and abs(v) != float("inf")],
        *[rng.uniform(-1e6, 1e6) for _ in range(40)],
        2**53,
        -(2**53),
        1e30,
        1.8446744073709552e19,
        -0.0,
        0,
        7,
    ]  # fmt: skip (an integer beyond 2**53 beside floats fails both readers: LINE_ENDS)


def test_real_text_rows_read_as_before(tmp_path: Path) -> None:
    rng = random.Random(5)
    numbers = _numbers(rng)
    lines = []
    for i, record in enumerate(real_text_records(300)):
        row: dict[str, object] = {"id": f"d{i}", "body": record["body"], "src": record["src"]}
        row["clicks"] = numbers[i % len(numbers)]
        if i % 7 == 0:
            row["meta"] = {"package": record.get("package"), "n": [i, 2**70]}
        if i % 11 == 0:
            row["label"] = [True, None, "x", 1.5][i % 4]
        lines.append(json.dumps(row, ensure_ascii=i % 2 == 0))
    text = "\n".join(lines) + "\n"
    (tmp_path / "real.jsonl").write_text(text, encoding="utf-8")
    rows = assert_same(tmp_path / "real.jsonl")
    assert isinstance(rows, list) and sum(len(t) for _, t in rows) == len(lines)
    with gzip.open(tmp_path / "real.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(text.replace("\n", "\r\n"))
    assert_same(tmp_path / "real.jsonl.gz")
    many = "\n".join(lines * 40)  # batches of 10,000 rows and their first line numbers
    (tmp_path / "many.jsonl").write_text(many, encoding="utf-8")
    batches = assert_same(tmp_path / "many.jsonl")
    assert isinstance(batches, list) and [first for first, _ in batches] == [1, 10_001]


LINE_ENDS = [
    b'{"a": 1}\r{"a": 2}\n{"a": 3}\r\n\r\n{"a": 4}\r',  # lone CRs end lines as text mode ends them
    b'{"a": 1}\r\r\n  \n\t\x1c\x1f\n\x0b\x0c\n{"a": "\xc2\xa0"}\n\xc2\xa0\n{"a": 2}',
    b'{"a": 1}\n\n\n{"b": "x"}\n{"a": 2.5, "b": null}\n',
    b'{"n": 18446744073709551616, "m": -9223372036854775809, "f": 1e300}\n{"n": 1}\n',
    b'{"n": 9223372036854775807, "m": 18446744073709551615}\n{"n": 1.5, "m": 3}\n',
    b'{"n": 9223372036854775808}\n{"n": -9223372036854775808}\n',
    b'{"d": {"x": [1, 2]}, "l": [1, "a"]}\n{"d": "s", "l": 3}\n',
    b'{"a": 1, "a": 2, "__row": 99}\n',
]
BAD = [
    b'{"a": 1}\n{"a": NaN}\n',
    b'{"a": 1}\n{"a": 1E400}\n',
    b'{"a": 1}\n{"a": 1,}\n',
    b'{"a": 1}\n[1, 2]\n',
    b'{"a": "\\ud800"}\n',
    b'{"a": "caf\xe9 \xff"}\n{"a": "ok"}\n',
    b'{"a": "\xe2\x82"}\n{"a": "\xe2\x82\xac"}\n',
]


@pytest.mark.parametrize("data", LINE_ENDS + BAD)
@pytest.mark.parametrize("errors", ["fail", "replace"])
def test_lines_the_two_readers_could_split_or_parse_apart(
    tmp_path: Path, data: bytes, errors: str
) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    assert_same(path, Decoding("utf-8", errors))  # type: ignore[arg-type]
    assert_same(path, Decoding("latin-1", errors))  # type: ignore[arg-type]
