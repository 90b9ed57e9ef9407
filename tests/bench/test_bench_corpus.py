r"""The benchmark corpus generator (bench/webcorpus.py): determinism, shape, planted truth.

Everything here is recomputed independently of the generator's own helpers where it matters:
the Jaccard of every recorded pair from ``re.findall(r"\w+", text.lower())`` 5-gram sets.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
import yaml

from bench.webcorpus import CorpusSpec, Document, GroundTruth, WebCorpus, closure, write_corpus

REPO = Path(__file__).resolve().parents[2]
DOCS = 300
SEED = 11
GOPHER_STOP_WORDS = {"the", "be", "to", "of", "and", "that", "have", "with"}
FORMATS = ("punctuation", "markup", "line-breaks", "bullets")


def five_grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}


def exact_jaccard(a: str, b: str) -> float:
    x, y = five_grams(a), five_grams(b)
    return len(x & y) / len(x | y)


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, Document], GroundTruth]:
    generator = WebCorpus(SEED)
    docs = {doc.doc_id: doc for doc in generator.documents(DOCS)}
    return docs, generator.truth


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    def write(seed: int, name: str) -> list[bytes]:
        out = tmp_path / name
        written = write_corpus(out / "raw", 120, seed, files=3, truth=out / "truth.jsonl")
        assert written.docs == 120 and len(written.files) == 3
        return [p.read_bytes() for p in [*written.files, out / "truth.jsonl"]]

    first = write(7, "a")
    assert write(7, "b") == first
    assert write(8, "c")[0] != first[0]


def test_gzip_files_hold_the_same_lines_and_the_same_bytes_every_time(tmp_path: Path) -> None:
    plain = write_corpus(tmp_path / "plain", 60, SEED, files=2)
    packed = write_corpus(tmp_path / "gz", 60, SEED, files=2, gzip_files=True)
    again = write_corpus(tmp_path / "gz2", 60, SEED, files=2, gzip_files=True)
    assert [p.name for p in packed.files] == ["part-00000.jsonl.gz", "part-00001.jsonl.gz"]
    assert [gzip.decompress(p.read_bytes()) for p in packed.files] == [
        p.read_bytes() for p in plain.files
    ]
    assert [p.read_bytes() for p in again.files] == [p.read_bytes() for p in packed.files]


def test_a_smaller_corpus_is_a_prefix_of_a_larger_one() -> None:
    small = [d.text for d in WebCorpus(SEED, track_truth=False).documents(60)]
    large = [d.text for d in WebCorpus(SEED, track_truth=False).documents(150)]
    assert large[:60] == small


def test_documents_have_200_to_2000_words_and_the_mapped_columns(corpus) -> None:
    docs, _ = corpus
    lengths = [len(re.findall(r"\w+", d.text.lower())) for d in docs.values()]
    assert min(lengths) >= 200 and max(lengths) <= 2000
    assert 900 < sum(lengths) / len(lengths) < 1300  # uniform over 200..2000
    config = yaml.safe_load((REPO / "corpus.yaml").read_text(encoding="utf-8"))["input"]
    wanted = set(config["columns"].values()) | set(config["features"])
    record = next(iter(docs.values())).record()
    assert wanted <= set(record)
    assert len({d.doc_id for d in docs.values()}) == DOCS


def test_planted_kinds_and_rates(corpus) -> None:
    docs, _ = corpus
    kinds = Counter(d.kind for d in docs.values())
    copies = DOCS - kinds["original"]
    assert 0.15 * DOCS < copies < 0.35 * DOCS  # 24% planted
    assert kinds["exact"] > 0
    for variant in FORMATS:
        assert any(variant in kind for kind in kinds), variant
    for edit in ("scattered", "block-replace", "block-insert", "truncate"):
        assert any(kind.startswith(edit) for kind in kinds), edit
    family_sizes = Counter(d.family for d in docs.values())
    assert max(family_sizes.values()) <= 6


def test_recorded_jaccard_is_exact_for_every_pair_of_every_family(corpus) -> None:
    docs, truth = corpus
    recorded = {(a, b): j for a, b, j in truth.pairs}
    families: dict[str, list[str]] = {}
    for doc in docs.values():
        families.setdefault(doc.family, []).append(doc.doc_id)
    expected_pairs = {
        pair for members in families.values() for pair in combinations(sorted(members), 2)
    }
    assert set(recorded) == expected_pairs and expected_pairs
    for (a, b), similarity in recorded.items():
        assert similarity == pytest.approx(exact_jaccard(docs[a].text, docs[b].text), abs=1e-12)


def test_edits_land_near_their_target_and_span_the_threshold(corpus) -> None:
    docs, truth = corpus
    recorded = {(a, b): j for a, b, j in truth.pairs}
    edited = [d for d in docs.values() if d.target is not None]
    measured = [recorded[min(d.doc_id, d.parent), max(d.doc_id, d.parent)] for d in edited]
    assert all(0.45 <= j < 1.0 for j in measured)
    near = sum(abs(j - d.target) <= 0.05 for j, d in zip(measured, edited, strict=True))
    assert near >= 0.9 * len(edited)
    assert any(j >= 0.8 for j in measured) and any(j < 0.8 for j in measured)


def test_exact_and_format_only_copies_have_the_same_words(corpus) -> None:
    docs, _ = corpus
    seen = Counter()
    for doc in docs.values():
        if doc.kind == "exact":
            assert doc.text == docs[doc.parent].text
        elif doc.kind in FORMATS:
            similarity = exact_jaccard(doc.text, docs[doc.parent].text)
            assert doc.text != docs[doc.parent].text
            # markup may add a few reference numbers ([12]); the other formats add no word
            assert similarity >= 0.9 if doc.kind == "markup" else similarity == 1.0
            seen[doc.kind] += 1
    assert seen


def test_truth_clusters_are_connected_components_at_the_threshold(corpus, tmp_path) -> None:
    truth = GroundTruth([("a", "b", 0.9), ("b", "c", 0.85), ("a", "c", 0.7), ("d", "e", 0.5)])
    assert truth.clusters(0.8) == [["a", "b", "c"]]
    assert truth.cluster_pairs(0.8) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert truth.clusters(0.5) == [["a", "b", "c"], ["d", "e"]]
    assert closure([("x", "y"), ("z", "y")]) == {("x", "y"), ("x", "z"), ("y", "z")}
    _, planted = corpus
    planted.write(tmp_path / "truth.jsonl")
    assert GroundTruth.read(tmp_path / "truth.jsonl").pairs == planted.pairs


def test_default_corpus_passes_gopher_style_quality_rules(corpus) -> None:
    docs, _ = corpus
    passing = 0
    for doc in docs.values():
        words = doc.text.split()
        lowered = re.findall(r"\w+", doc.text.lower())
        lines = [line.strip() for line in doc.text.splitlines() if line.strip()]
        repeated = sum(n for n in Counter(lines).values() if n > 1)
        passing += (
            sum(w in GOPHER_STOP_WORDS for w in lowered) >= 2
            and 3 <= sum(map(len, lowered)) / len(lowered) <= 10
            and sum(any(c.isalpha() for c in w) for w in words) >= 0.8 * len(words)
            and not any(line.endswith(("...", "\u2026")) for line in lines)
            and repeated <= 0.3 * len(lines)
        )
    assert passing >= 0.97 * len(docs)


def test_spec_is_validated() -> None:
    with pytest.raises(ValueError, match="min_words"):
        CorpusSpec(min_words=3000)
    with pytest.raises(ValueError, match="copy rates"):
        CorpusSpec(exact_rate=0.5, edit_rate=0.5)
    with pytest.raises(ValueError, match="min_jaccard"):
        CorpusSpec(min_jaccard=0.0)
