"""The graph axis: DAG random-walk influence, in one topological pass.

``infl(origin) = 1`` and ``infl(v) = sum over predecessors u of
alpha * infl(u) / outdeg(u)``, predecessors and out-degree taken in the
relation (the transposed graph for ancestors). On a DAG this is the exact
probability that a walk from the origin, continuing with probability
``alpha`` along a uniformly chosen out-edge, visits ``v``; it is in [0, 1].

Floating-point addition is not associative, so the order of the sum is part
of the definition: a node's predecessors are added in ascending position of
a topological order. The memory pipeline uses the graph's *canonical order*
— nodes sorted by (depth, node id by code point), depth being the longest
path from a source of the graph (:func:`canonical_order` of the forward
relation):

* ``descendants`` (the graph itself): that order, ascending;
* ``ancestors`` (the transposed graph): that order reversed — (depth, id)
  descending, a topological order of the transposed graph.

Neither depends on the order nodes and edges were given in, and the
vectorised engine's triangular solve adds in exactly that order, so both
engines produce identical floats. A node's depth depends only on its own
ancestors, so the order of an origin's ancestor cone — and the bits of its
ancestor influence — never change as nodes are appended to a run (DESIGN §9);
the memory index keeps depths as the run grows, so it never sorts the graph.

(Until the incremental index, ancestors were summed in the transposed
relation's own canonical order, (longest path to a sink, id): appending a
node changed that for every node above it, so the last bits of ancestor
influence could change as a run grew. Descendant influence is summed exactly
as before.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cortex_agents.errors import CycleError, UnknownNode
from cortex_agents.substrate._records import NodeId

__all__ = [
    "DEFAULT_ALPHA",
    "Relation",
    "canonical_order",
    "dag_random_walk_influence",
    "find_cycle",
    "levels",
]

DEFAULT_ALPHA = 0.85

Relation = Mapping[NodeId, Sequence[NodeId]]
"""Every node id mapped to its successors: the graph, or the graph transposed."""


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
    relation: Relation,
    origin: str,
    alpha: float = DEFAULT_ALPHA,
    *,
    order: Sequence[NodeId] | None = None,
) -> dict[NodeId, float]:
    """Influence of ``origin`` on every node of ``relation`` (0 outside its cone).

    Args:
        relation: Successors of every node (every node must be a key).
        origin: Where the walk starts.
        alpha: Continuation probability of the walk, in [0, 1].
        order: The summation order: every node, in a topological order of
            ``relation``. Default: :func:`canonical_order` of ``relation``.
            The memory pipeline passes the graph's canonical order, reversed
            for the transposed graph (see the module docstring).

    Raises:
        CycleError: the relation has a cycle (never a silent empty map).
        UnknownNode: ``origin`` is not a node of the relation.
    """
    if origin not in relation:
        raise UnknownNode(origin)
    canonical = canonical_order(relation)  # a cyclic relation is an error, wherever the cycle is
    order = canonical if order is None else order
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
