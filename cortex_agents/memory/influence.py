"""The graph axis: DAG random-walk influence, in one topological pass.

``infl(origin) = 1`` and ``infl(v) = sum over predecessors u of
alpha * infl(u) / outdeg(u)``, predecessors and out-degree taken in the
relation (the transposed graph for ancestors). On a DAG this is the exact
probability that a walk from the origin, continuing with probability
``alpha`` along a uniformly chosen out-edge, visits ``v``; it is in [0, 1].

Floating-point addition is not associative, so the order of the sum is part
of the definition: predecessors are added in ascending *canonical
topological position* — nodes sorted by (longest path from a source of the
relation, node id by code point). That order does not depend on the order
nodes and edges were given in, and the vectorised engine's triangular solve
adds in exactly that order, so both engines produce identical floats.
"""

from __future__ import annotations

from cortex_agents.errors import CycleError, UnknownNode
from cortex_agents.memory.walk import Relation
from cortex_agents.substrate.records import NodeId

__all__ = [
    "DEFAULT_ALPHA",
    "canonical_order",
    "dag_random_walk_influence",
    "find_cycle",
    "levels",
]

DEFAULT_ALPHA = 0.85


def levels(relation: Relation) -> dict[NodeId, int]:
    """Longest-path distance of every node from a source of the relation.

    Raises:
        CycleError: the relation has a cycle.
    """
    indegree = dict.fromkeys(relation, 0)
    for successors in relation.values():
        for nxt in successors:
            indegree[nxt] += 1
    level = dict.fromkeys(relation, 0)
    ready = [node for node, deg in indegree.items() if deg == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for nxt in relation[node]:
            level[nxt] = max(level[nxt], level[node] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    if done != len(relation):
        raise CycleError(find_cycle(relation, {n for n, d in indegree.items() if d > 0}))
    return level


def canonical_order(relation: Relation) -> list[NodeId]:
    """Nodes sorted by (level, id): a topological order independent of input order.

    Raises:
        CycleError: the relation has a cycle.
    """
    level = levels(relation)
    return sorted(relation, key=lambda node: (level[node], node))


def dag_random_walk_influence(
    relation: Relation, origin: str, alpha: float = DEFAULT_ALPHA
) -> dict[NodeId, float]:
    """Influence of ``origin`` on every node of ``relation`` (0 outside its cone).

    Args:
        relation: Successors of every node (every node must be a key).
        origin: Where the walk starts.
        alpha: Continuation probability of the walk, in [0, 1].

    Raises:
        CycleError: the relation has a cycle (never a silent empty map).
        UnknownNode: ``origin`` is not a node of the relation.
    """
    if origin not in relation:
        raise UnknownNode(origin)
    order = canonical_order(relation)
    position = {node: i for i, node in enumerate(order)}
    predecessors: dict[NodeId, list[NodeId]] = {node: [] for node in relation}
    for node, successors in relation.items():
        for nxt in successors:
            predecessors[nxt].append(node)
    influence: dict[NodeId, float] = {}
    for node in order:
        if node == origin:
            influence[node] = 1.0
            continue
        total = 0.0
        for pred in sorted(predecessors[node], key=position.__getitem__):
            total += (alpha / len(relation[pred])) * influence[pred]
        influence[node] = total
    return influence


def find_cycle(relation: Relation, stuck: set[NodeId]) -> list[NodeId]:
    """One cycle among the nodes Kahn's algorithm could not order, from its smallest id, repeated.

    Every stuck node has a stuck predecessor, so walking predecessors inside
    the stuck set must revisit a node; the revisited stretch, reversed, is a
    cycle of the relation.
    """
    stuck_preds: dict[NodeId, list[NodeId]] = {node: [] for node in stuck}
    for node in stuck:
        for nxt in relation[node]:
            if nxt in stuck:
                stuck_preds[nxt].append(node)
    path: list[NodeId] = []
    seen: dict[NodeId, int] = {}
    node = min(stuck)
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min(stuck_preds[node])
    cycle = path[seen[node] :][::-1]
    start = cycle.index(min(cycle))
    cycle = cycle[start:] + cycle[:start]
    return [*cycle, cycle[0]]
