"""Integrity of a snapshot graph: cycles, states that cannot follow from a run, rewrite history.

A run can only produce some graphs: edges form a DAG; a stage starts only
after every input completed; a retired node has no edges; admitted rewrites
have dense ids, a proposal, and a diff whose nodes exist. These checks read
rows that already passed their own format checks and say, per row, what is
wrong, so that strict reading can report it and forensic reading can leave
exactly that row out. Every check is linear in the size of the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from cortex_agents.substrate._records import REJECTION_CODES, NodeRecord, RewriteFact

__all__ = ["Category", "IndexedEdge", "back_edges", "edge_state_problem", "rewrite_problem"]

Category = Literal["invalid", "duplicate", "dangling", "cycle", "inconsistent", "orphan"]
"""Why a row is not in the graph (or, for ``orphan`` nodes, why it stands alone)."""

_STARTED: Final = frozenset({"running", "completed", "failed"})
_SHOWN: Final = 8  # nodes of a long cycle shown in a message


@dataclass(frozen=True, slots=True)
class IndexedEdge:
    """An edge with its position in the file's ``edges``."""

    index: int
    source: str
    target: str


def _loop(path: Sequence[str]) -> str:
    if len(path) > _SHOWN:
        half = _SHOWN // 2
        path = [*path[:half], f"... ({len(path) - _SHOWN} more)", *path[-half:]]
    return " -> ".join(path)


def back_edges(order: Sequence[str], edges: Sequence[IndexedEdge]) -> dict[int, str]:
    """The edges that close a cycle, each with the cycle it closes (``a -> b -> a``).

    A depth-first search from each node in ``order``, following edges in file
    order, finds them: an edge back to a node on the current path closes a
    cycle, and without those edges the rest is a DAG. O(nodes + edges).
    """
    successors: dict[str, list[IndexedEdge]] = {}
    for edge in edges:
        successors.setdefault(edge.source, []).append(edge)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    found: dict[int, str] = {}
    for root in order:
        if root in state:
            continue
        path: list[str] = [root]
        at: dict[str, int] = {root: 0}
        cursor: list[int] = [0]
        state[root] = 1
        while path:
            node, i = path[-1], cursor[-1]
            outgoing = successors.get(node, ())
            if i == len(outgoing):
                state[node] = 2
                del at[node]
                path.pop()
                cursor.pop()
                continue
            cursor[-1] = i + 1
            edge = outgoing[i]
            seen = state.get(edge.target)
            if seen == 1:
                found[edge.index] = _loop([edge.source, *path[at[edge.target] :]])
            elif seen is None:
                state[edge.target] = 1
                at[edge.target] = len(path)
                path.append(edge.target)
                cursor.append(0)
    return found


def edge_state_problem(edge: IndexedEdge, nodes: Mapping[str, NodeRecord]) -> str | None:
    """What a run could not have produced about this edge, given its endpoints' states."""
    source, target = nodes[edge.source], nodes[edge.target]
    for end in (source, target):
        if end.status == "retired":
            return f"`{end.id}` is retired; a retired node has no edges"
    if target.status in _STARTED and source.status != "completed":
        return (
            f"`{target.id}` is {target.status} but its input `{source.id}` is {source.status}; "
            "a stage starts only after every input completed"
        )
    return None


def _diff_problem(diff: Mapping[str, Any], nodes: Mapping[str, NodeRecord]) -> str | None:
    added = diff.get("nodes", [])
    if not isinstance(added, list) or not all(
        isinstance(n, dict) and isinstance(n.get("id"), str) for n in added
    ):
        return "diff.nodes must be a list of objects with a string `id`"
    for entry in added:
        if entry["id"] not in nodes:
            return f"diff.nodes names {entry['id']!r}, which is not a node"
    retired = diff.get("retired", [])
    if not isinstance(retired, list) or not all(isinstance(r, str) for r in retired):
        return "diff.retired must be a list of node ids"
    for gone in retired:
        if gone not in nodes or nodes[gone].status != "retired":
            return f"diff.retired names {gone!r}, which is not a retired node"
    return None


def rewrite_problem(
    fact: RewriteFact, nodes: Mapping[str, NodeRecord], last_id: int, keys: set[str]
) -> tuple[str, str] | None:
    """``(field, rule)`` a rewrite decision breaks, given the decisions kept before it."""
    if fact.key is not None and fact.key in keys:
        return "key", f"{fact.key!r} was already decided by an earlier rewrite"
    if fact.decision == "admitted":
        if fact.rewrite_id != last_id + 1:
            return (
                "rewrite_id",
                f"must be {last_id + 1}: admitted ids are dense and in order (got {fact.rewrite_id!r})",
            )
        if fact.code is not None:
            return "code", "must be null for an admitted rewrite"
        if not fact.proposal:
            return "proposal", "must not be empty for an admitted rewrite"
        problem = _diff_problem(fact.diff, nodes)
        if problem is not None:
            return "diff", problem
        return None
    if fact.rewrite_id is not None:
        return "rewrite_id", "must be null for a rejected rewrite"
    if fact.code not in REJECTION_CODES:
        return "code", f"a rejected rewrite needs one of {list(REJECTION_CODES)}"
    return None
