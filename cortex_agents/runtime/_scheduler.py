"""The frontier scheduler, pure: which stages are ready, given the substrate.

A stage is ready when it is ``pending`` and every predecessor is
``completed``. Scheduling reads only the materialized substrate — never a
compiled-in edge list — so nodes added to the substrate at run time (admitted
rewrites) are scheduled like the wire's own.

Incremental: after a pass at ``seq``, the next pass looks only at what the
new events touched — successors of newly settled nodes and newly scheduled
nodes — so a pass costs O(new events), not O(graph).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from cortex_agents.runtime._wire import Wire
from cortex_agents.substrate._bounds import MAX_ATTEMPTS
from cortex_agents.substrate._events import (
    EdgeAdded,
    EdgeRemoved,
    Event,
    NodeScheduled,
    RewriteBudgetSet,
    StageCompleted,
    StageFailed,
)
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState

__all__ = ["Frontier", "is_ready", "next_frontier", "wire_events"]


def wire_events(wire: Wire, state: GraphState, at: datetime) -> list[Event]:
    """Events that put the wire's stages and edges into the substrate (those not there yet),
    and — when the wire has rewrite-capable stages — fix the run's rewrite budget."""
    events: list[Event] = []
    if wire.rewrites and state.budget is None:
        events.append(RewriteBudgetSet(budget=wire.budget.as_dict(), at=at))
    for stage_id in wire.order():
        if stage_id not in state.nodes:
            spec = wire.stage(stage_id)
            events.append(
                NodeScheduled(
                    node_id=stage_id,
                    kind=spec.kind,
                    at=at,
                    config=dict(spec.config),
                    tags=spec.tags,
                )
            )
    present = {(e.source, e.target) for e in state.edges} if len(state.edges) else set()
    # admitted rewrites own the topology they changed: never put back what they took out
    present |= {
        (source, target)
        for fact in state.admitted_rewrites
        for source, target in fact.diff.get("edges_removed", ())
    }
    retired = {n for fact in state.admitted_rewrites for n in fact.diff.get("retired", ())}
    for source, target in sorted(wire.edges, key=_edge_key(wire)):
        if (source, target) not in present and source not in retired and target not in retired:
            events.append(EdgeAdded(source=NodeId(source), target=NodeId(target), at=at))
    return events


def _edge_key(wire: Wire) -> Callable[[tuple[str, str]], tuple[int, int]]:
    position: dict[str, int] = {stage_id: i for i, stage_id in enumerate(wire.order())}
    return lambda edge: (position[edge[0]], position[edge[1]])


@dataclass(frozen=True, slots=True)
class Frontier:
    """The outcome of one scheduling pass.

    Attributes:
        ready: Stages to run now, by node id.
        failed: Failed stages (all of them after a full pass, the new ones
            otherwise; none when failed stages are being retried).
    """

    ready: tuple[NodeId, ...]
    failed: tuple[NodeId, ...]


def is_ready(state: GraphState, node_id: NodeId, *, retry: bool) -> bool:
    """Whether a node may run now: pending (or failed, when retrying), every predecessor completed."""
    node = state.nodes[node_id]
    allowed = ("pending", "failed") if retry else ("pending",)
    if node.status not in allowed or node.attempts >= MAX_ATTEMPTS:
        return False  # (a stage started MAX_ATTEMPTS times stays failed: the bound of attempts)
    return all(state.nodes[pred].status == "completed" for pred in state.predecessors(node_id))


def next_frontier(log: SubstrateLog, *, since: int | None, retry_failed: bool = False) -> Frontier:
    """The ready stages of ``log``'s substrate.

    Args:
        log: The substrate now.
        since: The log length at the previous pass; ``None`` scans everything.
        retry_failed: Count failed stages as ready again (a new invocation).
    """
    state = log.state
    if since is None:
        candidates: Iterable[NodeId] = state.nodes
        failed = [n for n, node in state.nodes.items() if node.status == "failed"]
    else:
        touched: dict[NodeId, None] = {}
        failed = []
        for event in log.since(since):
            if isinstance(event, StageCompleted):
                touched.update(dict.fromkeys(state.successors(event.node_id)))
            elif isinstance(event, NodeScheduled | EdgeAdded | EdgeRemoved):
                touched[event.node_id if isinstance(event, NodeScheduled) else event.target] = None
            elif isinstance(event, StageFailed):
                failed.append(event.node_id)
        candidates = touched
    # By node id, not scan order: a stage's index here is its position in the frontier,
    # which LogicalClock.for_stage turns into its times.
    ready = sorted(n for n in candidates if is_ready(state, n, retry=retry_failed))
    still_failed = [] if retry_failed else sorted(set(failed))
    return Frontier(ready=tuple(ready), failed=tuple(still_failed))
