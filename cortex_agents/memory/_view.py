"""A prefix view of the memory index: what the engine reads, as of a number of events.

An :class:`IndexView` is taken by :meth:`~cortex_agents.memory._index.MemoryIndex.at`
(O(log V)) and never changes: every read filters the index's columns by the
view's length (see :mod:`cortex_agents.memory._index`). A walk costs O(cone);
the arrays a read returns are new or read-only prefixes.

A view reads the index's columns
(:class:`~cortex_agents.memory._index_columns.IndexColumns`), not the index
that makes it: what an extractor reads of the view's nodes is
:func:`cortex_agents.memory._fields.fields_of`, above both (issue 25: no
import cycle among the engine's modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from cortex_agents.memory._columns import NEVER
from cortex_agents.substrate._records import NodeId

if TYPE_CHECKING:
    from cortex_agents.memory._index_columns import IndexColumns

__all__ = ["IndexView", "IntArray"]

IntArray = npt.NDArray[np.int64]


class IndexView:
    """The memory index as of the first :attr:`length` events: immutable and exact.

    Attributes:
        index: The index it reads.
        length: The prefix of events it describes.
        n: How many nodes it holds (ordinals ``0 .. n-1``).
        edges: How many edges had been added (ordinals ``0 .. edges-1``; some may be removed).
        removals: How many of them had been removed (the index's first removals).
    """

    __slots__ = ("edges", "index", "length", "n", "removals")

    def __init__(self, index: IndexColumns, length: int, n: int, edges: int, removals: int):
        self.index = index
        self.length = length
        self.n = n
        self.edges = edges
        self.removals = removals

    def __repr__(self) -> str:
        return f"IndexView(<{self.n} nodes at {self.length} events>)"

    def position(self, node_id: str) -> int | None:
        """The ordinal of ``node_id``, or ``None`` when the view does not hold it."""
        i = self.index.pos.get(node_id)
        return i if i is not None and i < self.n else None

    def node_id(self, i: int) -> NodeId:
        """The id of the node with ordinal ``i``."""
        return self.index.ids[i]

    def kind_id(self, kind: str) -> int | None:
        """The interned id of a stage kind (``None``: no node of the index has it)."""
        return self.index.kind_lookup.get(kind)

    def kind_ids(self, nodes: IntArray) -> IntArray:
        """The interned stage kind of each node."""
        return self.index.kinds.data[nodes]

    def settled(self, nodes: IntArray) -> npt.NDArray[np.bool_]:
        """Whether each node had completed."""
        return self.index.settled_tick.data[nodes] < self.length

    def ready(self, nodes: IntArray) -> npt.NDArray[np.bool_]:
        """Whether each node's output had arrived (its fields are the extractor's of it)."""
        return self.index.output_tick.data[nodes] < self.length

    def observed_us(self, nodes: IntArray) -> IntArray:
        """``completed_at`` (else ``captured_at``) of each node, in epoch microseconds."""
        index = self.index
        observed: IntArray = index.completed_us.data[nodes]
        pending = np.flatnonzero(index.completed_tick.data[nodes] >= self.length)
        if len(pending):  # (only these read their capture time)
            observed[pending] = index.captured_us.data[nodes[pending]]
        return observed

    def labels(self, nodes: IntArray) -> IntArray:
        """Labels ordering the nodes' ids by code point."""
        return self.index.order.labels[nodes]

    def walk(self, relation: str, origin: int) -> tuple[IntArray, IntArray]:
        """BFS from ``origin``: the nodes it reaches (origin excluded), in BFS order, and their hops.

        ``relation``: ``"descendants"`` follows edges, ``"ancestors"`` follows them backwards.
        O(cone): a node's edges are listed in the order they were added (the
        index's bulk, then its later edges), so a view stops at its first edge
        added after it.
        """
        index = self.index
        compiled = index.adjacency(relation, self.edges, self.removals)
        if compiled is not None and origin < compiled.shape[0]:  # (later nodes have no edges)
            return _compiled_walk(compiled, origin)
        # a node's edges: those of the index's bulk (CSR), then its later ones (a list)
        forward = relation == "descendants"
        bulk = index.bulk.out if forward else index.bulk.inc
        later = index.out if forward else index.inc
        far = index.dst if forward else index.src
        ptr, grouped = bulk.lists()
        held = len(ptr) - 1
        removed, length, limit = index.removed, self.length, self.edges
        check = self.removals > 0
        seen = bytearray(self.n)
        seen[origin] = 1
        order, hops = [origin], [0]
        append_node, append_hop = order.append, hops.append
        i = 0
        while i < len(order):
            u, d = order[i], hops[i] + 1
            i += 1
            edges = grouped[ptr[u] : ptr[u + 1]] if u < held else []
            more = later[u]
            if more:
                edges += more
            for e in edges:
                if e >= limit:
                    break  # edges are listed in the order they were added
                if check and removed.get(e, NEVER) < length:
                    continue
                v = far[e]
                if not seen[v]:
                    seen[v] = 1
                    append_node(v)
                    append_hop(d)
        k = len(order) - 1
        return np.fromiter(order[1:], np.int64, k), np.fromiter(hops[1:], np.int64, k)

    def depths(self, nodes: IntArray) -> IntArray:
        """Each node's depth (longest path from a source of the graph) as of this view."""
        with self.index.lock:
            return self.index.depths.at(nodes, self.length)

    def successors(self, relation: str, nodes: IntArray) -> tuple[IntArray, IntArray] | None:
        """Each node's out-degree in ``relation`` and its successors, node after node, read
        from the compiled matrix of this view's edge set — ``None`` when none was built.

        No sort: the edges come grouped by their first node, in the order of ``nodes``.
        """
        matrix = self.index.compiled(relation, self.edges, self.removals)
        if matrix is None:
            return None
        # the matrix spans the nodes held when it was built: later ones have no edge in it
        indptr = matrix.indptr
        rows = np.minimum(nodes, matrix.shape[0])
        starts = indptr[rows]
        counts = (indptr[np.minimum(rows + 1, matrix.shape[0])] - starts).astype(np.int64)
        total = int(counts.sum())
        # entry t of node j's run sits at starts[j] + t: one gather of every run, in order
        ahead = np.cumsum(counts) - counts
        at = np.repeat(starts - ahead, counts) + np.arange(total)
        return counts, matrix.indices[at].astype(np.int64)

    def cone_edges(self, relation: str, cone: IntArray) -> tuple[IntArray, IntArray]:
        """The edges of ``relation`` out of ``cone`` nodes, as ``(from, to)`` ordinals.

        For a cone (everything a walk reached) these are all the edges among
        its nodes. O(edges) in numpy.
        """
        index = self.index
        src, dst = index.src_col.data[: self.edges], index.dst_col.data[: self.edges]
        if relation == "ancestors":
            src, dst = dst, src
        inside = np.zeros(self.n, dtype=bool)
        inside[cone] = True
        keep = inside[src]
        if self.removals:
            keep &= index.removed_tick.data[: self.edges] >= self.length
        return src[keep], dst[keep]


def _compiled_walk(adjacency: Any, origin: int) -> tuple[IntArray, IntArray]:
    """:meth:`IndexView.walk` by scipy's compiled BFS; hops level by level from its tree.

    The BFS lists nodes in the order its queue took them in, so the positions
    of their parents never decrease: the nodes one hop further than a level
    are the run whose parents lie in that level, found from one count of
    parents per position (a cumulative sum) by one read per level. Pointer jumping on the tree (O(n log depth)) takes over for a
    cone with more levels than a budget, or should that order ever not hold.
    """
    from scipy.sparse.csgraph import breadth_first_order  # type: ignore[import-untyped]

    order, predecessors = breadth_first_order(
        adjacency, origin, directed=True, return_predecessors=True
    )
    local = np.empty(adjacency.shape[0], dtype=np.int64)
    local[order] = np.arange(len(order))
    parent = local[predecessors[order[1:]]]  # position in `order` of each node's parent
    if len(parent) and not bool((parent[1:] >= parent[:-1]).all()):
        return _jumped_walk(order, parent)
    # below[x]: how many nodes have their parent before position x. A level ending before
    # position `end` is followed by the nodes whose parents lie before `end`: the next level
    # ends at below[end] + 1 (the origin, parentless, first) — one scalar read per level
    below = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=len(order)), out=below[1:])
    # a level costs a Python step: a deep, narrow cone (a chain of stages) has thousands
    # of levels of a node or two, cheaper by pointer jumping — past a budget, switch
    budget = len(order) // 64 + 16
    ends = [1]  # level h holds positions ends[h - 1] .. ends[h] - 1 (level 0: the origin)
    end = 1
    while (following := below.item(end) + 1) > end:
        if len(ends) == budget:
            return _jumped_walk(order, parent)
        ends.append(following)
        end = following
    bounds = np.asarray([0, *ends], dtype=np.int64)
    sizes = bounds[1:] - bounds[:-1]
    hops = np.repeat(np.arange(len(ends), dtype=np.int64), sizes)
    return order[1:].astype(np.int64), hops[1:]


def _jumped_walk(order: IntArray, parent: IntArray) -> tuple[IntArray, IntArray]:
    """Hops by pointer jumping on the BFS tree (``parent``: positions in ``order``)."""
    parent = np.concatenate(([0], parent))
    hops = np.ones(len(order), dtype=np.int64)
    hops[0] = 0
    while True:  # after each pass, hops[v] counts the edges to parent[v]
        grand = parent[parent]
        if np.array_equal(grand, parent):
            break
        hops += hops[parent]
        parent = grand
    return order[1:].astype(np.int64), hops[1:]
