"""Components of the group split: how large they are and how they were joined.

The group split (:mod:`corpus_platform.kernels.splitting.split`) places whole components, so one
component holding a large share of the rows decides a split's share on its own. On real text
(license boilerplate repeated across packages) similar pairs chained most entities into one.
This module explains such a component; :mod:`corpus_platform.kernels.splitting.cut` handles it.

- :func:`link_graph` builds the components over entities from duplicate-cluster links and
  similar-pair links and counts the *joins* of each kind: the links that merged two parts,
  clusters taken before pairs, so cluster joins + pair joins = entities - 1. *Entity joins* are
  rows that share an entity with another row: rows - entities with rows.
- :class:`ComponentReport` holds the size histogram (powers of two of rows) and the largest
  and the oversize components (computed on the engine by
  :mod:`corpus_platform.kernels.splitting.component_graph`); :func:`scan_members` reads a few
  sample doc ids of the described components, and which pair ends are rows, from the split's
  input, one shard at a time.

Components are named by their smallest entity key; every ranking breaks ties by name.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Mapping, Set
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.names import SPLITS
from corpus_platform.base.shards import iter_shards
from corpus_platform.kernels.splitting.unionfind import UnionFind

TOP_COMPONENTS = 5  # largest components described in the metadata
SAMPLE_IDS = 3  # doc ids shown per described component


@dataclass(frozen=True)
class SimilarPair:
    """Two rows at or above the split's similarity threshold."""

    doc_a: str
    doc_b: str
    entity_a: str
    entity_b: str
    similarity: float


@dataclass(frozen=True)
class Links:
    """The links between entities: ``clusters`` (entity pairs from duplicate clusters, which a
    cut keeps) and the similar ``pairs``."""

    clusters: tuple[tuple[str, str], ...]
    pairs: tuple[SimilarPair, ...]

    @classmethod
    def from_tables(cls, pairs: pa.Table, clusters: pa.Table | None = None) -> Links:
        """Links from the dedup stage's similar-pairs table (``doc_a``, ``doc_b``,
        ``entity_a``, ``entity_b``, ``similarity``) and membership rows (``cluster_id``,
        ``entity``): a cluster links its first member's entity to every member's entity."""
        columns = ("doc_a", "doc_b", "entity_a", "entity_b", "similarity")
        similar = tuple(
            SimilarPair(*row)
            for row in zip(*(pairs.column(c).to_pylist() for c in columns), strict=True)
        )
        cluster_links: list[tuple[str, str]] = []
        if clusters is not None and len(clusters):
            first: dict[str, str] = {}
            ids, entities = clusters.column("cluster_id"), clusters.column("entity")
            for cluster, entity in zip(ids.to_pylist(), entities.to_pylist(), strict=True):
                cluster_links.append((first.setdefault(cluster, entity), entity))
        return cls(tuple(cluster_links), similar)

    def entities(self) -> set[str]:
        """Every entity named by a link."""
        pair_entities = ((p.entity_a, p.entity_b) for p in self.pairs)
        return set(chain.from_iterable(chain(self.clusters, pair_entities)))

    def within(self, component_of: Mapping[str, str], names: Set[str]) -> dict[str, Links]:
        """The links of each component in ``names`` (every link lies inside one component)."""
        clusters: dict[str, list[tuple[str, str]]] = defaultdict(list)
        pairs: dict[str, list[SimilarPair]] = defaultdict(list)
        for a, b in self.clusters:
            if component_of.get(a, a) in names:
                clusters[component_of.get(a, a)].append((a, b))
        for pair in self.pairs:
            if component_of.get(pair.entity_a, pair.entity_a) in names:
                pairs[component_of.get(pair.entity_a, pair.entity_a)].append(pair)
        return {n: Links(tuple(clusters[n]), tuple(pairs[n])) for n in sorted(names)}


@dataclass(frozen=True)
class ComponentGraph:
    """Linked entities -> component name (the smallest entity key), and per component its
    (duplicate-cluster joins, similar-pair joins)."""

    component_of: dict[str, str]
    joins: dict[str, tuple[int, int]]


def link_graph(links: Links) -> ComponentGraph:
    """Components over entities, each named by its smallest entity key."""
    sets = UnionFind()
    merges: list[tuple[int, str]] = []
    pair_links = ((p.entity_a, p.entity_b) for p in links.pairs)
    kinds = chain(((0, link) for link in links.clusters), ((1, link) for link in pair_links))
    for kind, (a, b) in kinds:
        if sets.find(a) != sets.find(b):
            sets.union(a, b)
            merges.append((kind, a))
    component_of = {m: root for root, members in sets.groups().items() for m in members}
    joins: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for kind, entity in merges:
        joins[component_of[entity]][kind] += 1
    return ComponentGraph(component_of, {c: (j[0], j[1]) for c, j in sorted(joins.items())})


@dataclass(frozen=True)
class ComponentStats:
    """One component: its rows (and share of all rows), entities, joins by kind, samples."""

    name: str
    rows: int
    share: float
    entities: int
    entity_joins: int
    cluster_joins: int
    pair_joins: int
    sample_doc_ids: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line naming the component, e.g. for an error or a check verdict."""
        samples = f", e.g. {', '.join(self.sample_doc_ids)}" if self.sample_doc_ids else ""
        return (
            f"component {self.name!r}: {self.rows} rows ({self.share:.1%} of rows), "
            f"{self.entities} entities, joined by {self.entity_joins} shared-entity, "
            f"{self.cluster_joins} duplicate-cluster and {self.pair_joins} similar-pair "
            f"links{samples}"
        )


@dataclass(frozen=True)
class ComponentReport:
    """Rows placed by component, the size histogram ``(low, high, components, rows)`` over
    powers of two, the largest components and those above the share cap, largest first."""

    rows: int
    components: int
    histogram: tuple[tuple[int, int, int, int], ...]
    largest: tuple[ComponentStats, ...]
    oversize: tuple[ComponentStats, ...]

    def with_samples(self, samples: Mapping[str, tuple[str, ...]]) -> ComponentReport:
        """The report with sample doc ids filled in for the described components."""

        def fill(stats: tuple[ComponentStats, ...]) -> tuple[ComponentStats, ...]:
            return tuple(replace(s, sample_doc_ids=samples.get(s.name, ())) for s in stats)

        return replace(self, largest=fill(self.largest), oversize=fill(self.oversize))

    def described(self) -> set[str]:
        """Names of the components the report describes."""
        return {s.name for s in (*self.largest, *self.oversize)}


def scan_members(
    upstream: Path,
    num_shards: int,
    component_of: Mapping[str, str],
    names: Set[str],
    wanted: Set[str],
    samples: int = SAMPLE_IDS,
) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """The ``samples`` smallest doc ids of each component in ``names``, and which ``wanted``
    doc ids are rows of the stage, one shard at a time."""
    entities = pa.array(
        sorted({e for e, c in component_of.items() if c in names} | set(names)), pa.string()
    )
    keep = pa.array(sorted(wanted), pa.string())
    smallest: dict[str, list[str]] = defaultdict(list)
    found: set[str] = set()
    for _, table in iter_shards(upstream, num_shards, ["doc_id", "entity"]):
        ids = table.column("doc_id")
        found.update(pc.filter(ids, pc.is_in(ids, keep)).to_pylist())
        hit = table.filter(pc.is_in(table.column("entity"), entities))
        ids, owners = hit.column("doc_id").to_pylist(), hit.column("entity").to_pylist()
        for doc_id, entity in zip(ids, owners, strict=True):
            name = component_of.get(entity, entity)
            if name in names:
                smallest[name].append(doc_id)
        for name, members in smallest.items():
            smallest[name] = heapq.nsmallest(samples, members)
    return {n: tuple(m) for n, m in sorted(smallest.items())}, found


@dataclass(frozen=True)
class PlacedComponent:
    """The component with the most rows in a written split (ties by name)."""

    name: str
    rows: int
    split: str
    total_rows: int

    @property
    def share(self) -> float:
        """Its share of the rows in the splits."""
        return self.rows / self.total_rows if self.total_rows else 0.0


def largest_placed(split_root: Path, num_shards: int) -> PlacedComponent | None:
    """Read the ``component`` column of every split and return the largest component."""
    rows: Counter[tuple[str, str]] = Counter()
    for split in SPLITS:
        for _, table in iter_shards(split_root / split, num_shards, ["component"]):
            counts = pc.value_counts(table.column("component"))
            names, sizes = counts.field(0).to_pylist(), counts.field(1).to_pylist()
            rows.update({(name, split): n for name, n in zip(names, sizes, strict=True)})
    if not rows:
        return None
    (name, split), size = min(rows.items(), key=lambda item: (-item[1], item[0]))
    return PlacedComponent(name, size, split, sum(rows.values()))
