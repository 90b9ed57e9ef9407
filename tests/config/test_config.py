"""corpus.yaml validation: every bad field gets an error naming it."""

from pathlib import Path

import pytest

from corpus_platform.config import ConfigError, load_config, parse_config
from tests.conftest import REPO, project_config


def test_repository_config_is_valid() -> None:
    config = load_config(REPO / "corpus.yaml")
    assert config.input.features == ("clicks", "dwell_seconds")
    assert config.split.similarity_threshold < config.dedup.threshold
    assert config.shards.max_bytes == 1_000_000 and config.shards.max_samples is None
    assert parse_config({}).shards.max_bytes == 256 * 2**20  # the default cap


@pytest.mark.parametrize(
    ("section", "value", "expected"),
    [
        ("split", {"ratios": {"train": 0.8, "validation": 0.1, "test": 0.2}}, "split.ratios"),
        ("split", {"ratios": {"train": 0.9, "test": 0.1}}, "must name exactly"),
        ("split", {"mode": "random"}, "split.mode"),
        ("dedup", {"threshold": 1.5}, "dedup.threshold"),
        ("dedup", {"num_perm": 4}, "dedup.num_perm"),
        ("filters", {"min_chars": 500, "max_chars": 100}, "min_chars must be smaller"),
        ("filters", {"min_wrds": 3}, "filters.min_wrds: unknown field"),
        ("mix", {"proportions": {"web": 0.5}}, "proportions must sum to 1.0"),
        ("input", {"columns": {"text": "body"}}, "columns.doc_id is required"),
        ("input", {"columns": {"doc_id": "id", "author": "x"}}, "unknown canonical column"),
        ("num_shards", 0, "num_shards"),
        ("dedup", {"columns": ["nope"]}, "dedup.columns ['nope'] are not columns"),
        ("dedup", {"keep": "longest"}, "dedup.keep"),
        ("dedup", {"normalization": {"unicode": "NFX"}}, "dedup.normalization.unicode"),
        ("dedup", {"normalization": {"lowercase": True}}, "dedup.normalization.lowercase"),
        ("shards", {"max_bytes": 10_239}, "shards.max_bytes: Input should be greater than or"),
        ("shards", {"max_samples": 0}, "shards.max_samples"),
        ("shards", {"max_size": 5}, "shards.max_size: unknown field"),
    ],
)
def test_bad_field_is_named(section: str, value: object, expected: str) -> None:
    data = project_config()
    data[section] = {**data[section], **value} if isinstance(value, dict) else value
    with pytest.raises(ConfigError) as error:
        parse_config(data, "corpus.yaml")
    assert expected in str(error.value)
    assert str(error.value).startswith("corpus.yaml: invalid configuration")


def test_split_threshold_above_dedup_threshold_is_rejected() -> None:
    data = project_config(split={"similarity_threshold": 0.9})
    with pytest.raises(ConfigError, match=r"must not exceed dedup\.threshold"):
        parse_config(data)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_config_hash_is_stable_and_sensitive() -> None:
    a, b = parse_config(project_config()), parse_config(project_config())
    assert a.config_hash() == b.config_hash()
    assert a.config_hash() != parse_config(project_config(seed=1)).config_hash()


@pytest.mark.parametrize(
    ("snapshots", "expected"),
    [
        ({"remote": "s3://A_bucket/x"}, "snapshots.remote: 'A_bucket' is not an S3 bucket name"),
        ({"remote": "gs://bucket/x"}, "use s3://bucket/prefix (an S3-API store) or a folder"),
        ({"remote": "data/remote", "endpoint_url": "http://h:9000"}, "needs an S3 remote"),
        ({"remote": "s3://bucket/x", "endpoint_url": "localhost:9000"}, "use http(s)://host"),
        ({"remote": "s3://bucket/x", "access_key_id": "AKIAIOSFODNN7EXAMPLE"}, "never go into"),
        ({"remote": "s3://bucket/x", "endpoint_url": "http://u:pw-123@h:9000"}, "no credentials"),
        ({"bucket": "b"}, "snapshots.bucket: unknown field"),
    ],
)
def test_bad_snapshots_section_is_named_without_echoing_secrets(
    snapshots: dict, expected: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(project_config(snapshots=snapshots))
    assert expected in str(error.value)
    assert "AKIAIOSFODNN7EXAMPLE" not in str(error.value) and "pw-123" not in str(error.value)


def test_the_snapshot_remote_is_neither_hashed_nor_recorded(tmp_path: Path) -> None:
    plain = parse_config(project_config())
    s3 = parse_config(
        project_config(snapshots={"remote": "s3://bucket/prefix/", "endpoint_url": "http://h:1"})
    )
    assert s3.snapshots.remote == "s3://bucket/prefix" and s3.snapshots.endpoint_url == "http://h:1"
    assert s3.config_hash() == plain.config_hash()
    assert "snapshots" not in s3.recorded()
    assert s3.snapshots.remote_url(tmp_path) == "s3://bucket/prefix"
    folder = parse_config(project_config(snapshots={"remote": "../shared"})).snapshots
    assert folder.remote_url(tmp_path) == str((tmp_path / "../shared").resolve())
    assert plain.snapshots.remote_url(tmp_path) is None
