"""Random but valid substrate runs, for property tests of the fold and the branch view.

:func:`next_event` picks one event that may follow a state — scheduling,
edges added and removed (into pending work), retirements, starts, completions,
failures and retries, tool calls, rewrite decisions (admitted, rejected) and
their application — so a run built from it exercises every handler.
"""

from __future__ import annotations

import random
from datetime import timedelta

from cortex_agents.substrate import (
    REJECTION_CODES,
    EdgeAdded,
    EdgeRemoved,
    Event,
    GraphState,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteFact,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
    fold,
)
from tests.support.helpers import T0

KINDS = ("planner", "analyst", "merge", "reviewer")


def next_event(state: GraphState, rng: random.Random, tick: int) -> Event:
    """One event that can follow ``state`` (chosen at random among the possible moves)."""
    at = T0 + timedelta(seconds=tick)
    nodes = list(state.nodes.values())
    live = [n.id for n in nodes if n.status != "retired"]
    moves = ["schedule"] * 3
    if len(live) >= 2:
        moves += ["edge"] * 4
    if any(n.status in ("pending", "failed") for n in nodes):
        moves += ["start"] * 3
    if any(n.status == "running" for n in nodes):
        moves += ["settle"] * 4
    if any(state.predecessors(n.id) for n in nodes if n.status == "pending"):
        moves += ["unlink"] * 2
    if any(
        n.status == "pending" and not state.predecessors(n.id) and not state.successors(n.id)
        for n in nodes
    ):
        moves.append("retire")
    if nodes:
        moves += ["tool", "decide"]
    if state.last_rewrite_id > state.watermark:
        moves += ["apply"] * 3
    if state.budget is None:
        moves.append("budget")
    move = rng.choice(moves)
    if move == "schedule":
        return NodeScheduled(
            node_id=f"n{len(nodes):03d}",
            kind=rng.choice(KINDS),
            at=at,
            tags=("t",) * rng.randint(0, 1),
        )
    if move == "edge":
        order = {node_id: i for i, node_id in enumerate(state.nodes)}
        pairs = [
            (u, v)
            for u in live
            for v in live
            if order[u] < order[v] and v not in state.successors(u)
        ]
        if pairs:  # edges only point forward in scheduling order: never a cycle
            u, v = rng.choice(pairs)
            return EdgeAdded(source=u, target=v, at=at)
        return NodeScheduled(node_id=f"n{len(nodes):03d}", kind="planner", at=at)
    if move == "start":
        node = rng.choice([n for n in nodes if n.status in ("pending", "failed")])
        return StageStarted(node_id=node.id, at=at, frontier=state.seq)
    if move == "settle":
        node = rng.choice([n for n in nodes if n.status == "running"])
        if rng.random() < 0.3:
            return StageFailed(node_id=node.id, at=at, error="boom")
        return StageCompleted(node_id=node.id, at=at, output={"text": f"{node.id} at {tick}"})
    if move == "unlink":
        target = rng.choice(
            [n.id for n in nodes if n.status == "pending" and state.predecessors(n.id)]
        )
        return EdgeRemoved(source=rng.choice(state.predecessors(target)), target=target, at=at)
    if move == "retire":
        lonely = [
            n.id
            for n in nodes
            if n.status == "pending" and not state.predecessors(n.id) and not state.successors(n.id)
        ]
        return NodeRetired(node_id=rng.choice(lonely), at=at)
    if move == "tool":
        return ToolCallMade(
            node_id=rng.choice(nodes).id,
            tool="cortex_memory_query",
            call_id=f"c{tick}",
            arguments={"query_text": "bias", "limit": rng.randint(1, 5)},
            at=at,
            result={"status": "success", "total": tick},
        )
    if move == "apply":
        return RewriteApplied(rewrite_id=state.watermark + 1, at=at)
    if move == "budget":
        return RewriteBudgetSet(budget={"nodes": 16, "edges": 32}, at=at)
    proposer = rng.choice(nodes).id
    key = f"{proposer}#1:k{tick}"
    if rng.random() < 0.5:
        fact = RewriteFact(
            rewrite_id=state.last_rewrite_id + 1,
            proposer=proposer,
            proposal={"op": "append_after", "anchor": proposer},
            decision="admitted",
            cost={"nodes": 1},
            key=key,
        )
        return RewriteAdmitted(fact=fact, at=at)
    fact = RewriteFact(
        rewrite_id=None,
        proposer=proposer,
        proposal={"op": "?"},
        decision="rejected",
        code=rng.choice(REJECTION_CODES),
        reason="no",
        key=key,
    )
    return RewriteRejected(fact=fact, at=at)


def random_run(rng: random.Random, length: int, state: GraphState | None = None) -> list[Event]:
    """``length`` events, each valid after the ones before it (starting from ``state``)."""
    state = state if state is not None else fold([])
    events: list[Event] = []
    for tick in range(state.seq, state.seq + length):
        event = next_event(state, rng, tick)
        state = fold([event], state)
        events.append(event)
    return events
