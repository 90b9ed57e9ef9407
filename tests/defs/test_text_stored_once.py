"""The dedup stage stores no text: its rows take it from ``filtered_documents``, and every
reader after it (the split, the too-short rule) puts it back by doc id."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.names import (
    BATCH_DIGESTS,
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    SPLIT_DOCUMENTS,
    SPLITS,
)
from corpus_platform.base.shards import MANIFEST, read_parquet, shard_files
from corpus_platform.defs.generations import dedup_texts
from corpus_platform.defs.resources import CorpusProject


def rows_of(folder: Path, columns: list[str] | None = None) -> pa.Table:
    files = [f for part in sorted(folder.glob("part-*.parquet")) for f in shard_files(part)]
    return pa.concat_tables([read_parquet(f, columns) for f in files], promote_options="default")


def test_dedup_rows_store_no_text_and_the_split_has_each_rows_filtered_text(built) -> None:
    root, report, _ = built
    assert report.ok, report.render()
    data = root / "data"
    dedup = rows_of(data / DEDUPLICATED_DOCUMENTS)
    assert "text" not in dedup.column_names and "cluster_id" in dedup.column_names
    filtered = rows_of(data / FILTERED_DOCUMENTS, ["doc_id", "text"])
    text_of = dict(zip(filtered["doc_id"].to_pylist(), filtered["text"].to_pylist(), strict=True))
    split = pa.concat_tables([rows_of(data / SPLIT_DOCUMENTS / s) for s in SPLITS])
    assert split.column_names[:2] == ["doc_id", "text"]  # where the text always was
    assert len(split) and all(
        text_of[d] == t
        for d, t in zip(split["doc_id"].to_pylist(), split["text"].to_pylist(), strict=True)
    )
    kept = set(dedup["doc_id"].to_pylist())
    assert set(split["doc_id"].to_pylist()) <= kept
    assert pc.sum(pc.is_valid(split["text"])).as_py() > 0


def test_a_filter_rebuilt_since_dedup_stops_its_readers_with_the_fix(built_copy: Path) -> None:
    corpus = CorpusProject(root=str(built_copy))
    source = dedup_texts(corpus)
    assert source.some_rows and source.folder == built_copy / "data" / FILTERED_DOCUMENTS
    manifest = built_copy / "data" / FILTERED_DOCUMENTS / MANIFEST
    data = json.loads(manifest.read_text())
    changed = sorted(data[BATCH_DIGESTS])[0]
    data[BATCH_DIGESTS][changed] = "0" * 32
    manifest.chmod(0o644)
    manifest.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match=rf"{changed}.*materialize {DEDUPLICATED_DOCUMENTS}"):
        dedup_texts(corpus)
