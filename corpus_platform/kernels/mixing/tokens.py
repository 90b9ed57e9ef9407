"""Token counters of the training mix (``mix.unit: tokens``).

``whitespace`` counts whitespace-separated words (``len(text.split())``, computed by
:func:`split_counts` for the checks and by :func:`~corpus_platform.base.words.word_counts` for
the writers: two codes, one answer). Any other value of
``mix.tokenizer`` is the path of a Hugging Face ``tokenizers`` JSON file (what
``Tokenizer.save`` writes, the ``tokenizer.json`` of a model repository), read with the
``tokenizers`` library from the local file: nothing is downloaded. A row's count is the number of
token ids of its text without special tokens (no BOS/EOS); a row without text counts 0.

A :class:`TokenCounter` is a small picklable value (the file's path and content digest), so
engine workers load the tokenizer themselves, once per process, and refuse a file that changed
since the counter was made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.words import word_counts

WHITESPACE = "whitespace"
BATCH = 1024  # texts encoded per call of the tokenizer
SPLIT_BATCH = 64  # texts joined per pass of split_counts: their code points stay in cache


def _runs(points: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted ``points`` as runs of consecutive values, (first, last) each."""
    runs: list[list[int]] = []
    for point in points:
        if runs and runs[-1][1] == point - 1:
            runs[-1][1] = point
        else:
            runs.append([point, point])
    return tuple((first, last) for first, last in runs)


# The ASCII code points str.isspace() calls whitespace, as runs: (9, 13), (28, 32).
ASCII_SPACE_RUNS = _runs([c for c in range(128) if chr(c).isspace()])


@lru_cache(maxsize=1)
def _space_table() -> np.ndarray:
    """Whether ``str.isspace()`` holds, for every code point (built once, on first use)."""
    return np.array([chr(c).isspace() for c in range(0x110000)], dtype=np.bool_)


def split_counts(texts: Sequence[str | None]) -> np.ndarray:
    """``len(text.split())`` of every text (0 for None), without making the words: whitespace
    is what ``str.isspace()`` says of each code point, and a word begins at a code point that is
    not whitespace where whitespace or the text's start precedes it. ASCII texts are classified
    by their bytes, others by their UTF-32 code points, :data:`SPLIT_BATCH` texts at a time;
    six times ``str.split``'s speed on web text."""
    counts = np.zeros(len(texts), dtype=np.int64)
    for ascii in (True, False):
        rows = [i for i, text in enumerate(texts) if text and text.isascii() is ascii]
        for start in range(0, len(rows), SPLIT_BATCH):
            chosen = rows[start : start + SPLIT_BATCH]
            counts[chosen] = _joined_counts([texts[i] or "" for i in chosen], ascii)
    return counts


def _joined_counts(texts: list[str], ascii: bool) -> np.ndarray:
    """Word counts of ``texts`` (non-empty, all ASCII or not): joined by single spaces and framed
    by two, each text's words are the word beginnings from the space before it up to the space
    before the next."""
    joined = " " + " ".join(texts) + " "
    if ascii:
        points = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        space = np.zeros(len(points), dtype=np.bool_)
        for first, last in ASCII_SPACE_RUNS:  # unsigned: below ``first`` wraps around to large
            space |= (points - np.uint8(first)) <= np.uint8(last - first)
    else:
        encoded = joined.encode("utf-32-le", "surrogatepass")
        space = _space_table()[np.frombuffer(encoded, dtype=np.uint32)]
    begins = space[:-1] & ~space[1:]
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    before = np.cumsum(lengths + 1) - lengths - 1  # where the space before each text is
    return np.add.reduceat(begins.view(np.uint8), before, dtype=np.int64)


class TokenizerError(CorpusError):
    """A ``mix.tokenizer`` that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class TokenCounter:
    """Counts the tokens of texts: whitespace words, or a tokenizer file's token ids.

    Attributes:
        path: The tokenizer JSON file; empty for whitespace words.
        digest: SHA-256 of the file's bytes when the counter was made.
    """

    path: str = ""
    digest: str = ""

    @property
    def name(self) -> str:
        """``whitespace`` or the tokenizer file's path."""
        return self.path or WHITESPACE

    def count(self, texts: Sequence[str | None]) -> list[int]:
        """The token count of every text, in order (0 for a missing text)."""
        if not self.path:
            return split_counts(texts).tolist()
        tokenizer = _tokenizer(self.path, self.digest)
        counts = [0] * len(texts)
        present = [i for i, text in enumerate(texts) if text]
        for start in range(0, len(present), BATCH):
            chunk = present[start : start + BATCH]
            encoded = tokenizer.encode_batch([texts[i] for i in chunk], add_special_tokens=False)
            for i, encoding in zip(chunk, encoded, strict=True):
                counts[i] = len(encoding.ids)
        return counts

    def count_column(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """:meth:`count` of an Arrow text column (int64): whitespace words counted on the
        texts' bytes (:func:`~corpus_platform.base.words.word_counts`, no Python string), so
        that a writer's count and a check's :meth:`count` (:func:`split_counts`, on code
        points classified by ``str.isspace``) are two codes giving one answer; a tokenizer's
        counts as :meth:`count` gives them."""
        if not self.path:
            return word_counts(texts)
        return np.asarray(self.count(texts.to_pylist()), np.int64)


def load_counter(spec: str, root: Path) -> TokenCounter:
    """The counter ``mix.tokenizer`` names: ``whitespace``, or a tokenizers JSON file (a path
    relative to the project folder ``root``, or absolute), loaded once here to fail early.

    Raises:
        TokenizerError: the file is missing, unreadable or not a tokenizers JSON file.
    """
    if spec == WHITESPACE:
        return TokenCounter()
    path = Path(spec) if Path(spec).is_absolute() else root / spec
    if not path.is_file():
        raise TokenizerError(
            f"mix.tokenizer: {path}: tokenizer file not found; give the path (relative to the "
            f"project folder {root}) of a Hugging Face tokenizers JSON file (the tokenizer.json "
            "Tokenizer.save writes), or `whitespace` to count whitespace-separated words"
        )
    data = path.read_bytes()
    counter = TokenCounter(str(path), hashlib.sha256(data).hexdigest())
    _tokenizer(counter.path, counter.digest)
    return counter


@lru_cache(maxsize=4)
def _tokenizer(path: str, digest: str) -> Any:
    """The tokenizer in ``path`` (once per process and file version)."""
    from tokenizers import Tokenizer

    data = Path(path).read_bytes() if Path(path).is_file() else b""
    if hashlib.sha256(data).hexdigest() != digest:
        raise TokenizerError(
            f"mix.tokenizer: {path}: the tokenizer file changed or vanished during the build; "
            "leave it unchanged while building, then build again"
        )
    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception as error:  # tokenizers raises plain Exception on a bad file
        raise TokenizerError(
            f"mix.tokenizer: {path}: not a Hugging Face tokenizers JSON file ({error}); save "
            "one with tokenizers' Tokenizer.save(path), or use `whitespace`"
        ) from None
