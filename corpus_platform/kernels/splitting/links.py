"""Which duplicate-cluster memberships and similar pairs join entities in the split's graph.

Two rules, each counted in the split's metadata whether or not it removes anything:

- *Too short to leak* (``split.min_link_shingles``; :mod:`~.content`): a cluster whose
  representative, or a pair one of whose measured ends, has fewer distinct word n-grams than
  the minimum links nothing. The leak checks exempt the same pairs and clusters.
- *Through dropped rows*:
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
from corpus_platform.kernels.dedup.params import DedupParams
from corpus_platform.kernels.splitting.content import (
    LinkFiles,
    find_short,
    linking_pairs,
    read_short,
)


@dataclass(frozen=True)
class DroppedLinks:
    """What leaving links through dropped rows out removed."""

    memberships: int  # dropped rows' cluster memberships
    pairs: int  # similar pairs with a dropped end

    def as_dict(self) -> dict[str, int]:
        """JSON-ready counts for the split's metadata."""
        return {"cluster_memberships": self.memberships, "similar_pairs": self.pairs}


@dataclass(frozen=True)
class ShortLinks:
    """What ``split.min_link_shingles`` left out: links whose texts are too short to leak
    (:mod:`~corpus_platform.kernels.splitting.content`)."""

    min_shingles: int
    clusters: int  # duplicate clusters whose representative is too short
    memberships: int  # their memberships
    pairs: int  # similar pairs with a measured end too short

    def as_dict(self) -> dict[str, int]:
        """JSON-ready counts for the split's metadata."""
        return {
            "min_link_shingles": self.min_shingles,
            "duplicate_clusters": self.clusters,
            "cluster_memberships": self.memberships,
            "similar_pairs": self.pairs,
        }


def linking_memberships(
    shard: int, clusters: Path, out: Path, short: Path, num_shards: int, link_dropped: bool
) -> tuple[int, int, list[str]]:
    """Write one shard's memberships that link to ``out``: not of a cluster whose
    representative is too short (the ids :func:`~.content.find_short` wrote under ``short``),
    nor (``link_dropped`` false) of a dropped row. Return the memberships of dropped rows, those
    of short clusters, and the short clusters' ids."""
    table = read_shard(clusters, shard)
    kept = table.column("kept")
    too_short = pc.is_in(table.column("representative"), read_short(short, num_shards))
    links = pc.and_(pc.invert(too_short), pc.or_(kept, pa.scalar(link_dropped)))
    write_parquet(table.filter(links), part_path(out, shard))
    short_clusters = pc.unique(table.filter(too_short).column("cluster_id")).to_pylist()
    dropped = len(table) - int(pc.sum(kept).as_py() or 0)
    return dropped, int(pc.sum(pc.cast(too_short, pa.int64())).as_py() or 0), short_clusters


def write_linking_pairs(
    _: int, links: LinkFiles, short: Path, num_shards: int, out: Path, link_dropped: bool
) -> tuple[int, int]:
    """Engine task: write to ``out`` the similar pairs that link: no measured end too short
    (``short``: :func:`~.content.find_short`) and, when ``link_dropped`` is false, no dropped
    end. Return the pairs with a dropped end and those too short."""
    _, pairs, stand_in = links.read()  # the split's links judge every membership
    dropped = stand_in.column("doc_id")
    through = pc.or_(
        pc.is_in(pairs.column("doc_a"), dropped), pc.is_in(pairs.column("doc_b"), dropped)
    )
    linking = linking_pairs(pairs, stand_in, read_short(short, num_shards))
    keep = pc.and_(linking, pc.or_(pc.invert(through), pa.scalar(link_dropped)))
    write_parquet(pairs.filter(keep), out)
    return _count(through), _count(pc.invert(linking))


def split_links(
    clusters: Path,
    pairs_file: Path,
    upstream: Path,
    num_shards: int,
    out: Path,
    engine: Engine,
    params: DedupParams,
    link_dropped: bool,
) -> tuple[Path, Path, DroppedLinks, ShortLinks]:
    """Memberships (``out/clusters``) and similar pairs (``out/pairs.parquet``) that link
    entities: without those too short to leak (``params.min_shingles``; texts measured in
    ``upstream``) and, when ``link_dropped`` is false, without those made through dropped rows.
    Both kinds are counted whether or not they are left out of the graph. The engine's tasks
    read the memberships and pairs; this process holds neither."""
    files = LinkFiles((pairs_file,), tuple(part_path(clusters, s) for s in range(num_shards)))
    short = find_short(files, upstream, num_shards, params, engine, out / "short")
    write = partial(
        linking_memberships,
        clusters=clusters,
        out=out / "clusters",
        short=short,
        num_shards=num_shards,
        link_dropped=link_dropped,
    )
    parts = engine.map_shards(write, range(num_shards))
    pairs = partial(
        write_linking_pairs,
        links=files,
        short=short,
        num_shards=num_shards,
        out=out / "pairs.parquet",
        link_dropped=link_dropped,
    )
    through, not_linking = engine.map_shards(pairs, [0])[0]
    removed = DroppedLinks(sum(d for d, _, _ in parts), through)
    too_short = ShortLinks(
        params.min_shingles,
        len({c for _, _, ids in parts for c in ids}),
        sum(n for _, n, _ in parts),
        not_linking,
    )
    return out / "clusters", out / "pairs.parquet", removed, too_short


def add_pairs(_: int, pairs_file: Path, extra: pa.Table) -> int:
    """Engine task: rewrite ``pairs_file`` with the similar pairs ``extra`` after its own;
    return its rows."""
    both = pa.concat_tables([read_parquet(pairs_file), extra], promote_options="default")
    write_parquet(both, pairs_file)
    return len(both)


def _count(mask: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
