"""Generations: how a stage grows by appends without rewriting a published file.

Every stage after ``filtered_documents`` keeps logical shard ``N`` as a folder
``part-0000N.parquet/`` holding one file per generation (``g00000.parquet``,
``g00001.parquet``, ...), and its side tables the same way (``clusters/part-0000N.parquet/``,
``pairs/similar_pairs.parquet/``). A build from scratch writes generation 0; an append writes the
next generation beside the published files, which it takes into the candidate unchanged (hard
links), so every published file stays byte-identical. Readers read a shard folder as its
generation files one after the other (:func:`corpus_platform.base.shards.shard_files`).

A generation is named in the stage's manifest with what it was made from (the upstream units it
took: raw batches for dedup, the upstream stage's generations after it) and its digest, the MD5 of
its files (:func:`generation_digest`): a downstream stage appends only while the generations it
took are still there with the same digests.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.files import digest_files
from corpus_platform.base.shards import (
    MANIFEST,
    part_path,
    read_parquet,
    read_schema,
    shard_files,
)
from corpus_platform.base.unedited import TEXT

GENERATION_DIGITS = 5


def generation_name(number: int) -> str:
    """The file stem of generation ``number``: ``g00000``, ``g00001``, ..."""
    return f"g{number:0{GENERATION_DIGITS}d}"


@dataclass(frozen=True)
class TextSource:
    """Where the texts of a stage that does not store them are: the folder of the stage that
    does, and which of its files the rows came from. ``normalized_splits/train`` takes them
    from ``split_documents/train``, row for row, from the split generations its rows came from
    (``generations``; None: every one); ``deduplicated_documents`` from
    ``filtered_documents``, whose rows it keeps or drops, from the raw batches its generations
    took (``batches``: their keys, :func:`~corpus_platform.base.names.batch_key`, the file
    stems of a folder kept by batch; None: every one), some of them
    (``some_rows``: the rows are found by doc id; otherwise they must be the source's rows, in
    the same order).

    A stage that only changes numeric columns, adds columns or drops rows carries no text of
    its own; a reader puts the text back with :func:`with_texts`."""

    folder: Path
    generations: tuple[int, ...] | None = None
    batches: tuple[str, ...] | None = None
    some_rows: bool = False

    def files(self, shard: int) -> list[Path]:
        """The files of logical shard ``shard`` the rows came from (none for a missing shard)."""
        path = part_path(self.folder, shard)
        if not path.exists():
            return []
        files = shard_files(path)
        if self.generations is not None:
            wanted = set(self.generations)
            files = [f for f in files if generation_of(f) in wanted]
        if self.batches is not None:
            stems = {f"{batch}.parquet" for batch in self.batches}
            files = [f for f in files if f.name in stems]
        return files


def columns_but_text(path: Path) -> list[str]:
    """The columns of logical shard ``path`` (file or shard folder) but ``text``: what a stage
    that takes its text from there (:class:`TextSource`) reads and stores of its rows."""
    return [name for name in read_schema(path).names if name != TEXT]


def with_texts(table: pa.Table, shard: int, source: TextSource | None) -> pa.Table:
    """``table`` (rows of logical shard ``shard`` of a stage that stores no text) with the
    ``text`` column of its rows in ``source``, in the place the column has there: a straight
    copy of the column when the rows are the source's rows in the same order, else (a source of
    ``some_rows``) each row's text found by its doc id. Unchanged when ``source`` is None, when
    ``table`` has a text column already or when the source has none (a tabular corpus).

    Raises:
        CorpusError: The rows are not the source's rows in the same order (some of them, for
            ``some_rows``), or the shard is missing (a stage rebuilt without the one it takes
            its text from).
    """
    if source is None or TEXT in table.column_names:
        return table
    files = source.files(shard)
    if not files:
        if not len(table):
            return table
        raise CorpusError(
            f"{part_path(source.folder, shard)}: missing, and {len(table)} rows take their text "
            "from it; rebuild the stages after it (corpus run --full)"
        )
    schema = read_schema(part_path(source.folder, shard))
    if TEXT not in schema.names:
        return table
    parts = [read_parquet(f, ["doc_id", TEXT]) for f in files]
    texts = pa.concat_tables(parts, promote_options="default")
    column = texts.column(TEXT)
    ids = table.column("doc_id")
    if not texts.column("doc_id").equals(ids):
        if not source.some_rows:
            raise CorpusError(
                f"{part_path(source.folder, shard)}: its rows (generations "
                f"{source.generations or 'all'}) are not the {len(table)} rows that take their "
                "text from it, in the same order; rebuild the stages after it (corpus run --full)"
            )
        at = pc.index_in(ids, value_set=texts.column("doc_id"))
        if at.null_count:
            missing = pc.filter(ids, pc.is_null(at)).slice(0, 3).to_pylist()
            raise CorpusError(
                f"{part_path(source.folder, shard)}: {at.null_count} of the {len(table)} rows "
                f"that take their text from it are not there (e.g. {missing}); rebuild the "
                "stages after it (corpus run --full)"
            )
        column = column.take(at)
    index = schema.get_field_index(TEXT)
    field = schema.field(TEXT).remove_metadata()  # the full texts, wherever they were stored
    return table.add_column(min(index, table.num_columns), field, column)


def read_with_texts(
    folder: Path,
    shard: int,
    texts: TextSource | None,
    generations: Iterable[int] | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """:func:`read_generations` of ``columns`` (every column for None) and the rows' ``text``:
    their own when ``folder`` stores it, else from ``texts`` (:func:`with_texts`)."""
    if columns is not None and TEXT in read_schema(part_path(folder, shard)).names:
        columns = [*columns, TEXT] if TEXT not in columns else columns
    return with_texts(read_generations(folder, shard, generations, columns), shard, texts)


def generation_of(path: Path) -> int:
    """The generation a dataset file holds (``g00003.parquet`` -> 3; any other file: 0)."""
    stem = path.name.removesuffix(".parquet")
    return int(stem[1:]) if stem.startswith("g") and stem[1:].isdigit() else 0


def shard_generation_files(
    path: Path, generation: int | None = None, new: bool = True
) -> list[Path]:
    """The files of a logical shard (``path``): those of generation ``generation`` (``new``)
    or of every other one (``not new``); all of them for ``None``. A missing shard has none."""
    if not path.exists():
        return []
    files = shard_files(path)
    if generation is None:
        return files
    return [f for f in files if (generation_of(f) == generation) == new]


def read_generations(
    folder: Path,
    shard: int,
    generations: Iterable[int] | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """One logical shard's rows of the generations ``generations`` (every row for None), one
    generation after the other; an empty table of the shard's columns when none has rows."""
    path = part_path(folder, shard)
    files = shard_files(path)
    if generations is not None:
        wanted = set(generations)
        files = [f for f in files if generation_of(f) in wanted]
    if not files:
        return read_schema(path).empty_table().select(columns or read_schema(path).names)
    tables = [read_parquet(f, columns) for f in files]
    return pa.concat_tables(tables, promote_options="default")


def generation_path(folder: Path, shard: int, number: int) -> Path:
    """The file of generation ``number`` inside logical shard ``shard`` of a dataset folder."""
    return part_path(folder, shard) / f"{generation_name(number)}.parquet"


def side_generation_path(folder: Path, name: str, number: int) -> Path:
    """The file of generation ``number`` of an unsharded side table ``name`` (a folder named like
    the table's file, e.g. ``pairs/similar_pairs.parquet/g00000.parquet``)."""
    return folder / name / f"{generation_name(number)}.parquet"


def unit_files(folder: Path, stem: str) -> list[Path]:
    """Every file of one unit under ``folder`` (a generation, or a raw batch of a stage kept by
    batch): the files named ``<stem>.parquet`` or ``<stem>.json``, in path order."""
    names = {f"{stem}.parquet", f"{stem}.json"}
    return sorted(p for p in folder.rglob("*") if p.name in names and p.is_file())


def generation_files(folder: Path, number: int) -> list[Path]:
    """Every file of generation ``number`` under ``folder``, in path order."""
    return unit_files(folder, generation_name(number))


def unit_digest(folder: Path, stem: str) -> str:
    """The digest of one unit of a stage folder (:func:`unit_files`): the MD5 of its files'
    relative paths and MD5s, so equal units have equal digests wherever the folder is. The files
    are hashed on every core (:func:`~corpus_platform.base.files.digest_files`)."""
    paths = unit_files(folder, stem)
    md5s = digest_files(paths)
    digest = hashlib.md5(usedforsecurity=False)
    for path, md5 in zip(paths, md5s, strict=True):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{md5}\n".encode())
    return digest.hexdigest()


def generation_digest(folder: Path, number: int) -> str:
    """The digest of generation ``number`` of a stage folder (:func:`unit_digest`)."""
    return unit_digest(folder, generation_name(number))


def link_file(source: Path, target: Path) -> None:
    """Take a published file into a candidate folder unchanged: a hard link where the filesystem
    allows (DVC's cache files are read-only, so neither side can change), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def link_published(published: Path, staging: Path, skip: tuple[str, ...] = (MANIFEST,)) -> int:
    """Take every file of a published stage folder into ``staging`` unchanged, but the top-level
    files and folders named in ``skip`` (the manifests and the dataset card an append writes
    anew); return how many."""
    linked = 0
    for path in sorted(published.rglob("*")):
        relative = path.relative_to(published)
        if path.is_dir() or relative.parts[0] in skip:
            continue
        link_file(path, staging / relative)
        linked += 1
    return linked
