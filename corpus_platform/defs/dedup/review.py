"""Markdown for reviewing duplicate clusters in the UI: size histogram and the largest clusters."""

from collections.abc import Sequence
from pathlib import Path

from corpus_platform.base.hashing import ids_by_shard
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import rows_with_ids
from corpus_platform.kernels.dedup.membership import LargeCluster

LARGEST_CLUSTERS = 5
SNIPPET_CHARS = 120


def histogram_markdown(sizes: dict[int, int]) -> str:
    """The cluster-size histogram as a table (size -> clusters, rows)."""
    lines = ["| cluster size | clusters | rows |", "|---:|---:|---:|"]
    lines += [f"| {size} | {count:,} | {size * count:,} |" for size, count in sizes.items()]
    return "\n".join(lines)


def texts_of(doc_ids: set[str], folder: Path, num_shards: int) -> dict[str, str | None]:
    """The texts of a few rows, each read from its own shard only."""
    found: dict[str, str | None] = {}
    for shard, wanted in ids_by_shard(doc_ids, num_shards):
        table = rows_with_ids(folder, shard, wanted, ["doc_id", "text"])
        found.update(
            zip(table.column("doc_id").to_pylist(), table.column("text").to_pylist(), strict=True)
        )
    return found


def _snippet(text: str | None) -> str:
    if text is None:
        return "(no text)"
    return redact_text(text[:SNIPPET_CHARS]).replace("|", "\\|").replace("\n", " ")


def largest_clusters_markdown(
    largest: Sequence[LargeCluster], upstream: Path, num_shards: int
) -> str:
    """The largest clusters (ties by cluster id): size, kept row and one dropped member, with
    the start of their texts (redacted) and the member's estimated similarity to the kept row."""
    texts = texts_of(
        {c.representative for c in largest} | {c.member for c in largest}, upstream, num_shards
    )
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
