"""The one module that owns hashing.

Every decision that depends on a key (which shard, which split, which rows enter the mix) goes
through these functions: xxh3 over UTF-8 bytes, optionally salted with the global seed. They give
the same answer in every process and on every machine, unlike Python's salted built-in hash.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from corpus_platform.base.words import text_buffers

BUCKETS = 10_000


def stable_hash(key: str, seed: int = 0) -> int:
    """A 64-bit unsigned hash of ``key`` salted with ``seed``.

    Args:
        key: The stable key (a doc id, an entity, a component name).
        seed: The global seed from corpus.yaml; different seeds give independent hashes.
    """
    return xxhash.xxh3_64_intdigest(key.encode("utf-8"), seed=seed)


def stable_hex(text: str) -> str:
    """A 128-bit hex digest of ``text``, for fingerprints and content hashes."""
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8"))


def stable_hexes(texts: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """:func:`stable_hex` of every text of an Arrow string array (None for a null), hashed
    straight from the array's UTF-8 bytes: no Python string is made."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    data, offsets = text_buffers(texts)
    view = memoryview(data)
    bounds = offsets.tolist()
    digest = xxhash.xxh3_128_hexdigest
    hexes: list[str | None] = [digest(view[start:end]) for start, end in pairwise(bounds)]
    if texts.null_count:
        for row in np.flatnonzero(texts.is_null().to_numpy(zero_copy_only=False)).tolist():
            hexes[row] = None
    return hexes


def shard_of(doc_id: str, num_shards: int) -> int:
    """The logical shard of a row: ``stable_hash(doc_id) mod num_shards`` (unsalted)."""
    return stable_hash(doc_id) % num_shards


def ids_by_shard(doc_ids: Iterable[str], num_shards: int) -> list[tuple[int, set[str]]]:
    """``doc_ids`` grouped by :func:`shard_of`, in shard order (to read each shard once)."""
    groups: dict[int, set[str]] = {}
    for doc_id in doc_ids:
        groups.setdefault(shard_of(doc_id, num_shards), set()).add(doc_id)
    return sorted(groups.items())


def bucket_of(key: str, seed: int, salt: str = "split") -> int:
    """A bucket in ``[0, 10000)`` for ``key``, independent per ``salt`` (decision kind)."""
    return stable_hash(f"{salt}\x1f{key}", seed) % BUCKETS


def unit_interval(key: str, seed: int, salt: str) -> float:
    """A uniform number in ``[0, 1)`` for ``key``; a seeded coin for sampling decisions."""
    return stable_hash(f"{salt}\x1f{key}", seed) / 2.0**64


WORD = re.compile(r"\w+")


def _ascii_word_table() -> bytes:
    table = bytearray(b" " * 256)
    for char in string.ascii_letters + string.digits + "_":
        table[ord(char)] = ord(char.lower())
    return bytes(table)


# For ASCII text, NFKC and casefold are lower() and \w is [A-Za-z0-9_]: one bytes.translate
# lowercases and turns every other byte into a word boundary, far faster than a regex.
ASCII_WORDS = _ascii_word_table()
SPACE_RUN = re.compile(rb"  +")  # after ASCII_WORDS only spaces separate words
_ASCII_TABLE = np.frombuffer(ASCII_WORDS, np.uint8)  # the same table, for the compiled walk
_LARGE = pa.large_string()


@dataclass(frozen=True)
class TextNormalization:
    r"""The one tokenizer behind every text decision (``dedup.normalization``): exact keys,
    shingles, the held-out neighbour check and decontamination.

    Attributes:
        unicode: A Unicode normal form (NFC, NFKC, NFD, NFKD) or "none".
        casefold: Compare case-insensitively.
        tokens: ``words`` (default): Unicode ``\w+`` words, so punctuation, symbols, markup and
            line breaks are word boundaries, the way datatrove and text-dedup count words.
            ``whitespace``: runs of non-whitespace, punctuation attached (the
            default until the word tokenizer).
        whitespace: With ``tokens: whitespace``, collapse runs of whitespace and trim the ends.
        punctuation: With ``tokens: whitespace``, treat Unicode punctuation (category P*) as a
            word boundary.
    """

    unicode: str = "NFKC"
    casefold: bool = True
    tokens: str = "words"
    whitespace: bool = True
    punctuation: bool = False

    def __post_init__(self) -> None:
        if self.tokens not in ("words", "whitespace"):
            raise ValueError(f"tokens must be 'words' or 'whitespace', got {self.tokens!r}")

    def words(self, text: str) -> list[str]:
        """The tokens of ``text``, ``apply(text).split()``."""
        return self.spaced(text).split()

    def spaced(self, text: str) -> str:
        """A text whose whitespace words are ``apply(text)``'s, for callers that split it again:
        on ASCII text (``words`` tokens, Unicode and case folding on) the text with every
        character that is not part of a word turned into a space, runs of spaces left as they
        are (collapsing them is most of ``apply``'s time); otherwise ``apply(text)``."""
        if self.tokens == "words" and text.isascii() and self.unicode != "none" and self.casefold:
            return text.encode("ascii").translate(ASCII_WORDS).decode("ascii")
        return self.apply(text)

    def apply(self, text: str) -> str:
        """``text`` normalized: its tokens joined by single spaces (with ``tokens: whitespace``
        and ``whitespace: false``, the text with its own spacing)."""
        if self.tokens == "words":
            if text.isascii() and self.unicode != "none" and self.casefold:
                spaced = text.encode("ascii").translate(ASCII_WORDS)
                return SPACE_RUN.sub(b" ", spaced).strip().decode("ascii")
            text = self._fold(text)
            return " ".join(WORD.findall(text))
        text = self._fold(text)
        if self.punctuation:
            text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
        if self.whitespace:
            text = " ".join(text.split())
        return text

    def apply_all(self, texts: pa.Array | pa.ChunkedArray) -> pa.Array:
        """:meth:`apply` of every text of an Arrow string array, as a large_string array (a
        null stays null). With ``words`` tokens, Unicode and case folding on, the batch's ASCII
        texts are normalized by a compiled walk over their bytes
        (:mod:`corpus_platform.base.normalize_kernel`), twice as fast as :meth:`apply` on 7 KB
        texts; any other text by :meth:`apply`, its bytes then copied into place by the walk."""
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        if not (self.tokens == "words" and self.unicode != "none" and self.casefold):
            values = texts.to_pylist()
            return pa.array([None if t is None else self.apply(t) for t in values], _LARGE)
        from corpus_platform.base.normalize_kernel import fold_ascii_words

        data, offsets = text_buffers(texts)
        plain = pc.fill_null(pc.string_is_ascii(texts), False).to_numpy(zero_copy_only=False)
        others = np.flatnonzero(texts.is_valid().to_numpy(zero_copy_only=False) & ~plain)
        normalized = [self.apply(texts[row].as_py()).encode() for row in others.tolist()]
        given = np.full(len(texts), -1, np.int64)
        given[others] = np.arange(len(others))
        given_offsets = np.zeros(len(others) + 1, np.int64)
        np.cumsum([len(b) for b in normalized], out=given_offsets[1:])
        given_data = np.frombuffer(b"".join(normalized), np.uint8)
        out = np.empty(int(offsets[-1] - offsets[0]) + len(given_data), np.uint8)
        out_offsets = np.empty(len(texts) + 1, np.int64)
        fold_ascii_words(
            data, offsets, plain, _ASCII_TABLE, given, given_data, given_offsets, out, out_offsets
        )
        folded = pa.Array.from_buffers(
            _LARGE,
            len(texts),
            [None, pa.py_buffer(out_offsets), pa.py_buffer(out[: int(out_offsets[-1])])],
        )
        if texts.null_count:
            return pc.if_else(texts.is_valid(), folded, pa.scalar(None, _LARGE))
        return folded

    def _fold(self, text: str) -> str:
        if self.unicode != "none":
            text = unicodedata.normalize(self.unicode, text)
        return text.casefold() if self.casefold else text


DEFAULT_NORMALIZATION = TextNormalization()


def normalize_text(text: str) -> str:
    r"""The default normalization (NFKC, casefold, ``\w+`` words joined by spaces), behind
    ``content_hash``."""
    return DEFAULT_NORMALIZATION.apply(text)


def content_hash(text: str | None) -> str:
    """Hex digest of the normalized text; rows with equal digests are exact duplicates."""
    return stable_hex(normalize_text(text or ""))


def content_hashes(texts: pa.Array | pa.ChunkedArray) -> list[str]:
    """:func:`content_hash` of every text of an Arrow string array (a null as the empty
    text), normalized and hashed a batch at a time (:meth:`TextNormalization.apply_all`,
    :func:`stable_hexes`)."""
    empty = content_hash(None)
    hexes = stable_hexes(DEFAULT_NORMALIZATION.apply_all(texts))
    return [empty if h is None else h for h in hexes]


def fingerprint(parts: Iterable[str]) -> str:
    """An order-sensitive digest of a sequence of strings (doc ids in shard order, ...)."""
    digest = xxhash.xxh3_128()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()
