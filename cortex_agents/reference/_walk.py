"""Enumeration: which nodes a query may return, and how many hops away they are.

A *relation* (:data:`~cortex_agents.memory._influence.Relation`) maps every
node id to its successors under that relation:
``descendants`` follows edges, ``ancestors`` follows them transposed.
``bidirectional`` walks both relations separately and merges hop distances
by minimum; it never alternates directions within one path, so from ``A``
the shape ``A -> B <- C`` does not reach ``C`` (seed 001, regression 3).
"""

from __future__ import annotations

from collections import deque

from cortex_agents.errors import UnknownNode
from cortex_agents.memory._influence import Relation
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._spec import Direction
from cortex_agents.substrate._records import NodeId

__all__ = ["bfs_distance", "direction_relations", "relations_of", "walk_candidates"]


def relations_of(snapshot: MemorySnapshot) -> tuple[Relation, Relation]:
    """The ``(forward, transposed)`` relations of a snapshot; every node is a key."""
    forward: dict[NodeId, list[NodeId]] = {node_id: [] for node_id in snapshot.nodes}
    backward: dict[NodeId, list[NodeId]] = {node_id: [] for node_id in snapshot.nodes}
    for edge in snapshot.edges:
        forward[edge.source].append(edge.target)
        backward[edge.target].append(edge.source)
    return forward, backward


def direction_relations(snapshot: MemorySnapshot, direction: Direction) -> tuple[Relation, ...]:
    """The relations a direction walks: one, or two for ``bidirectional``."""
    forward, backward = relations_of(snapshot)
    return {
        "ancestors": (backward,),
        "descendants": (forward,),
        "bidirectional": (forward, backward),
    }[direction]


def bfs_distance(relation: Relation, origin: NodeId) -> dict[NodeId, int]:
    """Hop distance from ``origin`` to every node it reaches (``origin`` at 0)."""
    distance = {origin: 0}
    queue = deque([origin])
    while queue:
        node = queue.popleft()
        for nxt in relation[node]:
            if nxt not in distance:
                distance[nxt] = distance[node] + 1
                queue.append(nxt)
    return distance


def walk_candidates(
    snapshot: MemorySnapshot, origin: str, direction: Direction
) -> dict[NodeId, int]:
    """Every node reachable from ``origin`` in ``direction``, with its hop distance.

    Each relation is walked by its own BFS; a node reached in both keeps the
    smaller distance. The origin is never a candidate. Statuses are not
    looked at: scope filtering happens later.

    Raises:
        UnknownNode: ``origin`` is not in the snapshot.
    """
    if origin not in snapshot.nodes:
        raise UnknownNode(origin)
    merged: dict[NodeId, int] = {}
    for relation in direction_relations(snapshot, direction):
        for node, hops in bfs_distance(relation, NodeId(origin)).items():
            # The default is one more than `hops`, so a node's first distance is always kept.
            if node != origin and hops < merged.get(node, hops + 1):
                merged[node] = hops
    return merged
