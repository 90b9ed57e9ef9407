"""Markdown for reviewing duplicate clusters in the UI: size histogram and the largest clusters."""

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from corpus_platform.base.hashing import ids_by_shard
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import rows_with_ids
from corpus_platform.engine import Engine
from corpus_platform.kernels.dedup.membership import LargeCluster

LARGEST_CLUSTERS = 5
SNIPPET_CHARS = 120


def histogram_markdown(sizes: dict[int, int]) -> str:
    """The cluster-size histogram as a table (size -> clusters, rows)."""
    lines = ["| cluster size | clusters | rows |", "|---:|---:|---:|"]
    lines += [f"| {size} | {count:,} | {size * count:,} |" for size, count in sizes.items()]
    return "\n".join(lines)


def shard_snippets(shard: int, wanted: dict[int, set[str]], folder: Path) -> dict[str, str | None]:
    """The first :data:`SNIPPET_CHARS` characters of the texts of shard ``shard``'s rows in
    ``wanted`` (an engine task: reading a shard's text column takes a row group's text at once,
    a whole shard's when it is one row group, so a worker does it, not the Dagster process)."""
    table = rows_with_ids(folder, shard, wanted[shard], ["doc_id", "text"])
    ids, texts = table.column("doc_id").to_pylist(), table.column("text").to_pylist()
    return {d: None if t is None else t[:SNIPPET_CHARS] for d, t in zip(ids, texts, strict=True)}


def snippets_of(
    doc_ids: set[str], folder: Path, num_shards: int, engine: Engine
) -> dict[str, str | None]:
    """The starts of the texts of a few rows, each read from its own shard on ``engine``."""
    wanted = dict(ids_by_shard(doc_ids, num_shards))
    task = partial(shard_snippets, wanted=wanted, folder=folder)
    return {d: t for found in engine.map_shards(task, sorted(wanted)) for d, t in found.items()}


def _snippet(text: str | None) -> str:
    if text is None:
        return "(no text)"
    return redact_text(text[:SNIPPET_CHARS]).replace("|", "\\|").replace("\n", " ")


def largest_clusters_markdown(
    largest: Sequence[LargeCluster], upstream: Path, num_shards: int, engine: Engine
) -> str:
    """The largest clusters (ties by cluster id): size, kept row and one dropped member, with
    the start of their texts (redacted) and the member's estimated similarity to the kept row."""
    rows = {c.representative for c in largest} | {c.member for c in largest}
    texts = snippets_of(rows, upstream, num_shards, engine)
    lines = [
        "| cluster | size | kept row | kept text | a member | similarity | member text |",
        "|---|---:|---|---|---|---:|---|",
    ]
    for c in largest:
        lines.append(
            f"| {c.cluster_id} | {c.size} | {c.representative} | "
            f"{_snippet(texts.get(c.representative))} | {c.member} | {c.similarity:.3f} | "
            f"{_snippet(texts.get(c.member))} |"
        )
    return "\n".join(lines)
