"""Markdown for reviewing duplicate clusters in the UI: size histogram and the largest clusters."""

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.hashing import ids_by_shard
from corpus_platform.base.redact import redact_text
from corpus_platform.base.shards import rows_with_ids

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


def largest_clusters_markdown(membership: pa.Table, upstream: Path, num_shards: int) -> str:
    """The largest clusters (ties by cluster id): size, kept row and one dropped member, with
    the start of their texts (redacted) and the member's estimated similarity to the kept row."""
    sizes = membership.group_by("cluster_id").aggregate([("doc_id", "count")])
    ranked = sorted(
        zip(
            sizes.column("cluster_id").to_pylist(),
            sizes.column("doc_id_count").to_pylist(),
            strict=True,
        ),
        key=lambda item: (-item[1], item[0]),
    )[:LARGEST_CLUSTERS]
    rows = []
    for cluster, size in ranked:
        members = membership.filter(pc.equal(membership.column("cluster_id"), cluster))
        representative = members.column("representative")[0].as_py()
        others = members.filter(pc.not_equal(members.column("doc_id"), representative))
        other = others.slice(0, 1).to_pylist()[0]
        rows.append((cluster, size, representative, other["doc_id"], other["similarity"]))
    texts = texts_of({r[2] for r in rows} | {r[3] for r in rows}, upstream, num_shards)
    lines = [
        "| cluster | size | kept row | kept text | a member | similarity | member text |",
        "|---|---:|---|---|---|---:|---|",
    ]
    for cluster, size, kept, other, similarity in rows:
        lines.append(
            f"| {cluster} | {size} | {kept} | {_snippet(texts.get(kept))} | {other} | "
            f"{similarity:.3f} | {_snippet(texts.get(other))} |"
        )
    return "\n".join(lines)
