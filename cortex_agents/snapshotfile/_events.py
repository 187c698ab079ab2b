"""The one canonical event sequence whose fold is a snapshot document's graph.

A snapshot file holds the materialized graph, not the events. Import turns it
back into events: nodes and edges in canonical order, then each node's
lifecycle in time order, then the rewrite decisions. Exporting an imported
thread therefore reproduces the file byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex_agents.memory._influence import canonical_order
from cortex_agents.substrate._events import (
    EdgeAdded,
    Event,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
)
from cortex_agents.substrate._records import NodeId, NodeRecord

if TYPE_CHECKING:
    from cortex_agents.snapshotfile._document import SnapshotDocument

__all__ = ["document_events", "event_count", "lifecycle_length"]


def lifecycle_length(node: NodeRecord) -> int:
    """How many events :func:`_lifecycle` records for ``node`` (without building them)."""
    if node.status == "pending":
        return 0
    if node.status == "retired":
        return 1
    attempts = max(node.attempts, 1)
    return 2 * (attempts - 1) + 1 + (node.status in ("completed", "failed"))


def _lifecycle(node: NodeRecord) -> list[Event]:
    """Start/fail/complete events that leave ``node`` in its recorded status and attempts."""
    if node.status == "pending":
        return []
    at = node.captured_at
    if node.status == "retired":  # never ran; taken out by a rewrite
        return [NodeRetired(node_id=node.id, at=at)]
    attempts = max(node.attempts, 1)
    events: list[Event] = []
    for _ in range(attempts - 1):  # earlier attempts failed (their messages are not kept)
        events += [
            StageStarted(node_id=node.id, at=at),
            StageFailed(node_id=node.id, at=at, error="retried"),
        ]
    events.append(StageStarted(node_id=node.id, at=at))
    if node.status == "completed":
        events.append(
            StageCompleted(node_id=node.id, at=node.completed_at or at, output=node.output)
        )
    elif node.status == "failed":
        events.append(StageFailed(node_id=node.id, at=at, error=node.error or ""))
    return events


def event_count(document: SnapshotDocument) -> int:
    """How many events :func:`document_events` gives for ``document`` (computed in O(rows))."""
    return (
        len(document.nodes)
        + len(document.edges)
        + sum(lifecycle_length(node) for node in document.nodes)
        + (document.rewrite_budget is not None)
        + sum(2 if fact.decision == "admitted" else 1 for fact in document.rewrites)
    )


def document_events(document: SnapshotDocument) -> list[Event]:
    """The canonical event sequence whose fold is ``document``'s graph.

    Raises:
        CycleError: the document's edges are not a DAG.
    """
    relation: dict[NodeId, list[NodeId]] = {node.id: [] for node in document.nodes}
    for edge in document.edges:
        relation[edge.source].append(edge.target)
    position = {node_id: i for i, node_id in enumerate(canonical_order(relation))}
    by_id = {node.id: node for node in document.nodes}
    ordered = [by_id[node_id] for node_id in sorted(position, key=position.__getitem__)]
    events: list[Event] = [
        NodeScheduled(
            node_id=n.id, kind=n.kind, at=n.captured_at, config=dict(n.config), tags=n.tags
        )
        for n in ordered
    ]
    for edge in sorted(document.edges, key=lambda e: (position[e.source], position[e.target])):
        at = max(by_id[edge.source].captured_at, by_id[edge.target].captured_at)
        events.append(EdgeAdded(source=edge.source, target=edge.target, at=at))
    lifecycles = [(event, i) for i, node in enumerate(ordered) for event in _lifecycle(node)]
    # time order; one node's own events keep their order (the sort is stable)
    events += [event for event, _ in sorted(lifecycles, key=lambda pair: (pair[0].at, pair[1]))]
    if document.rewrite_budget is not None:  # first, as a run sets it when it starts
        first = min((n.captured_at for n in ordered), default=document.entry_time)
        events.insert(0, RewriteBudgetSet(budget=dict(document.rewrite_budget), at=first))
    # The file's graph is already materialized, so its decisions are recorded (and applied) at
    # once, after everything: no cut by time can hold an application without what it needs.
    at = max((event.at for event in events), default=document.entry_time)
    for fact in document.rewrites:
        if fact.decision == "admitted":
            events += [
                RewriteAdmitted(fact=fact, at=at),
                # an admitted decision has its id (the reader checks it)
                RewriteApplied(rewrite_id=fact.rewrite_id, at=at),  # type: ignore[arg-type]
            ]
        else:
            events.append(RewriteRejected(fact=fact, at=at))
    return events
