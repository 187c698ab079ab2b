"""Listing helpers over a materialized graph state (seed 004's query helpers).

Every listing has an explicit, total order, so two calls on the same state
always agree, whatever order events arrived in. Node ids compare by code
point. All are pure functions of a :class:`GraphState`.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Literal

from cortex_agents._timestamps import require_aware
from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._records import NodeId, NodeRecord
from cortex_agents.substrate._state import GraphState

__all__ = ["DEFAULT_LINEAGE_DEPTH", "by_tag", "lineage", "neighbors", "recent", "since"]

DEFAULT_LINEAGE_DEPTH = 20


def lineage(
    state: GraphState, node_id: str, *, max_depth: int = DEFAULT_LINEAGE_DEPTH
) -> tuple[tuple[NodeId, int], ...]:
    """Ancestors of ``node_id`` by BFS, at most ``max_depth`` edges up.

    Returns ``(ancestor, depth)`` pairs ordered by ``(depth, node id)``; the
    node itself is not included.

    Raises:
        UnknownNode: no such node.
        InvalidArgument: ``max_depth`` is not an integer >= 1.
    """
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise InvalidArgument("max_depth", "must be an integer >= 1", max_depth)
    state.node(node_id)
    depth = {node_id: 0}
    queue = deque([node_id])
    while queue:
        current = queue.popleft()
        if depth[current] == max_depth:
            continue
        for parent in state.predecessors(current):
            if parent not in depth:
                depth[parent] = depth[current] + 1
                queue.append(parent)
    del depth[node_id]
    return tuple(sorted(((NodeId(n), d) for n, d in depth.items()), key=lambda p: (p[1], p[0])))


def neighbors(
    state: GraphState, node_id: str, direction: Literal["upstream", "downstream", "both"] = "both"
) -> tuple[NodeId, ...]:
    """Direct neighbors of ``node_id``, sorted by id.

    Raises:
        UnknownNode: no such node.
        InvalidArgument: ``direction`` is not upstream, downstream or both.
    """
    if direction not in ("upstream", "downstream", "both"):
        raise InvalidArgument("direction", "must be 'upstream', 'downstream' or 'both'", direction)
    found: set[NodeId] = set()
    if direction in ("upstream", "both"):
        found.update(state.predecessors(node_id))
    if direction in ("downstream", "both"):
        found.update(state.successors(node_id))
    return tuple(sorted(found))


def _settled(state: GraphState, kind: str | None) -> list[NodeRecord]:
    return [n for n in state.nodes.values() if n.settled and (kind is None or n.kind == kind)]


def _completed_at(node: NodeRecord) -> datetime:
    """A settled node's completion time (the fold sets it with the settled status)."""
    if node.completed_at is None:  # pragma: no cover  (a settled node always has one)
        raise InvalidArgument(f"nodes[{node.id!r}].completed_at", "must be set on a settled node")
    return node.completed_at


def recent(state: GraphState, limit: int, *, kind: str | None = None) -> tuple[NodeRecord, ...]:
    """The ``limit`` most recently settled nodes, newest first (ties by id).

    Raises:
        InvalidArgument: ``limit`` is not an integer >= 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument("limit", "must be an integer >= 1", limit)
    nodes = sorted(_settled(state, kind), key=lambda n: n.id)
    nodes.sort(key=_completed_at, reverse=True)  # stable: ties stay in id order
    return tuple(nodes[:limit])


def since(
    state: GraphState, timestamp: datetime, *, kind: str | None = None
) -> tuple[NodeRecord, ...]:
    """Nodes settled at or after ``timestamp``, oldest first (ties by id).

    Raises:
        InvalidArgument: ``timestamp`` is not a timezone-aware datetime.
    """
    start = require_aware(timestamp, "timestamp")
    nodes = [n for n in _settled(state, kind) if _completed_at(n) >= start]
    return tuple(sorted(nodes, key=lambda n: (_completed_at(n), n.id)))


def by_tag(state: GraphState, tag: str) -> tuple[NodeRecord, ...]:
    """Nodes of any status carrying ``tag``, in scheduling time order (ties by id)."""
    nodes = [n for n in state.nodes.values() if tag in n.tags]
    return tuple(sorted(nodes, key=lambda n: (n.captured_at, n.id)))
