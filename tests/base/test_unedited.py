"""``filtered_documents`` stores a text only where the filters edited it (PII replaced, lines
removed); every reader puts the raw text back for the other rows, found by doc id in the same
raw batch file and verified by content hash. On real text: Debian's copyright files and
changelogs hold e-mail addresses (edited) and manual pages mostly none (kept as they are)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.hashing import content_hash
from corpus_platform.base.names import FILTERED_DOCUMENTS, RAW_DOCUMENTS
from corpus_platform.base.shards import batch_part_path, read_parquet, rows_with_ids, write_parquet
from corpus_platform.base.unedited import UNEDITED_IN, unedited_stage
from corpus_platform.config import parse_config
from corpus_platform.kernels.filtering.stage import _edit_texts, filter_shard
from tests.realtext import real_text_records

SEED = 11
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
BATCHES = ("a", "b")


def _raw_rows(count: int) -> pa.Table:
    records = real_text_records(count)
    texts = [r["body"] for r in records]
    return pa.table(
        {
            "doc_id": [f"doc-{i:04d}" for i in range(len(records))],
            "text": texts,
            "source": [r["src"] for r in records],
            "content_hash": [content_hash(t) for t in texts],
        }
    )


def _filter(data: Path, count: int = 120) -> tuple[pa.Table, Path]:
    """Raw batches a and b of shard 0 under ``data/raw_documents``, filtered (defaults but
    language identification) into ``data/filtered_documents``; return the raw rows."""
    raw, out = data / RAW_DOCUMENTS, data / FILTERED_DOCUMENTS
    table = _raw_rows(count)
    half = len(table) // 2
    config = parse_config({"filters": {"languages": []}}).filters
    for key, part in zip(BATCHES, (table.slice(0, half), table.slice(half)), strict=True):
        write_parquet(part, batch_part_path(raw, 0, key))
        filter_shard(0, raw, out, config, SEED, batch=key)
    return table, out


def test_kept_rows_store_only_edited_texts_and_read_back_whole(tmp_path: Path) -> None:
    raw, out = _filter(tmp_path / "data")
    config = parse_config({"filters": {"languages": []}}).filters
    edited, _, _ = _edit_texts(raw.column("text"), raw.column("source").to_pylist(), config)
    expected = dict(zip(raw.column("doc_id").to_pylist(), edited, strict=True))
    ids, raw_texts = raw.column("doc_id").to_pylist(), raw.column("text").to_pylist()
    raw_text = dict(zip(ids, raw_texts, strict=True))
    stored_edited = stored_unedited = 0
    for key in BATCHES:
        file = batch_part_path(out, 0, key)
        on_disk = pq.read_table(file)
        assert unedited_stage(on_disk.schema) == RAW_DOCUMENTS
        edits = pc.greater(pc.list_value_length(on_disk.column("replacements")), 0)
        assert pc.is_valid(on_disk.column("text")).equals(edits)  # a text only where edited
        stored_edited += pc.sum(edits).as_py()
        stored_unedited += len(on_disk) - pc.sum(edits).as_py()
        whole = read_parquet(file)
        assert UNEDITED_IN not in (whole.schema.field("text").metadata or {})
        assert whole.drop_columns(["text"]).equals(on_disk.drop_columns(["text"]))
        for doc, text, changed in zip(
            whole.column("doc_id").to_pylist(),
            whole.column("text").to_pylist(),
            edits.to_pylist(),
            strict=True,
        ):
            assert text == expected[doc]
            assert (text != raw_text[doc]) == changed
            if changed:
                assert not EMAIL.search(text) or EMAIL.search(raw_text[doc])
        removed = pq.read_table(batch_part_path(out / "removed", 0, key))
        assert unedited_stage(removed.schema) is None and removed.column("text").null_count == 0
    assert stored_edited and stored_unedited  # real text: some e-mails replaced, some none
    some = [d for d in expected if int(d[-4:]) % 3 == 0]
    few = rows_with_ids(out, 0, some, ["doc_id", "text"])  # batch by batch
    assert len(few) and all(
        text == expected[doc]
        for doc, text in zip(
            few.column("doc_id").to_pylist(), few.column("text").to_pylist(), strict=True
        )
    )
    assert read_parquet(batch_part_path(out, 0, "a"), ["doc_id"]).num_columns == 1


def test_a_raw_batch_rebuilt_since_the_filter_stops_the_reader_with_the_fix(
    tmp_path: Path,
) -> None:
    _, out = _filter(tmp_path / "data", count=40)
    raw_file = batch_part_path(tmp_path / "data" / RAW_DOCUMENTS, 0, "a")
    filtered_file = batch_part_path(out, 0, "a")
    table = pq.read_table(raw_file)
    on_disk = pq.read_table(filtered_file)
    unedited = on_disk.filter(pc.is_null(on_disk.column("text"))).column("doc_id")[0].as_py()
    texts = [
        t + " changed" if d == unedited else t
        for d, t in zip(table["doc_id"].to_pylist(), table["text"].to_pylist(), strict=True)
    ]
    changed = table.set_column(1, "text", pa.array(texts)).set_column(
        3, "content_hash", pa.array([content_hash(t) for t in texts])
    )
    write_parquet(changed, raw_file)
    fix = f"materialize {FILTERED_DOCUMENTS} again"
    with pytest.raises(CorpusError, match=rf"{filtered_file}.*another content hash.*{fix}"):
        read_parquet(filtered_file)
    write_parquet(changed.filter(pc.not_equal(changed["doc_id"], unedited)), raw_file)
    with pytest.raises(CorpusError, match=rf"{unedited}.*{fix}"):
        read_parquet(filtered_file, ["doc_id", "text"])
    raw_file.unlink()
    with pytest.raises(CorpusError, match=rf"{raw_file}, which is missing; {fix}"):
        read_parquet(filtered_file)
    assert len(read_parquet(filtered_file, ["doc_id", "quality_score"])) == len(on_disk)
