"""A batch of edges grouped by node in two arrays (CSR), instead of a list per node.

The memory index walks a node's edges by ordinal. Edges that arrive one
event at a time go to per-node lists (:mod:`cortex_agents.memory._index`); the
first batch of edges an index takes in — a whole run read back after a
restart, a snapshot made by hand: every edge at once — is grouped here by
one stable sort per direction, in numpy. At 1,000,000 nodes the per-node
lists cost two empty lists per node and one append per edge end (~3 s of a
build); these arrays cost two sorts.

Arrays are never written after they are built, so an index and its forks
share them.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["Adjacency", "Grouped"]

IntArray = npt.NDArray[np.int64]
_NONE: Final = np.zeros(0, dtype=np.int64)


class Grouped:
    """Edge ordinals grouped by one end: node ``u``'s are ``edges[ptr[u]:ptr[u + 1]]``, in order.

    Attributes:
        ptr: ``n + 1`` offsets (nodes from ``n`` on have no edge here).
        edges: Every edge ordinal, grouped by node, increasing within a node.
    """

    __slots__ = ("_lists", "edges", "ptr")

    def __init__(self, ptr: IntArray, edges: IntArray) -> None:
        self.ptr = ptr
        self.edges = edges
        self._lists: tuple[list[int], list[int]] | None = None

    @classmethod
    def by(cls, ends: IntArray, n: int) -> Grouped:
        """Edges ``0 .. len(ends) - 1`` grouped by ``ends`` (each an ordinal below ``n``)."""
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=ptr[1:])
        return cls(ptr, np.argsort(ends, kind="stable").astype(np.int64, copy=False))

    @property
    def nodes(self) -> int:
        """How many nodes the offsets span."""
        return len(self.ptr) - 1

    def lists(self) -> tuple[list[int], list[int]]:
        """``(ptr, edges)`` as Python lists (made once): what a walk in Python slices."""
        if self._lists is None:
            self._lists = (self.ptr.tolist(), self.edges.tolist())
        return self._lists

    def edges_of(self, node: int) -> list[int]:
        """Node ``node``'s edge ordinals, in order."""
        if node >= self.nodes:
            return []
        ptr, edges = self.lists()  # (a depth update after a restart reads many nodes' edges)
        return edges[ptr[node] : ptr[node + 1]]


class Adjacency:
    """The first ``edges`` edges grouped by source (:attr:`out`) and by target (:attr:`inc`).

    Attributes:
        edges: How many edges (ordinals ``0 .. edges - 1``) it holds.
        out: Grouped by source.
        inc: Grouped by target.
    """

    __slots__ = ("edges", "inc", "out")

    def __init__(self, edges: int, out: Grouped, inc: Grouped) -> None:
        self.edges = edges
        self.out = out
        self.inc = inc

    @classmethod
    def empty(cls) -> Adjacency:
        """No edge."""
        return cls.of(_NONE, _NONE, 0)

    @classmethod
    def of(cls, src: IntArray, dst: IntArray, n: int) -> Adjacency:
        """Edges ``k = 0 ..`` from ``src[k]`` to ``dst[k]``, among ``n`` nodes."""
        return cls(len(src), Grouped.by(src, n), Grouped.by(dst, n))
