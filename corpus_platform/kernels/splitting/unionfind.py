"""Union-find over string keys whose roots are always the smallest key of their set.

Because the root is the minimum member, a set's name depends only on its members, never on
the order the links arrived in.
"""

from __future__ import annotations

from collections.abc import Iterable


class UnionFind:
    """Disjoint sets of string keys named by their smallest member."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        """The name (smallest member) of the set holding ``key``; unseen keys are singletons."""
        parent = self._parent
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(key, key) != root:
            parent[key], key = root, parent[key]
        return root

    def union(self, a: str, b: str) -> None:
        """Merge the sets of ``a`` and ``b``; the smaller root names the result."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return
        low, high = (root_a, root_b) if root_a < root_b else (root_b, root_a)
        self._parent[high] = low
        self._parent.setdefault(low, low)

    def union_all(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Merge every pair."""
        for a, b in pairs:
            self.union(a, b)

    def groups(self) -> dict[str, list[str]]:
        """Every set with more than one member: name -> sorted members."""
        out: dict[str, list[str]] = {}
        for key in self._parent:
            out.setdefault(self.find(key), []).append(key)
        return {root: sorted(members) for root, members in sorted(out.items()) if len(members) > 1}
