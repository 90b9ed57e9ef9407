"""Links through dropped duplicates: which duplicate-cluster memberships and similar pairs may
join entities when the row that makes the link is in no split.

In ``dedup.mode: drop`` a cluster keeps one row; the others leave the corpus. A link made only
through such a row (a dropped row's membership of its cluster, or a similar pair with a dropped
end) joins two entities whose rows in the splits share no text through it: boilerplate copied
by many authors ("New upstream release") chains them into one giant component. With
``split.link_dropped: false`` those links are left out of the component graph and counted; the
leak checks look only at rows in the splits, so they are unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.shards import part_path, read_parquet, read_shard, write_parquet
from corpus_platform.engine import Engine


@dataclass(frozen=True)
class DroppedLinks:
    """What leaving links through dropped rows out removed."""

    memberships: int  # dropped rows' cluster memberships
    pairs: int  # similar pairs with a dropped end

    def as_dict(self) -> dict[str, int]:
        """JSON-ready counts for the split's metadata."""
        return {"cluster_memberships": self.memberships, "similar_pairs": self.pairs}


def kept_memberships(shard: int, clusters: Path, out: Path) -> tuple[int, list[str]]:
    """Write one shard's memberships of kept rows to ``out``; return how many memberships of
    dropped rows were left out, and those rows' doc ids."""
    table = read_shard(clusters, shard)
    kept = table.column("kept")
    write_parquet(table.filter(kept), part_path(out, shard))
    dropped = table.filter(pc.invert(kept)).column("doc_id").to_pylist()
    return len(dropped), dropped


def links_without_dropped(
    clusters: Path, pairs_file: Path, num_shards: int, out: Path, engine: Engine
) -> tuple[Path, Path, DroppedLinks]:
    """Memberships (``out/clusters``) and similar pairs (``out/pairs.parquet``) without the
    links made through dropped rows, one shard a task on ``engine``."""
    parts = engine.map_shards(
        partial(kept_memberships, clusters=clusters, out=out / "clusters"), range(num_shards)
    )
    dropped = pa.array(sorted(d for _, ids in parts for d in ids), pa.string())
    pairs = read_parquet(pairs_file)
    through = pc.or_(
        pc.is_in(pairs.column("doc_a"), dropped), pc.is_in(pairs.column("doc_b"), dropped)
    )
    write_parquet(pairs.filter(pc.invert(through)), out / "pairs.parquet")
    removed = DroppedLinks(
        sum(n for n, _ in parts), int(pc.sum(pc.cast(through, pa.int64())).as_py() or 0)
    )
    return out / "clusters", out / "pairs.parquet", removed
