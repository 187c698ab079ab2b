"""The materialized graph state: a fold over the substrate's events.

:func:`fold` is the only way a :class:`GraphState` changes. It checks every
event against the state so far and raises :class:`InvalidEvent` for one
that cannot follow (an edge to an unknown node, a second completion, an edge
that would close a cycle, ...): the substrate is a DAG by construction.

Status transitions::

    (scheduled) -> pending -> running -> completed      (terminal: settled)
                               |    ^
                               v    |  a retry starts again
                              failed
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from cortex_agents.errors import InvalidEvent, UnknownNode
from cortex_agents.substrate.events import (
    EdgeAdded,
    Event,
    NodeScheduled,
    RewriteAdmitted,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
)
from cortex_agents.substrate.records import (
    EdgeRecord,
    NodeId,
    NodeRecord,
    Observation,
    RewriteFact,
)

__all__ = ["EMPTY_STATE", "GraphState", "fold"]


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class GraphState:
    """The graph as of some prefix of the event log.

    Attributes:
        nodes: Every node by id, in the order they were scheduled.
        edges: Every edge, in the order they were added.
        rewrites: Every rewrite decision, admitted or rejected, in order.
        seq: How many events were folded to reach this state.
    """

    nodes: Mapping[NodeId, NodeRecord] = field(default_factory=_empty)
    edges: tuple[EdgeRecord, ...] = ()
    rewrites: tuple[RewriteFact, ...] = ()
    seq: int = 0
    _preds: Mapping[NodeId, tuple[NodeId, ...]] = field(default_factory=_empty, repr=False)
    _succs: Mapping[NodeId, tuple[NodeId, ...]] = field(default_factory=_empty, repr=False)

    def node(self, node_id: str) -> NodeRecord:
        """The node with this id.

        Raises:
            UnknownNode: no such node.
        """
        try:
            return self.nodes[node_id]  # type: ignore[index]
        except KeyError:
            raise UnknownNode(node_id) from None

    def predecessors(self, node_id: str) -> tuple[NodeId, ...]:
        """Direct inputs of a node (its Markov boundary upstream), in edge order."""
        self.node(node_id)
        return self._preds.get(node_id, ())  # type: ignore[call-overload]

    def successors(self, node_id: str) -> tuple[NodeId, ...]:
        """Direct consumers of a node, in edge order."""
        self.node(node_id)
        return self._succs.get(node_id, ())  # type: ignore[call-overload]

    def observations(self) -> tuple[Observation, ...]:
        """The settled nodes as observations, in scheduling order."""
        return tuple(
            Observation(
                node_id=n.id,
                kind=n.kind,
                output=n.output,
                completed_at=n.completed_at,  # type: ignore[arg-type]
                tags=n.tags,
            )
            for n in self.nodes.values()
            if n.settled
        )

    @property
    def admitted_rewrites(self) -> tuple[RewriteFact, ...]:
        """The rewrite decisions that were admitted, in ``rewrite_id`` order."""
        return tuple(r for r in self.rewrites if r.decision == "admitted")


EMPTY_STATE: Final = GraphState()


def fold(events: Iterable[Event], state: GraphState = EMPTY_STATE) -> GraphState:
    """Apply ``events`` to ``state`` and return the new state.

    The input state is not modified. Cost is O(size of ``state`` + events),
    so fold a batch of events at once rather than one call per event.

    Raises:
        InvalidEvent: an event cannot follow the state so far; nothing of the
            batch is applied.
    """
    nodes = dict(state.nodes)
    edges = list(state.edges)
    rewrites = list(state.rewrites)
    preds = {k: list(v) for k, v in state._preds.items()}
    succs = {k: list(v) for k, v in state._succs.items()}
    edge_set = {(e.source, e.target) for e in edges}
    seq = state.seq

    for event in events:
        index = seq
        seq += 1
        match event:
            case NodeScheduled(node_id=node_id):
                if not isinstance(node_id, str) or not node_id:
                    raise InvalidEvent(
                        index, f"node id must be a non-empty string, got {node_id!r}"
                    )
                if node_id in nodes:
                    raise InvalidEvent(index, f"node {node_id!r} is already scheduled")
                nodes[node_id] = NodeRecord(
                    id=node_id,
                    kind=event.kind,
                    captured_at=event.at,
                    config=event.config,
                    tags=tuple(event.tags),
                )
            case EdgeAdded(source=source, target=target):
                for end in (source, target):
                    if end not in nodes:
                        raise InvalidEvent(
                            index, f"edge {source!r} -> {target!r}: unknown node {end!r}"
                        )
                if (source, target) in edge_set:
                    raise InvalidEvent(index, f"edge {source!r} -> {target!r} already exists")
                if source == target or _reaches(succs, target, source):
                    raise InvalidEvent(index, f"edge {source!r} -> {target!r} would close a cycle")
                edge_set.add((source, target))
                edges.append(EdgeRecord(source, target))
                succs.setdefault(source, []).append(target)
                preds.setdefault(target, []).append(source)
            case StageStarted(node_id=node_id):
                node = _known(nodes, node_id, index)
                if node.status == "completed":
                    raise InvalidEvent(
                        index, f"node {node_id!r} already completed; it cannot start again"
                    )
                if node.status == "running":
                    raise InvalidEvent(index, f"node {node_id!r} is already running")
                nodes[node_id] = replace(
                    node, status="running", attempts=node.attempts + 1, error=None
                )
            case StageCompleted(node_id=node_id):
                node = _known(nodes, node_id, index)
                if node.status != "running":
                    raise InvalidEvent(
                        index, f"node {node_id!r} is {node.status}; only a running node completes"
                    )
                nodes[node_id] = replace(
                    node, status="completed", completed_at=event.at, output=event.output
                )
            case StageFailed(node_id=node_id):
                node = _known(nodes, node_id, index)
                if node.status != "running":
                    raise InvalidEvent(
                        index, f"node {node_id!r} is {node.status}; only a running node fails"
                    )
                nodes[node_id] = replace(node, status="failed", error=event.error)
            case RewriteAdmitted(fact=fact) | RewriteRejected(fact=fact):
                expected = "admitted" if isinstance(event, RewriteAdmitted) else "rejected"
                if fact.decision != expected:
                    raise InvalidEvent(
                        index, f"a {type(event).__name__} event must carry decision {expected!r}"
                    )
                if fact.proposer not in nodes:
                    raise InvalidEvent(index, f"rewrite proposer {fact.proposer!r} is not a node")
                rewrites.append(fact)
            case ToolCallMade(node_id=node_id):
                _known(nodes, node_id, index)
            case _:
                raise InvalidEvent(index, f"not a substrate event: {event!r}")

    return GraphState(
        nodes=MappingProxyType(nodes),
        edges=tuple(edges),
        rewrites=tuple(rewrites),
        seq=seq,
        _preds=MappingProxyType({k: tuple(v) for k, v in preds.items()}),
        _succs=MappingProxyType({k: tuple(v) for k, v in succs.items()}),
    )


def _known(nodes: Mapping[NodeId, NodeRecord], node_id: str, index: int) -> NodeRecord:
    try:
        return nodes[node_id]  # type: ignore[index]
    except KeyError:
        raise InvalidEvent(index, f"unknown node {node_id!r}") from None


def _reaches(succs: Mapping[str, list[str]], start: str, goal: str) -> bool:
    """Whether ``goal`` is reachable from ``start`` (a node without successors reaches nothing)."""
    if not succs.get(start):
        return False
    seen = {start}
    stack = [start]
    while stack:
        for nxt in succs.get(stack.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False
