"""The rewrite budget: five dimensions, and the static cost of a rewrite on each.

Cost is computed from the proposal and the anchor's neighbourhood before
anything runs:

* ``nodes`` — local nodes added;
* ``edges`` — edges added: the local ones plus the reattachment edges that
  wire the entry and exit sets in (removed edges refund nothing);
* ``depth`` — the longest local path, in nodes: how much deeper the graph
  gets below the anchor;
* ``breadth`` — the frontier-breadth delta: the widest level of the local
  subgraph (levels by longest path from its sources) minus the one slot it
  takes in the chain;
* ``operations`` — one per admitted rewrite.

A run's remaining budget is what it was granted minus what its admitted
rewrites cost; admission takes all of a cost or none of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "DEFAULT_BUDGET",
    "DIMENSIONS",
    "budget_problems",
    "exceeded",
    "local_shape",
    "remaining",
    "subtract",
    "unknown_dimension_rule",
]

DIMENSIONS: Final = ("nodes", "edges", "depth", "breadth", "operations")
DEFAULT_BUDGET: Final[Mapping[str, int]] = {
    "nodes": 16,
    "edges": 32,
    "depth": 6,
    "breadth": 4,
    "operations": 4,
}


def unknown_dimension_rule() -> str:
    """The rule an unknown budget dimension breaks (one wording at every door)."""
    return f"is not a rewrite budget dimension; the dimensions are {', '.join(DIMENSIONS)}"


def budget_problems(budget: Any, where: str = "rewrite_budget") -> list[tuple[str, str]]:
    """``(location, rule)`` of everything wrong with a granted budget, as it enters a run or a file.

    A budget maps some of the five :data:`DIMENSIONS` to integers >= 0; an
    unknown dimension would be carried along and then make every proposal of
    the run fail admission, so it is refused where it enters.
    """
    if not isinstance(budget, Mapping):
        return [(where, "must map budget dimensions to integers >= 0")]
    problems = []
    for dimension, amount in budget.items():
        if dimension not in DIMENSIONS:
            # The key is untrusted (a wire file, a model's arguments): a non-string or a
            # long one would make the error location unreadable, so it is elided.
            shown = dimension if isinstance(dimension, str) and len(dimension) <= 40 else "..."
            problems.append((f"{where}.{shown}", unknown_dimension_rule()))
        elif isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            problems.append((f"{where}.{dimension}", f"must be an integer >= 0 (got {amount!r})"))
    return problems


def remaining(granted: Mapping[str, int], spent: Mapping[str, int]) -> dict[str, int]:
    """What is left of ``granted`` after ``spent``, per dimension (never below zero)."""
    # Clamped: a budget granted lower than what earlier rewrites already spent leaves
    # nothing, rather than a negative amount that would read as debt.
    return {d: max(0, granted.get(d, 0) - spent.get(d, 0)) for d in DIMENSIONS}


def subtract(budget: Mapping[str, int], cost: Mapping[str, int]) -> dict[str, int]:
    """``budget - cost`` per dimension (the caller checked that it fits)."""
    return {d: budget.get(d, 0) - cost.get(d, 0) for d in DIMENSIONS}


def exceeded(cost: Mapping[str, int], budget: Mapping[str, int]) -> list[str]:
    """The dimensions on which ``cost`` does not fit in ``budget``, in dimension order."""
    return [d for d in DIMENSIONS if cost.get(d, 0) > budget.get(d, 0)]


def local_shape(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """``(depth, widest level)`` of an acyclic local subgraph.

    A node's level is the length of the longest path reaching it from a
    local source (sources are level 0); depth is the number of levels.
    """
    preds: dict[str, list[str]] = {n: [] for n in nodes}
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in edges:
        preds[target].append(source)
        succs[source].append(target)
    indegree = {n: len(preds[n]) for n in nodes}
    level = dict.fromkeys(nodes, 0)
    # Kahn's order: a node is popped only after all its predecessors, so its level
    # is final; which ready node goes first does not change any level.
    ready = [n for n in nodes if indegree[n] == 0]
    while ready:
        node = ready.pop()
        for nxt in succs[node]:
            level[nxt] = max(level[nxt], level[node] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    widths: dict[int, int] = {}
    for value in level.values():
        widths[value] = widths.get(value, 0) + 1
    return (max(level.values()) + 1 if level else 0), max(widths.values(), default=0)
