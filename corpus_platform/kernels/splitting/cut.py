"""The cut of a component too large to place (``split.oversize: cut``).

A component above ``split.max_component_share`` is separated in three steps, never breaking an
entity or a duplicate cluster:

1. *Parts*: its entities joined by duplicate-cluster links only, i.e. the component
   re-clustered at the dedup threshold (every pair at or above it lies inside a duplicate
   cluster, so no higher threshold separates more). A part of several entities above the share
   cap cannot be cut and raises :class:`OversizeError`; a part of one entity is placed whole,
   as any entity is (an entity is never split), and the ratio check judges its weight.
2. *Pieces*: parts re-joined along their similar pairs, strongest first (ties by doc ids),
   while the joined piece stays within :func:`piece_share` of the rows: single linkage at a
   falling threshold, stopped by size, so that few pairs are left between pieces.
3. *Bridges*: each piece lands in the split of its own seeded bucket. Similar pairs (at the
   split threshold, both rows present) joining pieces in different splits are covered greedily
   (:func:`greedy_cover`) and the cover rows are dropped with reason ``bridge``. Pairs between
   pieces that landed in the same split leak nothing and cost nothing.

Every decision is a function of doc ids, entity keys, similarities, the config and the seed:
links are sorted before use and no set is iterated unsorted where order could matter.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, replace
from pathlib import Path

from corpus_platform.base.hashing import bucket_of
from corpus_platform.base.names import SPLITS
from corpus_platform.config import SplitConfig
from corpus_platform.kernels.splitting.components import (
    ComponentReport,
    Links,
)
from corpus_platform.kernels.splitting.split import bucket_bounds, split_of
from corpus_platform.kernels.splitting.unionfind import UnionFind


class OversizeError(ValueError):
    """A component above ``split.max_component_share`` that cannot be cut: one of its parts,
    above the cap, is several entities held together by duplicate clusters."""


def piece_share(
    max_share: float, tolerance: float, ratios: Mapping[str, float], oversize_share: float
) -> float:
    """The largest piece (share of rows) a cut re-joins parts into.

    A split's share moved by hash-assigned pieces of shares ``x_i`` has variance
    ``r (1 - r) sum(x_i**2) <= v s m`` for pieces of at most ``s``, ``m`` the oversize rows'
    share and ``v`` the largest ``r (1 - r)`` over the ratios. Keeping three standard deviations
    within the tolerance gives ``s <= tolerance**2 / (9 v m)``, capped at ``max_share``.
    """
    spread = max(r * (1.0 - r) for r in ratios.values())
    if spread <= 0.0 or oversize_share <= 0.0:
        return max_share
    return min(max_share, tolerance**2 / (9.0 * spread * oversize_share))


def bucket_assigner(ratios: Mapping[str, float], seed: int) -> Callable[[str], str]:
    """The split a component (or piece) name lands in: its seeded bucket, as in the split."""
    bounds = bucket_bounds(dict(ratios))
    return lambda name: split_of(bucket_of(name, seed), bounds)


@dataclass(frozen=True)
class Cut:
    """One oversize component separated: entity -> piece name (its smallest entity key), the
    doc ids dropped as bridges, and the piece count, largest piece and rows per split."""

    component: str
    pieces: dict[str, str]
    bridges: tuple[str, ...]
    piece_count: int
    largest_piece: int
    split_rows: dict[str, int]


def greedy_cover(edges: Iterable[tuple[str, str]]) -> list[str]:
    """A vertex cover of ``edges``: repeatedly the key on the most uncovered edges (ties by the
    smallest key). Sorted."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        if a != b:
            neighbours[a].add(b)
            neighbours[b].add(a)
    heap = [(-len(others), key) for key, others in neighbours.items()]
    heapq.heapify(heap)
    chosen = []
    while heap:
        degree, key = heapq.heappop(heap)
        current = len(neighbours[key])
        if current and current != -degree:
            heapq.heappush(heap, (-current, key))
        elif current:
            chosen.append(key)
            for other in neighbours[key]:
                neighbours[other].discard(key)
            neighbours[key] = set()
    return sorted(chosen)


def cut_component(
    name: str,
    entity_rows: Mapping[str, int],
    links: Links,
    present: Set[str],
    max_rows: int,
    piece_rows: int,
    assign: Callable[[str], str],
) -> Cut:
    """Separate one component (see the module docstring).

    Args:
        name: The component's name.
        entity_rows: Rows of each of its entities in the split's input (missing: none).
        links: The links inside the component.
        present: Doc ids of the split's input; pairs with another row were deduplicated away.
        max_rows: Rows a part may hold; a larger part raises :class:`OversizeError`.
        piece_rows: Rows up to which parts are re-joined into one piece.
        assign: The split a piece name lands in (:func:`bucket_assigner`).
    """
    sets = UnionFind()
    sets.union_all(links.clusters)
    entities = sorted(set(entity_rows) | links.entities())
    size: Counter[str] = Counter()
    members: Counter[str] = Counter()
    for entity in entities:
        size[sets.find(entity)] += entity_rows.get(entity, 0)
        members[sets.find(entity)] += 1
    # a part of one entity is placed whole like any entity (the ratio check judges its weight);
    # a part of several, held together by duplicate clusters, is what cannot be cut
    joined = {p: n for p, n in size.items() if members[p] > 1}
    part, rows = min(joined.items() or [("", 0)], key=lambda item: (-item[1], item[0]))
    if rows > max_rows:
        raise OversizeError(
            f"component {name!r} cannot be cut: its part {part!r} of {rows} rows "
            f"({members[part]} entities) is held together by duplicate clusters, which are "
            f"never separated (more than the {max_rows} rows split.max_component_share "
            "allows); raise split.max_component_share, or split.min_link_shingles if the "
            "clusters are short boilerplate"
        )
    live = sorted(
        (p for p in links.pairs if p.doc_a in present and p.doc_b in present),
        key=lambda p: (-p.similarity, p.doc_a, p.doc_b),
    )
    for pair in live:
        a, b = sets.find(pair.entity_a), sets.find(pair.entity_b)
        if a != b and size[a] + size[b] <= piece_rows:
            sets.union(a, b)
            size[min(a, b)], size[max(a, b)] = size[a] + size[b], 0
    pieces = {entity: sets.find(entity) for entity in entities}
    split = {piece: assign(piece) for piece in sorted(set(pieces.values()))}
    crossing = [
        (p.doc_a, p.doc_b) for p in live if split[pieces[p.entity_a]] != split[pieces[p.entity_b]]
    ]
    bridges = greedy_cover(crossing)
    split_rows = Counter({s: 0 for s in SPLITS})
    for entity in entities:
        split_rows[split[pieces[entity]]] += entity_rows.get(entity, 0)
    return Cut(name, pieces, tuple(bridges), len(split), max(size.values()), dict(split_rows))


@dataclass(frozen=True)
class ComponentPlan:
    """What the group split places by: entity -> component (or piece; with ``labels``, only the
    pieces of cut components, the rest read from the labels on disk), the bridge rows to
    drop, the report on the components before any cut, the cuts, and ``error`` when an oversize
    component stops the split."""

    components: dict[str, str]
    bridges: frozenset[str]
    report: ComponentReport
    cuts: tuple[Cut, ...] = ()
    piece_share: float | None = None
    error: str | None = None
    labels: Path | None = None  # entity -> component on disk (the engine plan), else None
    linked: int = 0  # components holding a linked entity
    # links made only through dropped duplicates, and whether they join entities
    # (split.link_dropped); None when not counted
    through_dropped: dict[str, int | bool] | None = None
    # links left out as too short to leak (split.min_link_shingles); None when not counted
    too_short: dict[str, int] | None = None


def oversize_message(report: ComponentReport, max_share: float) -> str:
    """Why the split stops, naming the largest oversize component and the two ways forward."""
    largest = report.oversize[0]
    return (
        f"{len(report.oversize)} component(s) above split.max_component_share {max_share} "
        f"of {report.rows} rows; the largest is {largest.describe()}. A component is placed "
        "whole, so it alone moves its split's share by that much. Set split.oversize: cut or "
        "raise split.max_component_share"
    )


def cut_oversize(
    plan: ComponentPlan,
    members: Mapping[str, Mapping[str, int]],
    inner: Mapping[str, Links],
    present: Set[str],
    split: SplitConfig,
    seed: int,
    named: Mapping[str, str],
) -> ComponentPlan:
    """Cut every oversize component of ``plan.report``: ``members`` its entities' rows,
    ``inner`` its links, ``present`` the doc ids of the split's input among their pairs. The
    plan's components become ``named`` (entity -> component) overridden by the pieces; an
    uncuttable component leaves the plan with its error."""
    report = plan.report
    oversize = sum(s.rows for s in report.oversize) / report.rows
    share = piece_share(split.max_component_share, split.tolerance, split.ratios, oversize)
    max_rows = int(split.max_component_share * report.rows)
    piece_rows = max(1, int(share * report.rows))
    assign = bucket_assigner(split.ratios, seed)
    components, cuts = dict(named), []
    for name, links in inner.items():
        try:
            cut = cut_component(name, members[name], links, present, max_rows, piece_rows, assign)
        except OversizeError as error:
            return replace(plan, piece_share=share, error=str(error))
        components.update(cut.pieces)
        cuts.append(cut)
    bridges = frozenset(d for cut in cuts for d in cut.bridges)
    return replace(
        plan, components=components, bridges=bridges, cuts=tuple(cuts), piece_share=share
    )
