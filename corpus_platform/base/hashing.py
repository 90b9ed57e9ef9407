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

import xxhash

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


def fingerprint(parts: Iterable[str]) -> str:
    """An order-sensitive digest of a sequence of strings (doc ids in shard order, ...)."""
    digest = xxhash.xxh3_128()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()
