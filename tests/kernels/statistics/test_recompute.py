"""The streaming recomputation of the train statistics equals numpy over all rows at once."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpus_platform.base.shards import write_sharded
from corpus_platform.base.word_kernels import MIX_1, token_document_frequencies, token_hash
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.statistics import recompute
from corpus_platform.kernels.statistics.fit import TEXT_BATCH
from corpus_platform.kernels.statistics.recompute import (
    recompute_train_statistics,
    token_document_counts,
)
from tests.realtext import real_texts


def test_streaming_recomputation_equals_numpy_on_everything(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    clicks = rng.normal(1e6, 3.0, n)  # a large mean: a one-pass sum of squares would cancel
    clicks[rng.choice(n, 50, replace=False)] = np.nan
    texts = [None if i % 7 == 0 else f"Word{i % 13} the THE shared" for i in range(n)]
    table = pa.table(
        {
            "doc_id": [f"d{i:05d}" for i in range(n)],
            "clicks": clicks,
            "empty": pa.nulls(n, pa.float64()),
            "text": texts,
        }
    )
    write_sharded(table, tmp_path, 4)
    edges = {"clicks": np.linspace(1e6 - 10, 1e6 + 10, 6).tolist(), "empty": [0.0, 1.0]}

    audit = recompute_train_statistics(tmp_path, 4, edges, with_text=True)

    values = clicks[~np.isnan(clicks)]
    got = audit.features["clicks"]
    assert got["count"] == values.size and audit.rows == n
    assert math.isclose(got["mean"], float(values.mean()), rel_tol=1e-12)
    assert math.isclose(got["std"], float(values.std()), rel_tol=1e-9)
    assert (got["minimum"], got["maximum"]) == (values.min(), values.max())
    assert got["histogram"] == np.histogram(values, bins=edges["clicks"])[0].tolist()
    assert audit.features["empty"] == {"count": 0}
    present = [t for t in texts if t is not None]
    assert audit.documents == len(present)
    assert audit.document_frequencies["the"] == len(present)  # counted once per document
    assert audit.document_frequencies["word3"] == sum("Word3 " in t for t in present)


def test_worker_count_does_not_change_the_recomputation(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    table = pa.table(
        {
            "doc_id": [f"d{i}" for i in range(500)],
            "x": rng.normal(0, 1, 500),
            "text": [f"t{i % 9} common" for i in range(500)],
        }
    )
    write_sharded(table, tmp_path, 5)
    edges = {"x": [-5.0, 0.0, 5.0]}
    serial = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(1))
    parallel = recompute_train_statistics(tmp_path, 5, edges, True, LocalEngine(2))
    assert serial == parallel


def _plain_counts(texts: list[str]) -> Counter[str]:
    """Document frequencies the plain way: one Python set of ``text.lower().split()`` a text."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(text.lower().split()))
    return counts


def test_token_document_counts_are_python_set_counts_on_real_and_unicode_text() -> None:
    """The audit's compiled count against a set per text: Debian text, Unicode case (U+0130,
    final sigma, German sharp s), Unicode whitespace, empty texts and a long token."""
    rng = random.Random(4)
    texts = real_texts(300)
    texts += [
        "\u0130stanbul ISTANBUL istanbul",
        "\u039f\u0394\u039f\u03a3 \u03bf\u03b4\u03bf\u03c2",
    ]
    texts += ["STRASSE stra\u00dfe"]
    texts += ["a\u2003b\u00a0c a", "", "   ", "x" * 500 + " y", "\x1cz\x1fz"]
    vocabulary = ["Alpha", "alpha", "BETA", "g\u00e9", "G\u00c9"]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(30)) for _ in range(200)]
    table = token_document_counts(texts)
    keys, counts = table.column("key").to_pylist(), table.column("count").to_pylist()
    assert len(set(keys)) == len(keys)
    assert dict(zip(keys, counts, strict=True)) == _plain_counts(texts)


WHITESPACE = re.compile(rb"[\t-\r\x1c- ]")  # the kernel's: 0x09-0x0d and 0x1c-0x20
FULL = 2**64 - 1


def _plain_frequencies(texts: list[bytes]) -> dict[bytes, int]:
    """Document frequencies on bytes, in order of first appearance, whitespace being the
    kernel's (0x09-0x0d and 0x1c-0x20)."""
    counts: dict[bytes, int] = {}
    for text in texts:
        for token in dict.fromkeys(WHITESPACE.split(text)):
            if token:
                counts[token] = counts.get(token, 0) + 1
    return counts


def _mixed(state: int) -> int:
    state = state * int(MIX_1) & FULL
    return state ^ state >> 29


def _colliding(rng: random.Random, token: bytes, count: int) -> list[bytes]:
    """``count`` other tokens whose table hash (``word_kernels.token_hash``) equals that of
    ``token`` (16 or 32 bytes): of 16 bytes, a random head and the tail that gives the hash's
    state after 16 bytes, ``head * MIX_1 ^ (tail + size)``, whose later steps are invertible;
    of 32, ``token``'s first 16 bytes, a random third word and the fourth that gives the same
    state (retried until no whitespace)."""
    words = [int.from_bytes(token[k : k + 8], "little") for k in range(0, len(token), 8)]
    state = (words[0] * int(MIX_1) & FULL) ^ (words[1] + len(token))
    found: list[bytes] = []
    while len(found) < count:
        other = rng.getrandbits(64)
        if len(token) == 16:
            rest = ((state ^ (other * int(MIX_1) & FULL)) - 16) & FULL
            candidate = other.to_bytes(8, "little") + rest.to_bytes(8, "little")
        else:
            third, other_third = _mixed(state ^ words[2]), _mixed(state ^ other)
            fourth = third ^ words[3] ^ other_third
            candidate = token[:16] + other.to_bytes(8, "little") + fourth.to_bytes(8, "little")
        if not WHITESPACE.search(candidate):
            found.append(candidate)
    return found


def test_token_document_frequencies_tell_tokens_apart_by_bytes_not_hashes() -> None:
    """The compiled count on raw bytes against a plain count: tokens whose table hashes are
    equal, tokens equal in their first 16 bytes or all but their last byte, bytes from 0x80
    and NUL, a table grown many times, tokens across and at the end of 64-byte blocks, a token
    over 64 KiB, empty and blank texts, and texts that are a slice of the bytes."""
    rng = random.Random(12)
    colliding = [b"0123456789abcdef", b"\x00collide\xc3\xa9\xff\x7f\x01\x1b!?", b"Q" * 32]
    colliding += [c for token in list(colliding) for c in _colliding(rng, token, 3)]
    hashes = set()
    for token in colliding:
        data = np.frombuffer(token, np.uint8)
        head, tail = (np.uint64(int.from_bytes(token[k : k + 8], "little")) for k in (0, 8))
        hashes.add(token_hash(head, tail, data, 0, len(token)))
    assert len(hashes) == 3  # else the hash changed and _colliding must follow it
    stems = [b"k" * n for n in (0, 1, 7, 8, 15, 16, 17, 63, 64)]
    special = colliding + [s + bytes([c]) for s in stems for c in (0x00, 0x61, 0x62, 0xFF)]
    special += [b"0123456789abcdef" + b"x" * n + b"y" for n in range(20)] + [b"a", b"a\x00"]
    many = [f"{i:x}".encode() * (1 + i % 3) for i in range(20000)]
    separators = [b" ", b"\t", b"\n\r ", b"\x1c", b"\x1f\x0b", b"  "]

    def joined(tokens: list[bytes]) -> bytes:
        parts = [tokens[0]]
        for token in tokens[1:]:
            parts += [rng.choice(separators), token]
        return rng.choice([b"", b" "]) + b"".join(parts) + rng.choice([b"", b"\n"])

    texts = [joined(rng.choices(special, k=40) + rng.choices(many, k=20)) for _ in range(300)]
    texts += [joined(many[k : k + 100]) for k in range(0, len(many), 100)]
    texts += [b"e" * n for n in (63, 64, 65, 128)] + [b" " * 63 + b"e", b"f " * 32]
    texts += [b"L" * 70000, b"L" * 69999 + b"M", b"x " + b"L" * 70000, b"", b" \t\x1c "]
    rng.shuffle(texts)
    data = np.frombuffer(b"junk" + b"".join(texts) + b"more", np.uint8)
    offsets = np.cumsum([4] + [len(t) for t in texts], dtype=np.int64)

    starts, tokens, frequency = token_document_frequencies(data, offsets)

    expected = _plain_frequencies(texts)
    assert len(expected) > 20000
    assert starts.tolist() == np.cumsum([0] + [len(t) for t in expected]).tolist()
    assert tokens.tobytes() == b"".join(expected)
    assert frequency.tolist() == list(expected.values())


def test_a_shard_read_in_several_batches_counts_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit adds its batches' counts by token: a shard of more texts than one count call
    takes (``AUDIT_BATCH``, lowered here) counts as a set per text over the whole shard
    would."""
    monkeypatch.setattr(recompute, "AUDIT_BATCH", TEXT_BATCH)
    rng = random.Random(6)
    texts = [
        " ".join(rng.choice(["a", "B", "c", "d\u00e9", "E"]) for _ in range(5)) for _ in range(9000)
    ]
    table = pa.table({"doc_id": [f"d{i:05d}" for i in range(len(texts))], "text": texts})
    write_sharded(table, tmp_path, 1)
    audit = recompute_train_statistics(tmp_path, 1, {}, with_text=True)
    assert audit.documents == len(texts) > 2 * TEXT_BATCH
    assert audit.document_frequencies == _plain_counts(texts)
