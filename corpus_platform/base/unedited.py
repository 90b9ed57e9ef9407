"""Texts a stage stores only where it changed them.

``filtered_documents`` edits few texts (PII replaced, boilerplate lines removed) and keeps the
rest as ``raw_documents`` has them. Its files store a kept row's ``text`` only where the filters
edited it; elsewhere the value is null and the row's text is the one in the same file of
``raw_documents`` (the same logical shard and raw batch, the row found by ``doc_id``). The
``text`` field of such a file says so in its metadata (:data:`UNEDITED_IN`: the name of the
stage folder that holds the unedited texts, beside the stage's own folder or candidate).

Every reader of :mod:`corpus_platform.base.shards` puts the texts back (:func:`fill`), so a
reader sees the full texts; a file without the marker reads as it is. The raw row must be the
one the filter read: its ``content_hash`` must equal the filtered row's (a filtered row whose
text was not edited carries its raw row's hash), or the read fails and names the fix.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpus_platform.base.errors import CorpusError

TEXT = "text"  # the text column (base.generations re-exports it)
UNEDITED_IN = b"corpus_platform.unedited_text_in"  # field metadata: the stage with the texts
KEYS = ["doc_id", "content_hash"]  # what finds and verifies a row in that stage


def marked_field(field: pa.Field, stage: str) -> pa.Field:
    """``field`` (the ``text`` field) marked as holding only edited texts, the others in
    ``stage``."""
    return field.with_metadata({UNEDITED_IN: stage.encode()})


def stored_texts(
    texts: list[str | None], edited: list[bool], field: pa.Field, stage: str
) -> tuple[pa.Field, pa.Array]:
    """The ``text`` field (marked) and column a stage stores when its rows' texts are
    ``texts`` and only the rows ``edited`` differ from ``stage``'s."""
    kept = [text if changed else None for text, changed in zip(texts, edited, strict=True)]
    return marked_field(field, stage), pa.array(kept, field.type)


def unedited_stage(schema: pa.Schema) -> str | None:
    """The stage holding the unedited texts of a file of ``schema``; None when it stores all."""
    if TEXT not in schema.names:
        return None
    stage = (schema.field(TEXT).metadata or {}).get(UNEDITED_IN)
    return None if stage is None else stage.decode()


def columns_to_read(schema: pa.Schema, columns: list[str] | None) -> list[str] | None:
    """``columns`` plus what :func:`fill` needs of a file of ``schema`` to put its texts back."""
    if columns is None or TEXT not in columns or unedited_stage(schema) is None:
        return columns
    return [*columns, *(k for k in KEYS if k not in columns and k in schema.names)]


def sibling(file: Path, stage: str) -> Path:
    """The file of ``stage`` beside ``file``'s stage folder with the same shard and batch:
    ``<data>/<stage>/part-N.parquet[/<batch>.parquet]``."""
    folder = _stage_folder(file)
    return folder.parent / stage / file.relative_to(folder)


def fill(file: Path, table: pa.Table, columns: list[str] | None = None) -> pa.Table:
    """``table`` (read from ``file``) with the null texts of its rows taken from the stage that
    holds them (:func:`unedited_stage`), then only ``columns`` (every column for None).

    Raises:
        CorpusError: The other stage's file is missing, lacks a row, or holds a row whose
            content hash differs (it was rebuilt since): materialize the stage again.
    """
    stage = unedited_stage(table.schema) if TEXT in table.column_names else None
    if stage is None:
        return table if columns is None else table.select(columns)
    index = table.schema.get_field_index(TEXT)
    plain = table.schema.field(TEXT).remove_metadata()
    column = table.column(TEXT)
    if column.null_count:
        column = _filled(file, table, stage)
    table = table.set_column(index, plain, column)
    return table if columns is None else table.select(columns)


def _stage_folder(file: Path) -> Path:
    shard_folder = file.parent
    if shard_folder.name.startswith("part-") and shard_folder.suffix == ".parquet":
        return shard_folder.parent
    return shard_folder


def _filled(file: Path, table: pa.Table, stage: str) -> pa.ChunkedArray | pa.Array:
    source = sibling(file, stage)
    name = _stage_folder(file).name.removeprefix(".staging-")
    fix = f"materialize {name} again (corpus run) so that it matches {stage}"
    if not source.is_file():
        raise CorpusError(f"{file}: its unedited texts are in {source}, which is missing; {fix}")
    held = pq.read_table(source, columns=[TEXT, *KEYS])
    at = pc.index_in(table.column("doc_id"), value_set=held.column("doc_id"))
    missing = pc.is_null(table.column(TEXT))
    ours, theirs = table.column("content_hash"), held.column("content_hash").take(at)
    same = pc.fill_null(pc.equal(ours, theirs), pc.and_(pc.is_null(ours), pc.is_null(theirs)))
    lost = pc.and_(missing, pc.is_null(at))
    changed = pc.and_(pc.and_(missing, pc.invert(same)), pc.invert(lost))
    for problem, bad in (("is not there", lost), ("has another content hash there", changed)):
        if pc.any(bad).as_py():
            rows = pc.filter(table.column("doc_id"), bad).slice(0, 3).to_pylist()
            raise CorpusError(
                f"{file}: {pc.sum(bad).as_py()} rows whose unedited text is in {source} "
                f"{problem} (e.g. {rows}); {fix}"
            )
    taken = held.column(TEXT).take(at)
    if table.column(TEXT).null_count == len(table):
        return taken
    return pc.coalesce(table.column(TEXT), taken)
