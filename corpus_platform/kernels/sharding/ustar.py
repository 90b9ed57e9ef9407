"""The training shards' tar writer: the bytes ``webdataset.ShardWriter`` writes, without
``tarfile``'s cost per member.

``webdataset.ShardWriter`` hands each member to ``tarfile``, whose default (PAX) format writes a
plain ustar header when the member's name is ASCII of at most 100 characters and its size fits
eleven octal digits, as every sample member's does. Building that header costs ``tarfile`` about
45 µs, and a sample is two members. Within a shard every header field but the name, the size
and the checksum is the same (mode, owner, mtime, type, magic), so :class:`UstarWriter` fills
those three into a fixed template and writes what ``tarfile`` writes: the 512-byte header, the
payload, zeros to the next 512-byte border, and on close two zero blocks with the archive padded
to whole 10,240-byte records. The owner (at most 32 ASCII characters) and the mtime (an int of
at most eleven octal digits) must fit a plain header too; a writer left by an exception deletes
its file. ``tests/kernels/sharding/test_ustar.py`` compares its files byte
for byte with ``webdataset.ShardWriter``'s; the shard checks read them back with a reader of
their own (:mod:`.audit`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

BLOCK = 512
RECORD = 20 * BLOCK  # tarfile pads an archive to whole records
NAME_BYTES = 100
SIZE_DIGITS = 11  # a size field: eleven octal digits and a NUL
_CHECKSUM_AT = 148  # the checksum field: 8 bytes, spaces while the sum is taken


def _octal(value: int, width: int) -> bytes:
    """A numeric field as tarfile writes it in the POSIX formats: zero-padded octal, NUL."""
    return b"%0*o\0" % (width - 1, value)


def _text(value: str, width: int) -> bytes:
    """A text field: the ASCII bytes, NUL-padded to ``width``."""
    raw = value.encode("ascii")
    return raw + b"\0" * (width - len(raw))


class UstarWriter:
    """Writes regular-file members of one owner, mode and mtime to a new tar file.

    Args:
        path: The tar file to create.
        owner: User and group name of every member.
        mode: Permission bits of every member.
        mtime: Modification time of every member (an int, seconds).
    """

    def __init__(self, path: Path, owner: str, mode: int, mtime: int) -> None:
        if not owner.isascii() or len(owner) > 32:
            raise ValueError(f"tar owner {owner!r}: not ASCII of at most 32 characters")
        if not isinstance(mtime, int) or not 0 <= mtime < 8**SIZE_DIGITS:
            raise ValueError(f"tar mtime {mtime!r}: not an int of at most eleven octal digits")
        before_size = b"".join(
            (_octal(mode & 0o7777, 8), _octal(0, 8), _octal(0, 8))  # mode, uid, gid
        )
        after_size = b"".join(
            (
                _octal(mtime, 12),
                b" " * 8,  # the checksum, summed as spaces
                b"0",  # a regular file
                b"\0" * 100,  # no link name
                b"ustar\x0000",  # POSIX magic and version
                _text(owner, 32),
                _text(owner, 32),
                b"\0" * 16,  # device numbers: empty for a regular file
                b"\0" * 155,  # no name prefix
            )
        )
        self._before_size, self._after_size = before_size, after_size
        self._tail = b"\0" * (BLOCK - NAME_BYTES - len(before_size) - 12 - len(after_size))
        assert NAME_BYTES + len(before_size) + 12 + len(after_size) + len(self._tail) == BLOCK
        self._path = path
        self._fixed_sum = sum(before_size) + sum(after_size)
        self._file = path.open("wb")
        self.bytes = 0

    def add(self, name: str, payload: bytes) -> None:
        """Append a member ``name`` holding ``payload``.

        Raises:
            ValueError: when tarfile would need a PAX header for the name or the size (a name
                not ASCII or over 100 characters, a payload of 8 GiB or more).
        """
        if not name.isascii() or len(name) > NAME_BYTES:
            raise ValueError(f"tar member name {name!r}: not ASCII of at most 100 characters")
        if len(payload) >= 8**SIZE_DIGITS:
            raise ValueError(f"tar member {name!r}: {len(payload)} bytes need a PAX header")
        raw_name = _text(name, NAME_BYTES)
        size = _octal(len(payload), 12)
        checksum = self._fixed_sum + sum(raw_name) + sum(size)
        header = b"".join((raw_name, self._before_size, size, self._after_size, self._tail))
        header = header[:_CHECKSUM_AT] + b"%06o\0" % checksum + header[_CHECKSUM_AT + 7 :]
        padding = -len(payload) % BLOCK
        self._file.write(header)
        self._file.write(payload)
        if padding:
            self._file.write(b"\0" * padding)
        self.bytes += BLOCK + len(payload) + padding

    def close(self) -> int:
        """End the archive as tarfile does and close the file; return its size in bytes."""
        if not self._file.closed:
            ending = 2 * BLOCK
            ending += -(self.bytes + ending) % RECORD
            self._file.write(b"\0" * ending)
            self.bytes += ending
            self._file.close()
        return self.bytes

    def __enter__(self) -> UstarWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if error is None:
            self.close()
            return
        self._file.close()  # no ending: a partial shard must not read as a whole tar
        self._path.unlink(missing_ok=True)


def write_sample_tar(
    path: Path,
    samples: Iterable[tuple[str, bytes, bytes]],
    owner: str,
    mode: int,
    mtime: int,
) -> None:
    """A WebDataset tar of ``samples`` (key, text, metadata JSON): each sample's ``.json``
    member, then its ``.txt`` (webdataset's order: extensions sorted)."""
    with UstarWriter(path, owner, mode, mtime) as writer:
        for key, text, meta in samples:
            writer.add(f"{key}.json", meta)
            writer.add(f"{key}.txt", text)
