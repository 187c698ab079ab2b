"""Builders for the rewrite tests: graphs in a given state, proposals written the way a model would."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from cortex_agents.rewrite import DEFAULT_BUDGET, RewritePolicy
from cortex_agents.runtime import RewriteSession
from cortex_agents.substrate import (
    EdgeAdded,
    Event,
    GraphState,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    fold,
)
from tests.support.helpers import at

VOCABULARY: Mapping[str, Mapping[str, Any]] = {
    "analyst": {"claim_ref": "c0"},
    "reviewer": {},
    "step": {},
}

# planner -> analyst-a, analyst-b -> merge -> reviewer -> rewriter -> publish
CLAIM_EDGES = [
    ("planner", "analyst-a"),
    ("planner", "analyst-b"),
    ("analyst-a", "merge"),
    ("analyst-b", "merge"),
    ("merge", "reviewer"),
    ("reviewer", "rewriter"),
    ("rewriter", "publish"),
]
SETTLED = ("planner", "analyst-a", "analyst-b", "merge")


def graph(
    edges: Iterable[tuple[str, str]] = CLAIM_EDGES,
    *,
    completed: Sequence[str] = SETTLED,
    kind: str = "step",
) -> GraphState:
    """A graph whose nodes are pending except ``completed`` (completed in the order given)."""
    edges = list(edges)
    ids = list(dict.fromkeys(n for pair in edges for n in pair))
    events: list[Event] = [NodeScheduled(node_id=n, kind=kind, at=at(0)) for n in ids]
    events += [EdgeAdded(source=s, target=t, at=at(0)) for s, t in edges]
    for i, n in enumerate(completed):
        events += [
            StageStarted(node_id=n, at=at(i + 1)),
            StageCompleted(node_id=n, at=at(i + 1), output={"id": n}),
        ]
    return fold(events)


def proposal(
    anchor: str,
    nodes: Sequence[str] | Sequence[tuple[str, str]] = ("x",),
    *,
    op: str = "append_after",
    mode: str | None = None,
    edges: Sequence[tuple[str, str]] | None = None,
    entry: Sequence[str] | None = None,
    exit: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A proposal's JSON form; nodes are ids (kind ``step``) or ``(id, kind)``; default: a chain."""
    pairs = [(n, "step") if isinstance(n, str) else n for n in nodes]
    ids = [n for n, _ in pairs]
    chain = list(pairwise(ids))
    out: dict[str, Any] = {
        "op": op,
        "anchor": anchor,
        "spec": {
            "nodes": [{"id": n, "kind": k} for n, k in pairs],
            "edges": [list(e) for e in (chain if edges is None else edges)],
            "entry": list(ids[:1] if entry is None else entry),
            "exit": list(ids[-1:] if exit is None else exit),
        },
    }
    if mode is not None:
        out["mode"] = mode
    return out


def session(
    state: GraphState,
    proposer: str = "rewriter",
    *,
    policy: RewritePolicy | None = None,
    granted: Mapping[str, int] = DEFAULT_BUDGET,
    journal: list[Event] | None = None,
) -> RewriteSession:
    """A rewrite session for ``proposer`` over ``state``; decisions go to ``journal``."""
    sink = journal if journal is not None else []
    ticks = iter(range(10_000))
    return RewriteSession(
        proposer=proposer,
        state=state,
        policy=policy or RewritePolicy(),
        vocabulary=VOCABULARY,
        granted=granted,
        attempt=1,
        clock=lambda: at(100 + next(ticks) / 1000),
        record=sink.append,
    )
