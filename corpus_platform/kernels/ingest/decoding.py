"""Decoding raw text input: the codec, what to do with undecodable bytes, and errors that
name the file, the line and the byte.

:class:`Decoding` holds ``input.encoding`` and ``input.decode_errors``: ``fail`` raises
:class:`InputError` naming the file, the line, the byte and the fix; ``replace`` puts one U+FFFD
per undecodable byte and counts them in :class:`ReadStats`.
"""

from __future__ import annotations

import codecs
import gzip
import io
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.text_codecs import check_encoding

BATCH_ROWS = 10_000
CHUNK_BYTES = 1 << 20
REPLACEMENT = "\ufffd"

ENCODING_FIX = (
    "set input.encoding: latin-1 (or the file's real encoding) in corpus.yaml, "
    "or input.decode_errors: replace, or re-encode the file as UTF-8"
)
GZIP_FIX = (
    "the file is truncated or not gzip: re-compress or re-export it, "
    "or remove it from the input folder"
)
PARQUET_FIX = (
    "the file is truncated or not Parquet: re-export it or remove it from the input folder"
)
PARQUET_UTF8_FIX = (
    "Parquet text must be UTF-8: re-export the file with UTF-8 strings, "
    "or set input.decode_errors: replace in corpus.yaml"
)
PARQUET_NESTED_FIX = (
    "Parquet text must be UTF-8 (input.decode_errors: replace repairs top-level string "
    "columns only): re-export the file with UTF-8 strings"
)
CSV_ROW_FIX = (
    "fix the row (quote fields that hold commas, quotes or newlines) "
    "or remove the file from the input folder"
)
CSV_FIX = "fix the value or row pyarrow names, or remove the file from the input folder"

# surrogateescape carries each undecodable byte 0xXY as the lone surrogate U+DCXY.
ESCAPED = re.compile("[\udc80-\udcff]")
_ESCAPED_RUN = re.compile("[\udc80-\udcff]{1,8}")

DecodeErrors = Literal["fail", "replace"]
Opener = Callable[..., IO]


class InputError(CorpusError):
    """Raw input that cannot be ingested; the message names the file, the row and the fix."""


@dataclass(frozen=True)
class Decoding:
    """How text input files are decoded.

    Attributes:
        encoding: A Python text codec name (``utf-8``, ``latin-1``, ``cp1252`` ...).
        errors: ``fail`` raises on undecodable bytes; ``replace`` puts one U+FFFD per byte.
    """

    encoding: str = "utf-8"
    errors: DecodeErrors = "fail"

    def __post_init__(self) -> None:
        check_encoding(self.encoding)
        if self.errors not in ("fail", "replace"):
            raise ValueError(f"decode errors must be 'fail' or 'replace', got {self.errors!r}")

    @property
    def native(self) -> bool:
        """True for strict UTF-8, which readers hand to their native (fast) decoders."""
        return self.errors == "fail" and codecs.lookup(self.encoding).name == "utf-8"


@dataclass
class ReadStats:
    """What reading one file noticed besides its rows.

    Attributes:
        replaced_chars: Undecodable bytes replaced with U+FFFD (``decode_errors: replace``).
    """

    replaced_chars: int = 0


def escaped_bytes(text: str, start: int) -> bytes:
    """The undecodable bytes surrogateescape carried from ``text[start]`` on (at most 8)."""
    run = _ESCAPED_RUN.match(text, start)
    return bytes(ord(char) - 0xDC00 for char in run.group()) if run else b""


def replace_escaped(text: str, stats: ReadStats) -> str:
    """``text`` with one U+FFFD per undecodable byte, counted in ``stats``."""
    text, count = ESCAPED.subn(REPLACEMENT, text)
    stats.replaced_chars += count
    return text


def undecodable_message(where: str, bad: bytes, encoding: str) -> str:
    return f"{where}: bytes {bad!r} are not valid {encoding}; {ENCODING_FIX}"


def decoded_line(path: Path, line_no: int, line: str, decoding: Decoding, stats: ReadStats) -> str:
    """A non-ASCII line with its undecodable bytes replaced, or InputError naming them."""
    bad = ESCAPED.search(line)
    if bad is None:
        return line
    if decoding.errors == "replace":
        return replace_escaped(line, stats)
    offset = len(line[: bad.start()].encode(decoding.encoding, "surrogateescape"))
    where = f"{path}: line {line_no}, byte offset {offset} in the line"
    raise InputError(
        undecodable_message(where, escaped_bytes(line, bad.start()), decoding.encoding)
    )


def _first_undecodable(path: Path, opener: Opener, encoding: str) -> tuple[int, int, bytes] | None:
    """``(line, byte offset, bytes)`` of the first bytes ``encoding`` cannot decode, streaming.

    Used on the error path only, when the reader that failed could not say where.
    """
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    offset, lines = 0, 1
    with opener(path, "rb") as raw:
        while True:
            chunk = raw.read(CHUNK_BYTES)
            pending = decoder.getstate()[0]
            try:
                lines += decoder.decode(chunk, final=not chunk).count("\n")
            except UnicodeDecodeError as error:
                data = pending + chunk
                lines += data[: error.start].decode(encoding, "replace").count("\n")
                return lines, offset - len(pending) + error.start, data[error.start : error.end]
            offset += len(chunk)
            if not chunk:
                return None


def located_error(path: Path, opener: Opener, encoding: str) -> str:
    """The message for a file holding bytes ``encoding`` cannot decode, placed by a rescan."""
    try:
        found = _first_undecodable(path, opener, encoding)
    except (EOFError, gzip.BadGzipFile, zlib.error):
        found = None
    if found is None:
        return f"{path}: not valid {encoding}; {ENCODING_FIX}"
    line, offset, bad = found
    return undecodable_message(f"{path}: line {line}, byte offset {offset}", bad, encoding)


class Utf8Stream(io.RawIOBase):
    """A text file decoded as ``decoding`` says and served as UTF-8, one chunk at a time, so
    pyarrow's CSV reader sees valid UTF-8 whatever the file's encoding; memory stays a chunk."""

    def __init__(self, path: Path, decoding: Decoding, stats: ReadStats) -> None:
        super().__init__()
        self._path, self._decoding, self._stats = path, decoding, stats
        self._raw = path.open("rb")
        self._decoder = codecs.getincrementaldecoder(decoding.encoding)("surrogateescape")
        self._buffer, self._position = b"", 0
        self._consumed = 0  # source bytes handed to the decoder
        self._lines = 0  # newlines decoded so far
        self._eof = False

    def readable(self) -> bool:
        """Always True: the stream is read-only."""
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:
        """Fill ``buffer`` with the next transcoded bytes; fewer only at the end of the file."""
        filled = 0
        while filled < len(buffer):
            if self._position >= len(self._buffer):
                if self._eof:
                    break
                self._fill()
                continue
            count = min(len(buffer) - filled, len(self._buffer) - self._position)
            end = self._position + count
            buffer[filled : filled + count] = memoryview(self._buffer)[self._position : end]
            self._position, filled = end, filled + count
        return filled

    def close(self) -> None:
        """Close the underlying file."""
        self._raw.close()
        super().close()

    def _fill(self) -> None:
        chunk = self._raw.read(CHUNK_BYTES)
        self._eof = not chunk
        pending = len(self._decoder.getstate()[0])
        text = self._decoder.decode(chunk, final=self._eof)
        bad = None if text.isascii() else ESCAPED.search(text)
        if bad is not None and self._decoding.errors == "fail":
            raise InputError(self._undecodable(text, bad.start(), pending))
        if bad is not None:
            text = replace_escaped(text, self._stats)
        self._lines += text.count("\n")
        self._consumed += len(chunk)
        self._buffer, self._position = text.encode("utf-8"), 0

    def _undecodable(self, text: str, start: int, pending: int) -> str:
        encoding = self._decoding.encoding
        line = self._lines + text.count("\n", 0, start) + 1
        offset = self._consumed - pending + len(text[:start].encode(encoding, "surrogateescape"))
        where = f"{self._path}: line {line}, byte offset {offset}"
        return undecodable_message(where, escaped_bytes(text, start), encoding)
