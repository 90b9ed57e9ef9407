"""Stable hashing: same answers in every process, whatever PYTHONHASHSEED says."""

import os
import random
import re
import subprocess
import sys
import unicodedata

from corpus_platform.base.hashing import (
    BUCKETS,
    TextNormalization,
    bucket_of,
    content_hash,
    fingerprint,
    ids_by_shard,
    normalize_text,
    shard_of,
    stable_hash,
    unit_interval,
)
from tests.realtext import real_texts


def test_hash_is_identical_across_processes_with_different_hash_seeds() -> None:
    code = "from corpus_platform.base.hashing import stable_hash; print(stable_hash('doc-1', 7))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2", "random")
    }
    assert outputs == {str(stable_hash("doc-1", 7))}


def test_seed_changes_the_hash() -> None:
    assert stable_hash("doc-1", 1) != stable_hash("doc-1", 2)


def test_ranges() -> None:
    keys = [f"k{i}" for i in range(2000)]
    assert {shard_of(k, 8) for k in keys} == set(range(8))
    assert all(0 <= bucket_of(k, 3) < BUCKETS for k in keys)
    assert all(0.0 <= unit_interval(k, 3, "mix") < 1.0 for k in keys)


def test_salt_gives_independent_decisions() -> None:
    same = sum(bucket_of(f"k{i}", 3, "split") == bucket_of(f"k{i}", 3, "mix") for i in range(1000))
    assert same < 5


def test_normalization_makes_case_and_spacing_variants_exact_duplicates() -> None:
    assert normalize_text("  Hello\n\tWORLD  ") == "hello world"
    assert content_hash("Hello world") == content_hash("  HELLO   world ")
    assert content_hash("Hello world") != content_hash("Hello there")
    assert content_hash(None) == content_hash("")


def test_fingerprint_is_order_sensitive() -> None:
    assert fingerprint(["a", "b"]) != fingerprint(["b", "a"])
    assert fingerprint(["ab"]) != fingerprint(["a", "b"])


def test_ids_by_shard_groups_each_id_under_its_shard_in_shard_order() -> None:
    ids = [f"doc-{i}" for i in range(40)]
    groups = ids_by_shard(ids + ids[:5], 4)
    assert [shard for shard, _ in groups] == sorted({shard_of(d, 4) for d in ids})
    assert sorted(d for _, members in groups for d in members) == sorted(ids)
    assert all(shard_of(d, 4) == shard for shard, members in groups for d in members)


def _normalized_by_definition(text: str) -> str:
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def test_ascii_fast_path_equals_the_definition_on_every_ascii_character() -> None:
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)]
    texts = ["", " ", "\n\n", "a", " a ", "A\tb", "__init__", "x,y;;z  "]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(3000)]
    texts += ["".join(rng.choices("aB1_ ,.\n\t-", k=rng.randint(0, 60))) for _ in range(3000)]
    assert all(t.isascii() for t in texts)
    assert [normalize_text(t) for t in texts] == [_normalized_by_definition(t) for t in texts]


def test_words_are_the_normalized_text_split() -> None:
    """``words`` and ``spaced`` (the texts decontamination and shingling split again) give
    ``apply``'s words, on random and Debian text."""
    rng = random.Random(6)
    alphabet = [chr(c) for c in range(128)] + ["\u00e9", "\u00c9", "\ufb01", "\u2028", "\u3000"]
    texts = ["", " ", "\x1c", "A\tb", " x,y;;Z  "]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(3000)]
    texts += real_texts(200)  # copyright files, changelogs, manual pages
    spaced = TextNormalization(tokens="whitespace", whitespace=False, punctuation=True)
    for normalization in (TextNormalization(), TextNormalization(casefold=False), spaced):
        words = [normalization.words(t) for t in texts]
        assert words == [normalization.apply(t).split() for t in texts]
        assert words == [normalization.spaced(t).split() for t in texts]
    default = [TextNormalization().words(t) for t in texts]
    assert default == [_normalized_by_definition(t).split() for t in texts]
