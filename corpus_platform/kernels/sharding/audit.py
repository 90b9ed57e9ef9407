"""The audits behind training_shards' blocking checks, read from the files alone.

:func:`verify_shard` compares one output shard's files with their manifest entries (bytes, MD5,
samples, tokens) and the tar with the Parquet file sample by sample (key, doc_id, draw, text);
the tar is parsed from its ustar headers (:func:`tar_members`), not with the library that
wrote it (WebDataset, through :mod:`tarfile`). :func:`draw_report` compares the sample ids read
from every tar and Parquet file in the folder (the manifest is not consulted;
:func:`sample_ids_of`) with the mix's ``times_drawn``: each doc_id's draws must occur once
each. :mod:`corpus_platform.kernels.sharding.draw_audit` runs it on the engine, partitioned
by doc id.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.files import file_md5
from corpus_platform.base.names import PARQUET, SHARDS_MANIFEST, WEBDATASET
from corpus_platform.kernels.mixing.tokens import TokenCounter
from corpus_platform.kernels.sharding.shards import BLOCK, count_tokens

MEMBERS = ("json", "txt")  # the members of every sample, in the order they are written


@dataclass(frozen=True)
class TarSample:
    """One sample read back from a tar: its key, metadata and text."""

    key: str
    meta: dict[str, Any]
    text: str


def read_tar(path: Path) -> Iterator[TarSample]:
    """The samples of a WebDataset tar in file order; a sample must be exactly one ``.json``
    and one ``.txt`` member, consecutive (ValueError otherwise). A key written twice in a row
    reads as two samples (for the audit to count), where WebDataset's reader would merge them."""
    pending: dict[str, bytes] = {}
    key = None
    for name, payload in tar_members(path):
        base, _, ext = name.rpartition("/")[2].partition(".")
        if key is not None and (base != key or ext in pending):
            yield _sample(path, key, pending)
            pending = {}
        key = base
        pending[ext] = payload
    if key is not None:
        yield _sample(path, key, pending)


ZERO_BLOCK = bytes(BLOCK)
REGULAR = (b"0", b"\0")  # typeflags of a regular file


def tar_members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, payload) of every member of a POSIX ustar archive, read straight from its
    512-byte headers: :func:`read_tar` over 20,000 samples of 7.5 KB takes 0.3 s this way and
    1.2 s through :mod:`tarfile`, whose cost is per member. Only what the platform writes is
    accepted: regular files with ustar headers whose checksums hold, ended by a zero block;
    anything else (a PAX or GNU extension header, a link, a truncated member) is a ValueError
    naming the file and the offset."""
    if path.stat().st_size == 0:
        raise ValueError(f"{path.name}: empty file, not a tar archive")
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        offset = 0
        while True:
            header = data[offset : offset + BLOCK]
            if len(header) < BLOCK:
                raise ValueError(f"{path.name}: ends at byte {offset} without a zero block")
            if header == ZERO_BLOCK:
                return
            name, size = _ustar_header(path, offset, header)
            start = offset + BLOCK
            if start + size > len(data):
                raise ValueError(f"{path.name}: member {name!r} at byte {offset} is truncated")
            yield name, data[start : start + size]
            offset = start + -(-size // BLOCK) * BLOCK


def _ustar_header(path: Path, offset: int, header: bytes) -> tuple[str, int]:
    """(name, payload size) of one ustar header; ValueError unless it is a valid header of a
    regular file."""
    where = f"{path.name}: header at byte {offset}"
    if header[257:262] != b"ustar":
        raise ValueError(f"{where}: not a ustar header")
    stored = _octal(header[148:156], where)
    if stored != sum(header[:148]) + 8 * 32 + sum(header[156:]):
        raise ValueError(f"{where}: checksum does not match")
    if header[156:157] not in REGULAR:
        raise ValueError(f"{where}: member type {header[156:157]!r}, not a regular file")
    name = header[:100].split(b"\0", 1)[0].decode("utf-8")
    prefix = header[345:500].split(b"\0", 1)[0].decode("utf-8")
    return (f"{prefix}/{name}" if prefix else name), _octal(header[124:136], where)


def _octal(field: bytes, where: str) -> int:
    digits = field.split(b"\0", 1)[0].strip()
    try:
        return int(digits, 8)
    except ValueError:
        raise ValueError(f"{where}: {field!r} is not an octal number") from None


def _sample(path: Path, key: str, members: dict[str, bytes]) -> TarSample:
    if tuple(sorted(members)) != MEMBERS:
        raise ValueError(f"{path.name}: sample {key!r} has members {sorted(members)}")
    return TarSample(key, json.loads(members["json"]), members["txt"].decode("utf-8"))


Row = tuple[str, str, int, str]  # (key, doc_id, draw, text) of one sample
VERIFY_ROWS = 1024  # samples of each file read and compared at a time


@dataclass
class _Tally:
    """What reading one file found: its samples and tokens, or why it could not be read."""

    samples: int = 0
    tokens: int = 0
    unreadable: str | None = None


def verify_shard(
    shard: int,
    folder: Path,
    entries: dict[int, Sequence[dict[str, Any]]],
    counter: TokenCounter | None = None,
) -> list[str]:
    """Every way output shard ``shard``'s files differ from their manifest entries
    (``entries[shard]``: one tar and one Parquet file) and from each other; empty when they
    agree. The two files are read side by side, :data:`VERIFY_ROWS` samples at a time, so a
    task holds a block of samples, not a 256 MiB shard twice over."""
    problems: dict[str, list[str]] = {}  # by format, reported in format order
    entries = entries[shard]
    by_format = {e.get("format"): e for e in entries}
    found: list[str] = []
    if sorted(e.get("format") for e in entries) != sorted((PARQUET, WEBDATASET)):
        found.append(f"shard {shard}: listed formats {[e.get('format') for e in entries]}")
    readers: dict[str, Iterator[Row]] = {}
    for fmt, entry in sorted(by_format.items(), key=lambda item: str(item[0])):
        mine = problems.setdefault(str(fmt), [])
        path = folder / str(entry.get("name"))
        if not path.is_file():
            mine.append(f"{path.name}: listed but missing")
            continue
        if path.stat().st_size != entry.get("bytes"):
            mine.append(f"{path.name}: {path.stat().st_size} bytes, listed {entry['bytes']}")
        if file_md5(path) != entry.get("md5"):
            mine.append(f"{path.name}: md5 {file_md5(path)}, listed {entry.get('md5')}")
        readers[str(fmt)] = _tar_rows(path) if fmt == WEBDATASET else _parquet_rows(path)
    tallies, differ = _read_side_by_side(readers, counter)
    listed = {str(fmt): entry for fmt, entry in by_format.items()}
    for fmt, tally in tallies.items():
        entry, name = listed[fmt], (folder / str(listed[fmt].get("name"))).name
        if tally.unreadable is not None:
            problems[fmt].append(f"{name}: unreadable: {tally.unreadable}")
        elif (tally.samples, tally.tokens) != (entry.get("samples"), entry.get("tokens")):
            problems[fmt].append(
                f"{name}: {tally.samples} samples and {tally.tokens} tokens, listed "
                f"{entry.get('samples')} and {entry.get('tokens')}"
            )
    found += [problem for fmt in sorted(problems) for problem in problems[fmt]]
    readable = [t for t in tallies.values() if t.unreadable is None]
    if len(readable) == 2 and differ is not None:
        found.append(f"shard {shard}: tar and Parquet differ from sample {differ} on")
    return found


def _read_side_by_side(
    readers: dict[str, Iterator[Row]], counter: TokenCounter | None
) -> tuple[dict[str, _Tally], int | None]:
    """Read every file's samples a block at a time, all files in step: each file's samples and
    tokens (the tokens of a block equal to the previous file's block are not counted twice),
    and the first sample where two files differ (where the shorter one ends, when one is a
    prefix of the other); None when they agree."""
    tallies = {fmt: _Tally() for fmt in readers}
    live, differ, read = dict(readers), None, 0
    while live:
        block: dict[str, list[Row]] = {}
        for fmt, rows in list(live.items()):
            try:
                block[fmt] = list(islice(rows, VERIFY_ROWS))
            except Exception as error:  # an unreadable file is a finding, not a crash
                tallies[fmt].unreadable = f"{type(error).__name__}: {error}"
                block[fmt] = []
            if len(block[fmt]) < VERIFY_ROWS:
                del live[fmt]
        counted: tuple[list[Row], int] | None = None
        for fmt, rows in block.items():
            if counted is None or rows != counted[0]:
                counted = (rows, _recount([text for *_, text in rows], counter))
            tallies[fmt].samples += len(rows)
            tallies[fmt].tokens += counted[1]
        if differ is None and len(block) == 2:
            first, second = block.values()
            if first != second:
                pairs = zip(first, second, strict=False)
                at = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
                differ = read + (min(len(first), len(second)) if at is None else at)
        read += VERIFY_ROWS
    return tallies, differ


VERIFY_BATCH = 64  # output shards verified per engine task, at most


def shard_numbers(manifest: dict[str, Any], generation: int | None = None) -> list[int]:
    """The distinct shard numbers the manifest's entries carry (-1 for none), sorted; those of
    generation ``generation`` only, when given."""
    return sorted(
        {
            int(e.get("shard", -1))
            for e in manifest.get("shards", [])
            if generation is None or e.get("generation", 0) == generation
        }
    )


def verify_batch(
    batch: int,
    folder: Path,
    size: int = VERIFY_BATCH,
    counter: TokenCounter | None = None,
    generation: int | None = None,
) -> list[str]:
    """:func:`verify_shard` for the ``batch``-th run of ``size`` shard numbers of the manifest
    in ``folder`` (of generation ``generation`` only, when given), read here: a task's
    arguments stay small however many shards there are (each task carrying every entry would
    cost shards squared)."""
    manifest = json.loads((folder / SHARDS_MANIFEST).read_text(encoding="utf-8"))
    mine = shard_numbers(manifest, generation)[batch * size : (batch + 1) * size]
    entries: dict[int, list[dict[str, Any]]] = {shard: [] for shard in mine}
    for entry in manifest.get("shards", []):
        if int(entry.get("shard", -1)) in entries:
            entries[int(entry.get("shard", -1))].append(entry)
    return [problem for shard in mine for problem in verify_shard(shard, folder, entries, counter)]


def _recount(texts: list[str], counter: TokenCounter | None) -> int:
    """The tokens of ``texts`` by the audit's own count: whitespace words by a compiled walk
    over their code points (:mod:`corpus_platform.kernels.sharding.compiled`, not the
    writer's code), a tokenizer's token ids as the writer counts them."""
    if counter is None or not counter.path:
        from corpus_platform.kernels.sharding.compiled import recount_words  # numba: first use

        return int(recount_words(texts).sum())
    return int(count_tokens(texts, counter).sum())


def _tar_rows(path: Path) -> Iterator[Row]:
    for sample in read_tar(path):
        if sample.meta.get("key") != sample.key:
            raise ValueError(f"sample {sample.key!r} carries key {sample.meta.get('key')!r}")
        yield sample.key, sample.meta["doc_id"], sample.meta["draw"], sample.text


def _parquet_rows(path: Path) -> Iterator[Row]:
    columns = ["key", "doc_id", "draw", "text"]
    for batch in pq.ParquetFile(path).iter_batches(batch_size=VERIFY_ROWS, columns=columns):
        values = [batch.column(c).to_pylist() for c in columns]
        yield from ((k, d, n, t or "") for k, d, n, t in zip(*values, strict=True))


def card_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The dataset card's files (``card`` in the manifest) that are missing or changed."""
    problems = []
    for entry in manifest.get("card", []):
        path = folder / str(entry.get("name"))
        if not path.is_file():
            problems.append(f"{entry.get('name')}: listed card file missing")
        elif file_md5(path) != entry.get("md5"):
            problems.append(f"{entry.get('name')}: md5 differs from {SHARDS_MANIFEST}")
    return problems


def unlisted_files(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Files in ``folder`` (at any depth) the manifest does not list, besides itself."""
    listed = {str(e.get("name")) for e in manifest.get("shards", [])} | {SHARDS_MANIFEST}
    listed |= {str(e.get("name")) for e in manifest.get("card", [])}
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    return sorted(present - listed)


def totals_problems(manifest: dict[str, Any]) -> list[str]:
    """Disagreements between the manifest's totals and its own entries."""
    entries = manifest.get("shards", [])
    tars = [e for e in entries if e.get("format") == WEBDATASET]
    expected = {
        "shards": len(tars),
        "samples": sum(e["samples"] for e in tars),
        "tokens": sum(e["tokens"] for e in tars),
        "bytes": {
            fmt: sum(e["bytes"] for e in entries if e.get("format") == fmt)
            for fmt in (WEBDATASET, PARQUET)
        },
    }
    totals = manifest.get("totals", {})
    return [
        f"totals.{k}: {totals.get(k)}, entries add up to {v}"
        for k, v in expected.items()
        if totals.get(k) != v
    ]


def sample_ids_of(path: Path) -> pa.Table:
    """``(format, key, doc_id, draw)`` of every sample of one tar or Parquet file."""
    if path.suffix == ".tar":
        rows = [(s.key, s.meta["doc_id"], s.meta["draw"]) for s in read_tar(path)]
        keys, doc_ids, draws = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
        fmt = WEBDATASET
    else:
        table = pq.read_table(path, columns=["key", "doc_id", "draw"])
        keys, doc_ids, draws = (table.column(c).to_pylist() for c in ("key", "doc_id", "draw"))
        fmt = PARQUET
    return sample_ids_table([fmt] * len(keys), keys, doc_ids, draws)


def sample_ids_table(formats: list, keys: list, doc_ids: list, draws: list) -> pa.Table:
    """The table :func:`sample_ids_of` returns (empty when given empty lists)."""
    return pa.table(
        {
            "format": pa.array(formats, pa.string()),
            "key": pa.array(keys, pa.string()),
            "doc_id": pa.array(doc_ids, pa.string()),
            "draw": pa.array(draws, pa.int64()),
        }
    )


@dataclass(frozen=True)
class DrawReport:
    """How the samples of one format compare with the mix's draws."""

    fmt: str
    draws: int  # draws in the mix
    samples: int
    wrong: int  # doc_ids whose draws do not occur exactly once each
    duplicate_keys: int
    examples: tuple[str, ...]


def draw_report(
    fmt: str, samples: pa.Table, expected: pa.Table, keys: pa.Table | None = None
) -> DrawReport:
    """Compare one format's samples with the mix: every doc_id must occur ``times_drawn`` times,
    with draws ``0 .. times_drawn - 1``, and every key once (counted on ``keys``, the
    ``(format, key)`` rows; default: ``samples``)."""
    mine = samples.filter(pc.equal(samples.column("format"), fmt))
    grouped = mine.group_by("doc_id", use_threads=False).aggregate(
        [("draw", "count"), ("draw", "count_distinct"), ("draw", "min"), ("draw", "max")]
    )
    joined = expected.join(grouped, "doc_id", join_type="full outer", use_threads=False)
    zero = pa.scalar(0, pa.int64())
    k = pc.coalesce(joined.column("times_drawn"), zero)
    count = pc.coalesce(joined.column("draw_count"), zero)
    distinct = pc.coalesce(joined.column("draw_count_distinct"), zero)
    low, high = joined.column("draw_min"), joined.column("draw_max")
    drawn = pc.greater(k, 0)
    right = pc.and_(
        pc.and_(pc.equal(count, k), pc.equal(distinct, k)),
        pc.if_else(
            drawn,
            pc.and_(pc.equal(low, 0), pc.equal(high, pc.subtract(k, 1))),
            pc.and_(pc.is_null(low), pc.is_null(high)),
        ),
    )
    bad = joined.filter(pc.invert(pc.fill_null(right, False)))
    wrong = [
        f"{doc_id}: drawn {times or 0}, {fmt} holds {held or 0} ({unique or 0} distinct draws)"
        for doc_id, times, held, unique in zip(
            *(
                bad.column(c).to_pylist()
                for c in ("doc_id", "times_drawn", "draw_count", "draw_count_distinct")
            ),
            strict=True,
        )
    ]
    keys = samples if keys is None else keys
    mine_keys = keys.filter(pc.equal(keys.column("format"), fmt))
    duplicates = mine_keys.group_by("key", use_threads=False).aggregate([("key", "count")])
    repeated = duplicates.filter(pc.greater(duplicates.column("key_count"), 1))
    return DrawReport(
        fmt=fmt,
        draws=int(pc.sum(expected.column("times_drawn")).as_py() or 0),
        samples=len(mine),
        wrong=len(wrong),
        duplicate_keys=len(repeated),
        examples=tuple(sorted(wrong)[:10]),
    )
