"""The largest-clusters table of deduplicated_documents: its texts read by engine tasks."""

from pathlib import Path

import pyarrow as pa

from corpus_platform.base.shards import write_sharded
from corpus_platform.defs.dedup.review import SNIPPET_CHARS, largest_clusters_markdown
from corpus_platform.engine import LocalEngine
from corpus_platform.kernels.dedup.membership import LargeCluster


def test_largest_clusters_show_the_start_of_each_text_from_worker_processes(
    tmp_path: Path,
) -> None:
    """Kept row and member texts come back cut to the snippet, redacted and escaped, read in
    the workers of a two-process pool; a row without text reads "(no text)"."""
    long_text = "kept | row " + "word " * 100
    rows = {
        "a": long_text,
        "b": "member text, mail someone@example.org\nsecond line",
        "c": None,
        "d": "another kept row",
        "e": "unrelated row that is not asked for",
    }
    table = pa.table({"doc_id": list(rows), "text": pa.array(list(rows.values()), pa.string())})
    write_sharded(table, tmp_path / "rows", 4)
    largest = [LargeCluster("k1", 3, "a", "b", 0.91), LargeCluster("k2", 2, "d", "c", 0.8)]

    markdown = largest_clusters_markdown(largest, tmp_path / "rows", 4, LocalEngine(2))

    lines = markdown.splitlines()
    assert len(lines) == 4
    kept = long_text[:SNIPPET_CHARS].replace("|", "\\|")
    assert lines[2].startswith(f"| k1 | 3 | a | {kept} | b | 0.910 | member text, mail ")
    assert "someone@example.org" not in markdown and "second line |" in lines[2]
    assert lines[3] == "| k2 | 2 | d | another kept row | c | 0.800 | (no text) |"
    assert "unrelated" not in markdown
