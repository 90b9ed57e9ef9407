"""End to end: `corpus audit RELEASE` on the built sample writes one self-contained HTML page;
headless Chromium (Debian's chromium package: .ci/run installs it) renders it, and every number
read back from the rendered DOM equals the registry's: each check's status and verdict, the
release's rows and tokens, every shard's bytes and manifest MD5 (and its SHA-256), every raw
file's MD5 and rows, the filter funnel, dedup, split and mix counts, the replay command. Values
are HTML-escaped; an unknown release or an output inside data/ is refused."""

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from corpus_platform.audit_report import audit_facts, default_path
from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    RAW_DOCUMENTS,
    SPLIT_DOCUMENTS,
    TRAINING_MIX,
)
from corpus_platform.cli import main as corpus
from corpus_platform.kernels.sharding.audit_page import render_audit_page
from corpus_platform.kernels.sharding.card import SPLIT_PROMISES
from corpus_platform.store.provenance import code_version
from corpus_platform.store.registry import check_status, find_snapshot, latest_checks
from corpus_platform.store.releases import find_release

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHARDS = Path("data") / "training_shards"
SECTIONS = ["summary", "sources", "code", "checks", "files", "funnel", "dedup", "split", "mix"]
VOID = {"meta", "link", "br", "img", "input", "hr", "col", "base", "wbr", "source"}


class Dom(HTMLParser):
    """The text of every element with an id, and every table row: its attributes and cells."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: dict[str, str] = {}
        self.rows: list[tuple[dict[str, str], list[tuple[dict[str, str], str]]]] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in VOID:
            return
        self._open.append((tag, {k: v or "" for k, v in attrs}, []))
        if tag == "tr":
            self.rows.append((self._open[-1][1], []))

    def handle_data(self, data: str) -> None:
        for _, _, parts in self._open:
            parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or tag not in (t for t, _, _ in self._open):
            return
        while True:
            name, attrs, parts = self._open.pop()
            if name == "td":
                self.rows[-1][1].append((attrs, "".join(parts)))
            if "id" in attrs:
                self.ids[attrs["id"]] = "".join(parts)
            if name == tag:
                return

    def table(self, key: str, **match: str) -> list[dict[str, str]]:
        """The rows having ``data-<key>`` (and the ``match`` attributes): each row's attributes
        and the text of its ``data-field`` cells by field."""
        found = []
        for attrs, cells in self.rows:
            if f"data-{key}" in attrs and all(
                attrs.get(f"data-{k}") == v for k, v in match.items()
            ):
                fields = {a["data-field"]: text for a, text in cells if "data-field" in a}
                found.append({**attrs, **fields})
        return found

    def by(self, key: str, **match: str) -> dict[str, dict[str, str]]:
        """:meth:`table` keyed by ``data-<key>`` (which must be unique)."""
        rows = self.table(key, **match)
        keyed = {r[f"data-{key}"]: r for r in rows}
        assert len(keyed) == len(rows), f"data-{key} repeated"
        return keyed


def number(text: str) -> int:
    return int(text.replace(",", ""))


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium; fails (never skips) without Debian's chromium package."""
    assert CHROMIUM.is_file(), f"{CHROMIUM} missing: apt-get install chromium (.ci/run does)"
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


@pytest.fixture(scope="module")
def audited(built, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    """A copy of the built sample with a named release audited: (root, release, page)."""
    root = tmp_path_factory.mktemp("audit") / "project"
    shutil.copytree(built[0], root)
    assert corpus(["release", "audit1", "--root", str(root)]) == 0
    assert corpus(["audit", "audit1", "--root", str(root)]) == 0
    release = find_release(root, "audit1")
    assert release is not None
    return root, release, default_path(root, "audit1")


@pytest.fixture(scope="module")
def rendered(audited, tmp_path_factory: pytest.TempPathFactory) -> tuple[Dom, Path]:
    """The page's DOM after Chromium rendered it, and a screenshot of it."""
    tmp = tmp_path_factory.mktemp("chromium")
    url = audited[2].as_uri()
    dumped = chromium(tmp / "profile", "--dump-dom", url).stdout
    png = tmp / "audit.png"
    chromium(tmp / "profile", f"--screenshot={png}", "--window-size=1280,2000", url)
    return Dom(dumped), png


def test_the_page_is_self_contained_and_renders(audited, rendered) -> None:
    root, release, page = audited
    dom, png = rendered
    assert page == root / ".corpus" / "releases" / "audit1" / "audit.html"
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"<script|<link|<img|<iframe|\bsrc=|href=|url\(|@import", html, re.I)
    assert set(SECTIONS) | {"replay"} <= set(dom.ids)
    assert dom.ids["replay-command"] == f"corpus replay {release['snapshot_id']}"
    assert dom.ids["checkout-command"] == "corpus checkout audit1"
    image = matplotlib.image.imread(png)
    assert image.shape[:2] == (2000, 1280)
    ink = (image[..., :3] < 0.5).all(axis=-1).mean()  # dark pixels: text was drawn
    assert 0.005 < ink < 0.5, ink
    assert len(np.unique(image[..., :3].reshape(-1, 3), axis=0)) > 20  # text, tables, colours


def test_summary_and_code_equal_the_release_record(audited, rendered) -> None:
    _, release, _ = audited
    ids = rendered[0].ids
    assert ids["release-name"] == "audit1"
    assert number(ids["rows"]) == release["rows"] and number(ids["tokens"]) == release["tokens"]
    assert ids["snapshot-id"] == release["snapshot_id"]
    assert ids["raw-snapshot"] == release["raw_snapshot"]
    assert ids["config-hash"] == release["config_hash"]
    assert ids["code-commit"] == release["code_version"]
    assert ids["code-dirty"].startswith("yes") == release["code_dirty"]
    if release["code_dirty"] and code_version().dirty:  # the package tree is dirty now
        assert re.fullmatch(r"[0-9a-f]{64}", ids["diff-sha256"])
    else:
        assert "diff-sha256" not in ids
    stages = rendered[0].by("stage")
    assert {stage: row["snapshot"] for stage, row in stages.items()} == release["snapshots"]


def test_every_check_verdict_equals_the_registry(audited, rendered) -> None:
    root, release, _ = audited
    dom = rendered[0]
    shown = {(r["data-asset"], r["data-check"]): r for r in dom.table("check")}
    expected = {
        (asset, name): record
        for asset, snapshot in release["snapshots"].items()
        for name, record in latest_checks(root, asset, snapshot).items()
    }
    assert len(expected) >= 15 and sorted(shown) == sorted(expected)
    labels = {"passed": "PASS", "failed": "FAIL", "not applicable": "n/a"}
    for key, record in expected.items():
        status = check_status(record)
        assert shown[key]["data-status"] == status, key
        assert shown[key]["status"] == labels[status], key
        assert shown[key]["verdict"] == record["verdict"], key
    statuses = [check_status(r) for r in expected.values()]
    assert number(dom.ids["checks-passed"]) == statuses.count("passed")
    assert number(dom.ids["checks-failed"]) == statuses.count("failed") == 0
    assert number(dom.ids["checks-na"]) == statuses.count("not applicable")


def test_every_published_file_has_the_manifest_md5_and_its_sha256(audited, rendered) -> None:
    root, release, _ = audited
    manifest = json.loads((root / SHARDS / "manifest.json").read_text(encoding="utf-8"))
    entries = {e["name"]: e for e in manifest["shards"] + manifest["card"]}
    files = rendered[0].by("file")
    assert sorted(files) == sorted([*entries, "manifest.json"])
    assert (
        sum(e.get("format") == "parquet" for e in entries.values()) == manifest["totals"]["shards"]
    )
    for name, row in files.items():
        data = (root / SHARDS / name).read_bytes()
        assert row["md5"] == entries.get(name, {}).get("md5", hashlib.md5(data).hexdigest())
        assert row["sha256"] == hashlib.sha256(data).hexdigest(), name
        assert number(row["bytes"]) == len(data), name
        if "samples" in entries.get(name, {}):
            assert number(row["samples"]) == entries[name]["samples"], name
            assert number(row["tokens"]) == entries[name]["tokens"], name
    shards = [e for e in entries.values() if e.get("format") == "webdataset"]
    assert sum(number(files[e["name"]]["samples"]) for e in shards) == release["rows"]


def test_every_raw_file_has_its_md5_and_rows(audited, rendered) -> None:
    root, release, _ = audited
    raw = find_snapshot(root, release["snapshots"][RAW_DOCUMENTS])["counts"]["rows_per_file"]
    shown = rendered[0].by("path", input="raw")
    on_disk = {
        p.relative_to(root / "data" / "raw").as_posix(): p
        for p in (root / "data" / "raw").rglob("*")
        if p.is_file()
    }
    assert sorted(shown) == sorted(raw) == sorted(on_disk)
    for name, row in shown.items():
        assert row["md5"] == hashlib.md5(on_disk[name].read_bytes()).hexdigest(), name
        assert number(row["rows"]) == raw[name], name
        assert (row["now"], row["stored"], row["licence"]) == ("same bytes", "yes", "not recorded")
    benchmark = rendered[0].table("input", input="eval:benchmark")
    assert [r["md5"] for r in benchmark] == [release["inputs"]["eval:benchmark"]]


def test_funnel_dedup_split_and_mix_equal_the_registry(audited, rendered) -> None:
    root, release, _ = audited
    dom = rendered[0]

    def counts(asset: str) -> dict:
        return find_snapshot(root, release["snapshots"][asset])["counts"]

    filtered = counts(FILTERED_DOCUMENTS)
    assert number(dom.ids["filter-rows-in"]) == filtered["rows_in"]
    assert number(dom.ids["filter-rows-kept"]) == filtered["rows"]
    funnel = {name: number(row["removed"]) for name, row in dom.by("filter").items()}
    assert {n: c for n, c in funnel.items() if c} == filtered["removed_by_filter"]
    assert sum(funnel.values()) == filtered["rows_in"] - filtered["rows"]

    dedup = counts(DEDUPLICATED_DOCUMENTS)
    dedup_ids = {"rows_in": "rows-in", "rows": "rows", "duplicate_clusters": "clusters"}
    dedup_ids |= {"rows_in_clusters": "rows-in-clusters", "similar_pairs": "similar-pairs"}
    shown = {key: number(dom.ids[f"dedup-{ident}"]) for key, ident in dedup_ids.items()}
    assert shown == {key: dedup[key] for key in shown}
    sizes = {size: number(row["clusters"]) for size, row in dom.by("size").items()}
    assert sizes == dedup["cluster_size_histogram"]

    split = counts(SPLIT_DOCUMENTS)
    sizes = {name: number(row["rows"]) for name, row in dom.by("split").items()}
    assert sizes == split["split_sizes"] and list(sizes) == ["train", "validation", "test"]
    assert dom.ids["split-mode"] == split["mode"]
    assert SPLIT_PROMISES[split["mode"]] in dom.ids["split-guarantee"]

    mix = counts(TRAINING_MIX)
    sources = dom.by("source")
    assert {s: number(r["drawn"]) for s, r in sources.items()} == mix["drawn_per_source"]
    assert {s: number(r["available"]) for s, r in sources.items()} == mix["available_per_source"]
    assert number(dom.ids["mix-rows"]) == mix["rows"] == release["rows"]


def test_values_are_escaped(audited) -> None:
    root, release, page = audited
    facts = audit_facts(root, release, page.parent)
    evil = '<script>alert("x")</script> & <b>'
    stage = replace(facts.stages[0], checks={"evil_check": ("failed", evil)})
    html = render_audit_page(
        replace(facts, card=replace(facts.card, name=evil), stages=(stage, *facts.stages[1:]))
    )
    assert "<script" not in html and "<b>" not in html
    dom = Dom(html)
    assert dom.ids["dataset-name"] == evil
    (row,) = dom.table("check", check="evil_check")
    assert (row["verdict"], row["status"], row["data-status"]) == (evil, "FAIL", "failed")
    assert dom.ids["checks-failed"] == "1"


def test_an_unknown_release_or_an_output_in_data_is_refused(audited, capsys) -> None:
    root = audited[0]
    assert corpus(["audit", "no-such-release", "--root", str(root)]) == 2
    assert "no release called 'no-such-release'" in capsys.readouterr().err
    inside = root / "data" / "audit.html"
    assert corpus(["audit", "audit1", "--root", str(root), "--out", str(inside)]) == 2
    assert not inside.exists()


def test_show_in_dagster_hashes_each_file_once(audited, monkeypatch) -> None:
    """The Croissant file and the audit page written at the end of a build share one hashing
    of the release's files, and both carry those files' SHA-256."""
    import dagster as dg

    from corpus_platform import export
    from corpus_platform.audit_report import show_in_dagster

    root, release, _ = audited
    hashed: list[Path] = []

    def counted(path: Path) -> tuple[str, str]:
        hashed.append(path)
        return real(path)

    real = export.hash_file
    monkeypatch.setattr(export, "hash_file", counted)
    with dg.DagsterInstance.ephemeral() as instance:
        page = show_in_dagster(root, release["name"], instance)
    assert hashed and sorted(hashed) == sorted(set(hashed))  # every file once
    croissant = json.loads(export.default_path(root, release["name"]).read_text("utf-8"))
    shas = {d["sha256"] for d in croissant["distribution"] if "sha256" in d}
    html = page.read_text("utf-8")
    for path in hashed:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        assert sha in shas and sha in html, path.name
