"""Each node's depth — the longest path to it from a source — kept as the graph changes.

Depth orders the influence pass (:mod:`cortex_agents.memory.influence`):
(depth, id) is a topological order of the graph, and its reverse one of the
transposed graph. The memory index keeps every node's depth as edges arrive
and leave: a new edge ``u -> v`` can deepen ``v`` and what lies below it; a
removed one (rewrites remove edges into pending work only) can make them
shallower. In a workflow a node's edges arrive right after it is scheduled,
before anything depends on it, so nothing below it needs updating.

**Versions.** A view of the index as of ``L`` events must read depths as
they were then. Each node keeps the tick its current depth holds from; a
node whose depth changed keeps its earlier ``(tick, depth)`` versions, and a
view older than the current one reads from them. Writes go in the order
history, tick, value, and a reader reads value before tick, so a reader
without the lock sees either a current value it may use or a tick that sends
it to the history.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from cortex_agents.memory.columns import Column

__all__ = ["Depths", "longest_paths"]

IntArray = npt.NDArray[np.int64]


class Depths:
    """Depth of every node by ordinal, with its versions.

    Changed only by its owner, under the owner's lock.

    Attributes:
        value: The current depth of each node.
        since: The tick each current depth holds from.
        history: ``node -> [(tick, depth), ...]`` for nodes whose depth changed
            (every version, oldest first, the current one last).
    """

    __slots__ = ("history", "since", "value")

    def __init__(self) -> None:
        self.value = Column()
        self.since = Column()
        self.history: dict[int, list[tuple[int, int]]] = {}

    def add(self, tick: int, depth: int = 0) -> None:
        """The next node, of depth ``depth`` from ``tick`` on."""
        self.value.append(depth)
        self.since.append(tick)

    def set(self, i: int, depth: int, tick: int) -> None:
        """Node ``i`` has depth ``depth`` from ``tick`` (>= every tick so far) on."""
        old = int(self.value.data[i])
        if old == depth:
            return
        versions = self.history.get(i)
        if versions is None:
            versions = self.history[i] = [(int(self.since.data[i]), old)]
        if versions[-1][0] == tick:  # changed again within the same event
            versions[-1] = (tick, depth)
        else:
            versions.append((tick, depth))
        self.since.data[i] = tick
        self.value.data[i] = depth

    def at(self, nodes: IntArray, length: int) -> IntArray:
        """The depth of each node as of the first ``length`` events."""
        depth = self.value.data[nodes]  # value before tick: see the module docstring
        stale = np.flatnonzero(self.since.data[nodes] >= length)
        for j in stale.tolist():
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
        depth = self.value.data
        pending = deque([start])
        while pending:
            node = pending.popleft()
            new = max((int(depth[p]) + 1 for p in predecessors(node)), default=0)
            if new != depth[node]:
                self.set(node, new, tick)
                depth = self.value.data
                pending.extend(successors(node))

    def fork(self, n: int, length: int) -> Depths:
        """The depths of the first ``n`` nodes as of ``length`` events, for a forked index."""
        other = Depths()
        other.value = self.value.copy(n)
        other.since = self.since.copy(n)
        for i, versions in self.history.items():
            if i >= n:
                continue
            kept = [v for v in versions if v[0] < length]
            other.value.data[i], other.since.data[i] = kept[-1][1], kept[-1][0]
            if len(kept) > 1:
                other.history[i] = kept
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
