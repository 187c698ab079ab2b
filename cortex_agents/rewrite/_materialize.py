"""Materialization: the substrate events that put an admitted rewrite into the graph.

Derived from the fact's recorded diff alone, so what is applied is exactly
what was admitted and recorded. The events — edges reattached away, new
nodes, new edges, the retired anchor, then ``rewrite_applied`` moving the
watermark — are written in one commit; resume finishes any admitted
rewrite beyond the watermark before scheduling (:func:`pending_materialization`).
"""

from __future__ import annotations

from datetime import datetime

from cortex_agents.errors import InvalidArgument
from cortex_agents.rewrite._algebra import RewriteDiff
from cortex_agents.substrate._events import (
    EdgeAdded,
    EdgeRemoved,
    Event,
    NodeRetired,
    NodeScheduled,
    RewriteApplied,
)
from cortex_agents.substrate._records import NodeId, RewriteFact
from cortex_agents.substrate._state import GraphState

__all__ = ["materialize", "pending_materialization"]


def materialize(fact: RewriteFact, at: datetime) -> list[Event]:
    """The events that apply one admitted rewrite.

    Raises:
        InvalidArgument: (a ``ValueError``) the fact was not admitted.
    """
    if fact.decision != "admitted" or fact.rewrite_id is None:
        raise InvalidArgument(
            "fact.decision",
            "must be 'admitted' (only an admitted rewrite materializes)",
            fact.decision,
        )
    diff = RewriteDiff.from_dict(fact.diff)
    tag = f"rewrite-{fact.rewrite_id}"
    # The order is the fold's: a node retires only once its edges are gone, an edge
    # needs both ends scheduled, and `rewrite_applied` checks the diff's nodes exist;
    # so removals, then nodes, then edges, then the retirement, then the watermark.
    events: list[Event] = [
        EdgeRemoved(source=NodeId(s), target=NodeId(t), at=at) for s, t in diff.edges_removed
    ]
    events += [
        NodeScheduled(
            node_id=NodeId(n["id"]), kind=n["kind"], at=at, config=dict(n["config"]), tags=(tag,)
        )
        for n in diff.nodes
    ]
    events += [EdgeAdded(source=NodeId(s), target=NodeId(t), at=at) for s, t in diff.edges_added]
    events += [NodeRetired(node_id=NodeId(n), at=at) for n in diff.retired]
    events.append(RewriteApplied(rewrite_id=fact.rewrite_id, at=at))
    return events


def pending_materialization(state: GraphState, at: datetime) -> list[Event]:
    """The events that apply every admitted rewrite beyond the watermark, in ``rewrite_id`` order."""
    events: list[Event] = []
    for fact in state.unapplied_rewrites:
        events += materialize(fact, at)
    return events
