"""End to end: `corpus croissant RELEASE` on the built sample writes Croissant 1.1 metadata that
mlcroissant loads without an issue, every sample reads back through mlcroissant equal to the
Parquet shards, every file's sha256 is right, and the Responsible-AI fields carry the registry's
numbers; a release that is not the published chain (or a changed file) is refused."""

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import mlcroissant as mlc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mlcroissant._src.core.rdf import make_context  # the @context mlcroissant expects

from corpus_platform.base.names import FILTERED_DOCUMENTS, STAGES
from corpus_platform.cli import main as corpus
from corpus_platform.config import FilterConfig
from corpus_platform.export import default_path
from corpus_platform.kernels.filtering.filters import DOMAIN, FILTERS, LANGUAGE
from corpus_platform.store.registry import find_snapshot

SHARDS = Path("data") / "training_shards"


@pytest.fixture(scope="module")
def exported(built, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    """A copy of the built sample with its release exported: (root, release, croissant.json)."""
    root = tmp_path_factory.mktemp("croissant") / "project"
    shutil.copytree(built[0], root)
    release = built[1].release
    assert release is not None
    assert corpus(["croissant", release["name"], "--root", str(root)]) == 0
    return root, release, default_path(root, release["name"])


@pytest.fixture(scope="module")
def dataset(exported) -> mlc.Dataset:
    return mlc.Dataset(jsonld=exported[2])


def test_mlcroissant_loads_it_without_an_issue(exported, dataset) -> None:
    root, release, path = exported
    assert path == root / ".corpus" / "releases" / release["name"] / "croissant.json"
    issues = dataset.metadata.ctx.issues
    assert not issues.errors and not issues.warnings, issues.report()
    assert dataset.metadata.ctx.is_v1_1()
    document = json.loads(path.read_text(encoding="utf-8"))
    expected = make_context(mlc.Context(conforms_to="http://mlcommons.org/croissant/1.1"))
    assert document["@context"] == {**expected, "prov": "http://www.w3.org/ns/prov#"}
    assert document["license"] == "unknown"  # the sample declares no annotations.license
    assert not list((root / SHARDS).glob("croissant*"))  # nothing written beside the shards


def test_every_sample_reads_back_through_mlcroissant(exported, dataset) -> None:
    root, _, _ = exported
    manifest = json.loads((root / SHARDS / "manifest.json").read_text(encoding="utf-8"))
    files = [e["name"] for e in manifest["shards"] if e["format"] == "parquet"]
    table = pa.concat_tables(pq.read_table(root / SHARDS / name) for name in files).to_pylist()
    records = list(dataset.records("samples"))
    assert len(records) == manifest["totals"]["samples"] == len(table)

    def value(record: dict[str, Any], column: str) -> Any:
        got = record[f"samples/{column}"]
        return got.decode() if isinstance(got, bytes) else got

    assert [value(r, "key") for r in records] == [row["key"] for row in table]
    for index in (0, len(table) // 2, len(table) - 1):
        record, row = records[index], table[index]
        for column in ("doc_id", "text", "source", "raw_file", "draw", "raw_row", "bucket"):
            assert value(record, column) == row[column], (index, column)
        assert value(record, "quality_score") == pytest.approx(row["quality_score"])
        assert value(record, "timestamp").to_pydatetime() == row["timestamp"]
        assert [v.decode() for v in value(record, "replacements")] == row["replacements"]


def test_every_published_file_is_a_file_object_with_its_sha256(exported, dataset) -> None:
    root, _, path = exported
    manifest = json.loads((root / SHARDS / "manifest.json").read_text(encoding="utf-8"))
    listed = [e["name"] for e in manifest["shards"] + manifest["card"]] + ["manifest.json"]
    objects = {o.id: o for o in dataset.metadata.distribution if isinstance(o, mlc.FileObject)}
    assert sorted(objects) == sorted(listed)
    formats = {"parquet": "application/x-parquet", "tar": "application/x-tar"}
    formats["json"] = "application/json"
    for name, node in objects.items():
        file = (path.parent / node.content_url).resolve()
        assert file == (root / SHARDS / name).resolve()
        assert node.sha256 == hashlib.sha256(file.read_bytes()).hexdigest(), name
        suffix = name.rsplit(".", 1)[1]
        if suffix in formats:
            assert node.encoding_formats == [formats[suffix]]


def _threshold(name: str, config: FilterConfig) -> str:
    """How the export states a filter's recorded threshold."""
    if name.startswith("pii_"):
        return "drop"
    if name == DOMAIN:
        return config.domains.deny[0]
    if name == LANGUAGE:
        return str(config.min_language_confidence)
    if name.startswith("c4_"):
        return "on"
    limit = next(f for f in FILTERS if f.name == name).threshold(config)
    return str(int(limit)) if float(limit).is_integer() else str(limit)


def test_rai_fields_carry_the_registry_numbers(exported, dataset) -> None:
    root, release, path = exported
    filtered = find_snapshot(root, release["snapshots"][FILTERED_DOCUMENTS])
    config = FilterConfig.model_validate(filtered["config"]["filters"])
    removed = filtered["counts"]["removed_by_filter"]
    metadata = dataset.metadata
    protocol = metadata.data_preprocessing_protocol
    assert removed and sum(removed.values()) > 0
    for name, count in removed.items():
        line = next(p for p in protocol if p.startswith(f"filter {name}:"))
        assert _threshold(name, config) in line and f"removed {count:,} rows" in line, line
    sensitive = " ".join(metadata.personal_sensitive_information)
    for kind, found in filtered["counts"]["replacements"].items():
        if kind in config.pii:
            assert f"{kind}: {config.pii[kind]}, {found:,} matches replaced" in sensitive
    split = release["snapshots"]["split_documents"]
    assert any(p.startswith("Split: mode group") and split in p for p in protocol)
    assert any(split in use for use in metadata.data_use_cases)
    assert metadata.data_collection and metadata.data_limitations and metadata.data_biases
    document = json.loads(path.read_text(encoding="utf-8"))
    generated = document["prov:wasGeneratedBy"]
    assert generated["@id"].endswith(release["run_id"])
    assert release["code_version"] in generated["prov:wasAssociatedWith"]["@id"]
    assert generated["prov:used"]["@id"].endswith(release["config_hash"])
    derived = " ".join(d["@id"] for d in document["prov:wasDerivedFrom"])
    for stage in STAGES:
        assert release["snapshots"][stage] in derived
    assert release["raw_snapshot"] in derived and "web/crawl-0.jsonl" in derived


def _copy(built, tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "project"
    shutil.copytree(built[0], root)
    return root, built[1].release["name"]


def test_a_release_not_published_in_data_is_refused(built, tmp_path: Path, capsys) -> None:
    root, name = _copy(built, tmp_path)
    pointer = root / "data" / "training_shards.dvc"
    published = built[1].release["snapshot_id"]
    written = default_path(root, name).read_bytes()  # recording the release wrote it
    pointer.write_text(pointer.read_text().replace(published, "0" * 32 + ".dir"))
    assert corpus(["croissant", name, "--root", str(root)]) == 2
    error = capsys.readouterr().err
    assert f"corpus checkout {name}" in error and published in error
    assert default_path(root, name).read_bytes() == written  # a refusal writes nothing


def test_a_changed_file_an_unknown_release_and_data_as_target_are_refused(
    built, tmp_path: Path, capsys
) -> None:
    root, name = _copy(built, tmp_path)
    assert corpus(["croissant", "no-such-release", "--root", str(root)]) == 2
    assert "corpus releases" in capsys.readouterr().err
    inside = root / "data" / "croissant.json"
    assert corpus(["croissant", name, "--root", str(root), "--out", str(inside)]) == 2
    assert "write outside data/" in capsys.readouterr().err
    shard = root / SHARDS / "train-000000.parquet"
    shard.chmod(0o644)
    shard.write_bytes(shard.read_bytes() + b"\0")
    assert corpus(["croissant", name, "--root", str(root)]) == 2
    assert "differs from manifest.json" in capsys.readouterr().err
