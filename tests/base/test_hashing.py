"""Stable hashing: same answers in every process, whatever PYTHONHASHSEED says."""

import os
import random
import re
import subprocess
import sys
import unicodedata

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import (
    BUCKETS,
    TextNormalization,
    bucket_of,
    content_hash,
    content_hashes,
    fingerprint,
    ids_by_shard,
    normalize_text,
    shard_of,
    stable_hash,
    stable_hex,
    stable_hexes,
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


def test_a_batch_is_normalized_and_hashed_as_each_text_alone() -> None:
    """``apply_all`` (a compiled walk for ASCII texts, ``apply`` for the others spliced in),
    ``content_hashes`` and ``stable_hexes`` give, text by text, what ``apply``,
    ``content_hash`` and ``stable_hex`` give: on random ASCII and Unicode text, Debian text,
    nulls, empty texts, slices and chunks, and under the normalizations without the walk."""
    rng = random.Random(8)
    alphabet = [chr(c) for c in range(128)] + ["\u00e9", "\u00c9", "\ufb01", "\u2028", "\u3000"]
    texts: list[str | None] = ["", " ", "  a  ", "\u00e9", None, "A\tb,,C"]
    texts += ["".join(rng.choices(alphabet[:128], k=rng.randint(0, 60))) for _ in range(1500)]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(1500)]
    texts += real_texts(200)  # copyright files, changelogs, manual pages (some not ASCII)
    texts[::53] = [None] * len(texts[::53])
    assert any(t and not t.isascii() for t in texts) and any(t and t.isascii() for t in texts)
    spaced = TextNormalization(tokens="whitespace", whitespace=False, punctuation=True)
    for array in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string())):
        for normalization in (TextNormalization(), TextNormalization(casefold=False), spaced):
            batch = normalization.apply_all(array)
            assert batch.type == pa.large_string()
            assert batch.to_pylist() == [
                None if t is None else normalization.apply(t) for t in texts
            ]
        assert content_hashes(array) == [content_hash(t) for t in texts]
        assert stable_hexes(array) == [None if t is None else stable_hex(t) for t in texts]
        sliced = array.slice(7, 400)
        assert stable_hexes(sliced) == [None if t is None else stable_hex(t) for t in texts[7:407]]
        chunked = pa.chunked_array([array.slice(0, 900), array.slice(900)])
        assert content_hashes(chunked) == [content_hash(t) for t in texts]
    # a null slot that keeps bytes (if_else leaves the rejected text's bytes behind)
    masked = pc.if_else(pa.array([False, True]), pa.array(["A b", "C  d"]), None)
    assert TextNormalization().apply_all(masked).to_pylist() == [None, "c d"]
    assert content_hashes(masked) == [content_hash(None), content_hash("C  d")]
    assert TextNormalization().apply_all(pa.array([], pa.string())).to_pylist() == []
