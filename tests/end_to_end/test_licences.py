"""End to end: licences per source and per row. The sample is built with a licence for two of its
three sources and a `licence` column on a few web rows; every stage carries each row's licence,
the split and the mix count them (equal to a count made here from the raw files), the card,
the Croissant file (validated by mlcroissant) and the audit page roll them up, and
`licenses.deny` fails split_documents' blocking check naming the offending rows while the
published data stays exactly as it was."""

import json
import shutil
from collections import Counter
from pathlib import Path

import mlcroissant as mlc
import pyarrow.parquet as pq
import pytest

from corpus_platform.audit_report import default_path as audit_path
from corpus_platform.base.checks import CheckStatus
from corpus_platform.base.names import SPLIT_DOCUMENTS, SPLITS, TRAINING_MIX
from corpus_platform.base.shards import read_manifest
from corpus_platform.cli import main as corpus
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.checks import no_denied_license_in_splits
from corpus_platform.defs.stages import check_on_published
from corpus_platform.export import default_path as croissant_path
from tests.conftest import build, make_project, set_config, tree_digest
from tests.end_to_end.test_audit_page import Dom, number

SOURCES = {"web": "CC-BY-4.0", "wiki": "CC-BY-SA-4.0"}  # code: no licence -> unknown
DECLARED = "CC0-1.0"  # the licence column of the first web rows
DECLARED_ROWS = 40


def declare_licences(raw: Path) -> set[str]:
    """Give the first web rows of crawl-0.jsonl a `licence` value; return their ids."""
    path = raw / "web" / "crawl-0.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows[:DECLARED_ROWS]:
        row["licence"] = DECLARED
    rows[DECLARED_ROWS]["licence"] = "  "  # blank: falls back to the source's licence
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {str(r["id"]) for r in rows[:DECLARED_ROWS]}


def expected_licence(row: dict, declared: set[str]) -> str:
    """A row's licence, decided here from the raw facts (not by the kernel)."""
    if row["doc_id"] in declared and row["raw_file"] == "web/crawl-0.jsonl":
        return DECLARED
    return SOURCES.get(row["source"], "unknown")


@pytest.fixture(scope="module")
def licensed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, set[str]]:
    root = tmp_path_factory.mktemp("licences") / "project"
    make_project(root)
    declared = declare_licences(root / "data" / "raw")
    set_config(root, licenses={"sources": SOURCES})
    set_config(root, input={"columns": {**_columns(root), "license": "licence"}})
    report = build(root)
    assert report.ok, report.describe()
    assert report.release is not None
    return root, report.release, declared


def _columns(root: Path) -> dict[str, str]:
    import yaml

    return yaml.safe_load((root / "corpus.yaml").read_text(encoding="utf-8"))["input"]["columns"]


def _rows(folder: Path, columns: list[str]) -> list[dict]:
    return [
        r
        for p in sorted(folder.glob("part-*.parquet"))
        for r in pq.read_table(p, columns=columns).to_pylist()
    ]


def test_every_split_row_carries_its_licence_and_the_counts_agree(licensed) -> None:
    root, _, declared = licensed
    split = root / "data" / SPLIT_DOCUMENTS
    recorded = read_manifest(split)["rows_per_license"]
    seen_declared = 0
    for name in SPLITS:
        rows = _rows(split / name, ["doc_id", "source", "raw_file", "license"])
        for row in rows:
            assert row["license"] == expected_licence(row, declared), row
        counted = Counter(r["license"] for r in rows)
        assert recorded[name] == dict(sorted(counted.items())), name
        seen_declared += counted[DECLARED]
    assert seen_declared > 0  # some declared rows survived the filters and dedup


def test_the_mix_counts_its_draws_per_licence(licensed) -> None:
    root, _, _ = licensed
    mix = root / "data" / TRAINING_MIX
    counted: Counter[str] = Counter()
    for row in _rows(mix, ["license", "times_drawn"]):
        counted[row["license"]] += row["times_drawn"]
    assert read_manifest(mix)["drawn_per_license"] == dict(sorted(counted.items()))
    assert set(counted) == {DECLARED, *SOURCES.values(), "unknown"}


def test_card_croissant_and_audit_roll_them_up(licensed) -> None:
    root, release, _ = licensed
    drawn = read_manifest(root / "data" / TRAINING_MIX)["drawn_per_license"]
    per_split = read_manifest(root / "data" / SPLIT_DOCUMENTS)["rows_per_license"]
    card = (root / "data" / "training_shards" / "README.md").read_text(encoding="utf-8")
    assert "### Licences" in card
    for licence, n in drawn.items():
        assert (
            f"| {licence} | "
            + " | ".join(f"{per_split[s].get(licence, 0):,}" for s in per_split)
            + f" | {n:,} |"
            in card
        )

    assert corpus(["croissant", release["name"], "--root", str(root)]) == 0
    path = croissant_path(root, release["name"])
    dataset = mlc.Dataset(jsonld=path)
    issues = dataset.metadata.ctx.issues
    assert not issues.errors and not issues.warnings, issues.report()
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["license"] == sorted(drawn)
    assert json.dumps(drawn, sort_keys=True) in " ".join(document["rai:dataLimitations"])

    assert corpus(["audit", release["name"], "--root", str(root)]) == 0
    dom = Dom(audit_path(root, release["name"]).read_text(encoding="utf-8"))
    table = dom.by("licence")
    assert set(table) == set(drawn)
    for licence, row in table.items():
        assert number(row["mix"]) == drawn[licence]
        for name in per_split:
            assert number(row[name]) == per_split[name].get(licence, 0)
    raw = dom.by("path", input="raw")
    assert raw["web/crawl-0.jsonl"]["licence"].startswith(f"{SOURCES['web']} (")
    assert f"{DECLARED} ({DECLARED_ROWS})" in raw["web/crawl-0.jsonl"]["licence"]
    assert raw["code/snippets.csv"]["licence"].startswith("unknown (")


def test_a_denied_licence_blocks_the_split_and_publishes_nothing(licensed, tmp_path) -> None:
    root = tmp_path / "project"
    shutil.copytree(licensed[0], root)
    set_config(root, licenses={"sources": SOURCES, "deny": [DECLARED]})
    result = check_on_published(no_denied_license_in_splits, CorpusProject(root=str(root)))
    split = root / "data" / SPLIT_DOCUMENTS
    denied = {
        r["doc_id"]
        for name in SPLITS
        for r in _rows(split / name, ["doc_id", "license"])
        if r["license"] == DECLARED
    }
    metadata = result.metadata()
    assert not result.passed
    assert metadata["verdict"].startswith(f"rows with a denied licence: {len(denied)} ")
    named = {o["doc_id"] for o in metadata["offenders"]}
    assert named <= denied and len(named) == min(20, len(denied))
    assert all(o["raw_file"] == "web/crawl-0.jsonl" for o in metadata["offenders"])

    before = tree_digest(root / "data")
    report = build(root)
    assert not report.ok
    failed = [c for c in report.checks if c.status is CheckStatus.FAILED]
    assert [(c.asset, c.name) for c in failed] == [
        (SPLIT_DOCUMENTS, "no_denied_license_in_splits")
    ], report.render()
    assert tree_digest(root / "data") == before


def test_without_a_denied_licence_the_check_is_not_applicable(licensed) -> None:
    result = check_on_published(no_denied_license_in_splits, CorpusProject(root=str(licensed[0])))
    assert result.status is CheckStatus.NOT_APPLICABLE
