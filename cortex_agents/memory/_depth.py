"""Each node's depth — the longest path to it from a source — kept as the graph changes.

Depth orders the influence pass (:mod:`cortex_agents.memory._influence`):
(depth, id) is a topological order of the graph, and its reverse one of the
transposed graph. The memory index keeps every node's depth as edges arrive
and leave: a new edge ``u -> v`` can deepen ``v`` and what lies below it; a
removed one (rewrites remove edges into pending work only) can make them
shallower. In a workflow a node's edges arrive right after it is scheduled,
before anything depends on it, so nothing below it needs updating.

**Versions.** A view of the index as of ``L`` events must read depths as
they were then. Each node keeps the tick its current depth holds from, its
previous depth (in columns: most nodes change once), and any older versions
in a small history; a view older than the current version reads the version
it saw, under the owner's lock.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from cortex_agents.memory._columns import NEVER, Column

__all__ = ["Depths", "forward_longest_paths", "longest_paths"]

IntArray = npt.NDArray[np.int64]


class Depths:
    """Depth of every node by ordinal, with its versions.

    Changed only by its owner, under the owner's lock; :meth:`at` reads
    versions older than the current one under that lock too.

    Attributes:
        value: The current depth of each node.
        since: The tick each current depth holds from.
        prev_value: The depth before the current one (a node's depth usually
            changes once, when its edges arrive after it was scheduled).
        prev_since: The tick that one held from (:data:`NEVER`: no earlier version).
        history: ``node -> [(tick, depth), ...]``: versions older still, oldest first.
    """

    __slots__ = ("history", "prev_since", "prev_value", "since", "value")

    def __init__(self) -> None:
        self.value = Column()
        self.since = Column()
        self.prev_value = Column()
        self.prev_since = Column()
        self.history: dict[int, list[tuple[int, int]]] = {}

    def add(self, tick: int, depth: int = 0) -> None:
        """The next node, of depth ``depth`` from ``tick`` on."""
        self.value.append(depth)
        self.since.append(tick)
        self.prev_value.append(0)
        self.prev_since.append(NEVER)

    def extend(self, ticks: npt.NDArray[np.int64]) -> None:
        """The next nodes, one per tick, each of depth 0 from its tick on (:meth:`add`, at once)."""
        self.value.pad(len(self.value) + len(ticks), 0)
        self.since.extend(ticks)
        self.prev_value.pad(len(self.prev_value) + len(ticks), 0)
        self.prev_since.pad(len(self.prev_since) + len(ticks), NEVER)

    def set(self, i: int, depth: int, tick: int) -> None:
        """Node ``i`` has depth ``depth`` from ``tick`` (>= every tick so far) on."""
        if self.value.data[i] == depth:
            return
        if self.since.data[i] != tick:  # the current version becomes the previous one
            if self.prev_since.data[i] != NEVER:
                older = (int(self.prev_since.data[i]), int(self.prev_value.data[i]))
                self.history.setdefault(i, []).append(older)
            self.prev_value.data[i] = self.value.data[i]
            self.prev_since.data[i] = self.since.data[i]
            self.since.data[i] = tick
        self.value.data[i] = depth  # (changed again within one event: only the value moves)

    def at(self, nodes: IntArray, length: int) -> IntArray:
        """The depth of each node as of the first ``length`` events (the owner's lock held)."""
        depth = self.value.data[nodes]
        stale = np.flatnonzero(self.since.data[nodes] >= length)
        if not len(stale):
            return depth
        older = nodes[stale]
        previous = self.prev_since.data[older] < length
        depth[stale[previous]] = self.prev_value.data[older[previous]]
        for j in stale[~previous].tolist():
            versions = self.history[int(nodes[j])]
            k = bisect_right(versions, (length - 1, np.iinfo(np.int64).max)) - 1
            depth[j] = versions[k][1]
        return depth

    def update(
        self,
        start: int,
        tick: int,
        predecessors: Callable[[int], Iterable[int]],
        successors: Callable[[int], Iterable[int]],
    ) -> None:
        """Recompute the depth of ``start`` from its predecessors, then of what its change reaches."""
        pending = deque([start])
        while pending:
            node = pending.popleft()
            depth = self.value.data
            new = max((int(depth[p]) + 1 for p in predecessors(node)), default=0)
            if new != depth[node]:
                self.set(node, new, tick)
                pending.extend(successors(node))

    def deepen(
        self, start: int, depth: int, tick: int, successors: Callable[[int], Iterable[int]]
    ) -> None:
        """A new edge into ``start``: its depth becomes at least ``depth``, and what it reaches follows.

        Adding an edge only ever deepens, so the new depth is a maximum of two
        values — never a pass over every predecessor, which made a node of
        in-degree *d* cost O(*d*) per edge (O(*d*²) to build). Each node the
        change reaches is visited with the depth it must reach.
        """
        pending = deque([(start, depth)])
        while pending:
            node, at_least = pending.popleft()
            if self.value.data[node] >= at_least:
                continue
            self.set(node, at_least, tick)
            pending.extend((nxt, at_least + 1) for nxt in successors(node))

    def fork(self, n: int, length: int) -> Depths:
        """The depths of the first ``n`` nodes as of ``length`` events, for a forked index."""
        other = Depths()
        for name in self.__slots__[1:]:
            setattr(other, name, getattr(self, name).copy(n))
        other.history = {i: list(v) for i, v in self.history.items() if i < n}
        for i in np.flatnonzero(other.since.data[:n] >= length).tolist():
            versions = [*other.history.pop(i, [])]
            if other.prev_since.data[i] != NEVER:
                versions.append((int(other.prev_since.data[i]), int(other.prev_value.data[i])))
            versions.append((int(other.since.data[i]), int(other.value.data[i])))
            kept = [v for v in versions if v[0] < length]
            other.since.data[i], other.value.data[i] = kept[-1]
            other.prev_since.data[i], other.prev_value.data[i] = (
                kept[-2] if len(kept) > 1 else (NEVER, 0)
            )
            if len(kept) > 2:
                other.history[i] = kept[:-2]
        return other


def longest_paths(successors: list[list[int]]) -> tuple[list[int], list[int]]:
    """Depth of every node of a graph given as successor lists (Kahn's algorithm).

    Returns the depths and the nodes that could not be ordered (on or below
    a cycle; empty for a DAG).
    """
    indegree = [0] * len(successors)
    for targets in successors:
        for v in targets:
            indegree[v] += 1
    depth = [0] * len(successors)
    ready = [i for i, degree in enumerate(indegree) if degree == 0]
    while ready:
        u = ready.pop()
        step = depth[u] + 1
        for v in successors[u]:
            if depth[v] < step:
                depth[v] = step
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return depth, [i for i, degree in enumerate(indegree) if degree > 0]


def forward_longest_paths(src: IntArray, dst: IntArray, n: int) -> list[int] | None:
    """Depth of every node when every edge goes from a lower ordinal to a higher one, else ``None``.

    Nodes numbered in an order their edges follow — a run's scheduling order,
    a snapshot of one — are already topologically sorted: one pass over the
    edges sorted by target, O(E) with one sort in numpy and no queue.
    """
    if not len(src):
        return [0] * n
    if not bool((src < dst).all()):
        return None
    by_target = np.argsort(dst, kind="stable")
    depth = [0] * n
    for u, v in zip(src[by_target].tolist(), dst[by_target].tolist(), strict=True):
        step = depth[u] + 1
        if step > depth[v]:
            depth[v] = step
    return depth
