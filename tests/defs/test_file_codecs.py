"""Stage files are LZ4, read many times inside the platform; the training shards' Parquet files,
which leave it, are zstd (docs/design-decisions.md, "Stage files are LZ4")."""

from pathlib import Path

import pyarrow.parquet as pq

from corpus_platform.base.names import STAGES, TRAINING_SHARDS


def codecs(path: Path) -> set[str]:
    """The compression of every column chunk of a Parquet file."""
    meta = pq.ParquetFile(path).metadata
    return {
        meta.row_group(g).column(c).compression
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    }


def test_stage_files_are_lz4_and_the_training_shards_zstd(built) -> None:
    root, report, _ = built
    assert report.ok, report.render()
    data = root / "data"
    texts = 0
    for stage in STAGES:
        files = [f for f in sorted((data / stage).rglob("*.parquet")) if f.is_file()]
        assert files, stage
        for file in files:
            found = codecs(file)
            if stage == TRAINING_SHARDS:
                assert found == {"ZSTD"}, file
            elif "text" in pq.read_schema(file).names and pq.ParquetFile(file).metadata.num_rows:
                assert found == {"LZ4"}, file
                texts += 1
            else:  # files of hashes are stored uncompressed (base/shards.HASH_FILE_OPTIONS)
                assert found <= {"LZ4", "UNCOMPRESSED"}, file
    assert texts
