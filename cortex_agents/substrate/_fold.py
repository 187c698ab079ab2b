"""The fold: one handler per event type, applied to a draft of the next state.

:func:`fold` opens a :class:`Draft` over a :class:`GraphState` (persistent
maps put in mutation mode, nothing copied), hands every event to the handler
:data:`HANDLERS` registers for its type, and freezes the draft into the next
state. A handler checks its event against the draft and raises
:class:`InvalidEvent` when it cannot follow; the input state is never touched,
so a rejected batch changes nothing. Each handler is a plain function of
``(draft, event, index)`` and can be tested alone.

Cost: O(events × log nodes) per batch, whatever the size of the state or
the degree of a node (:mod:`~cortex_agents.substrate._adjacency`: appending a
link, asking for one and removing one are O(1) amortised) — except the rare
batch that removes edges (an admitted rewrite), which copies the surviving
edge list once, and each removing node's links once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from immutables import MapMutation

from cortex_agents.errors import InvalidArgument, InvalidEvent
from cortex_agents.substrate._adjacency import DraftLinks
from cortex_agents.substrate._compact import hold
from cortex_agents.substrate._events import (
    EdgeAdded,
    EdgeRemoved,
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
    ToolCallMade,
)
from cortex_agents.substrate._records import (
    REJECTION_CODES,
    EdgeRecord,
    NodeId,
    NodeRecord,
    RewriteFact,
)
from cortex_agents.substrate._state import EMPTY_STATE, AppendOnly, GraphState, NodeTable

__all__ = ["HANDLERS", "Draft", "Handler", "fold"]


@dataclass(slots=True)
class Draft:
    """The working copy one batch builds; :meth:`finish` freezes it into a state.

    Attributes:
        base: The state the batch started from (never modified).
        nodes: Node records by id (a persistent map in mutation mode).
        scheduled: Node ids scheduled by this batch, in order.
        preds: Predecessors by node id, in edge order.
        succs: Successors by node id, in edge order.
        added: Edges added by this batch, in order (``None`` where one was removed again).
        removed: Edges of ``base`` this batch removed (re-adding one appends it anew).
        rewrites: Rewrite decisions made by this batch, in order.
        keys: Idempotency keys of every decision so far (mutation mode).
        admitted: Every admitted decision by ``rewrite_id`` (mutation mode).
        last_id: The highest admitted ``rewrite_id`` so far.
        watermark: The highest applied ``rewrite_id`` so far.
        budget: The run's rewrite budget, once set.
        seq: Events folded so far (the index of the next event).
        added_at: Position of each edge in ``added``, built by the batch's
            first removal (then kept up to date): removing is O(1) after it.
    """

    base: GraphState
    nodes: MapMutation[NodeId, NodeRecord]
    scheduled: list[NodeId]
    preds: DraftLinks
    succs: DraftLinks
    added: list[EdgeRecord | None]
    removed: set[EdgeRecord]
    rewrites: list[RewriteFact]
    keys: MapMutation[str, None]
    admitted: MapMutation[int, RewriteFact]
    last_id: int
    watermark: int
    budget: Mapping[str, int] | None
    seq: int
    added_at: dict[EdgeRecord, int] | None = None

    @classmethod
    def of(cls, state: GraphState) -> Draft:
        """A draft over ``state`` (O(1): persistent maps are not copied)."""
        table = state.nodes if isinstance(state.nodes, NodeTable) else NodeTable()
        return cls(
            base=state,
            nodes=table._map.mutate(),
            scheduled=[],
            preds=DraftLinks(state._preds),
            succs=DraftLinks(state._succs),
            added=[],
            removed=set(),
            rewrites=[],
            keys=state._keys.mutate(),
            admitted=state._admitted.mutate(),
            last_id=state._last_id,
            watermark=state.watermark,
            budget=state.budget,
            seq=state.seq,
        )

    def node(self, node_id: NodeId, index: int) -> NodeRecord:
        """The node with this id, or :class:`InvalidEvent` at ``index``."""
        try:
            return self.nodes[node_id]
        except KeyError:
            raise InvalidEvent(index, f"unknown node {node_id!r}") from None

    def has_edge(self, source: NodeId, target: NodeId) -> bool:
        """Whether the edge is in the graph now."""
        return self.succs.has(source, target)

    def add_edge(self, edge: EdgeRecord) -> None:
        """Put ``edge`` in the graph (the caller checked that it may be)."""
        if self.added_at is not None:
            self.added_at[edge] = len(self.added)
        self.added.append(edge)
        self.succs.add(edge.source, edge.target)
        self.preds.add(edge.target, edge.source)

    def drop_edge(self, edge: EdgeRecord) -> None:
        """Take ``edge`` out of the graph (the caller checked that it is there)."""
        if self.added_at is None:  # once per batch that removes: O(batch), then O(1) each
            self.added_at = {e: i for i, e in enumerate(self.added) if e is not None}
        position = self.added_at.pop(edge, None)
        if position is None:
            self.removed.add(edge)
        else:
            self.added[position] = None
        self.succs.drop(edge.source, edge.target)
        self.preds.drop(edge.target, edge.source)

    def fact(self, rewrite_id: int) -> RewriteFact:
        """The admitted decision with this id (it exists: ids are dense up to ``last_id``)."""
        return self.admitted[rewrite_id]

    def finish(self) -> GraphState:
        """The state this draft describes."""
        base = self.base
        table = base.nodes if isinstance(base.nodes, NodeTable) else NodeTable()
        edges = base.edges
        if self.removed:  # rare (admitted rewrites only): copy the surviving edges once
            edges = AppendOnly(e for e in edges if e not in self.removed)
        added = [e for e in self.added if e is not None]  # (None: added, then removed)
        if added:
            edges = (edges if isinstance(edges, AppendOnly) else AppendOnly(edges)).appended(added)
        return GraphState(
            nodes=NodeTable(self.nodes.finish(), table._order.appended(self.scheduled)),
            edges=edges,
            rewrites=(*base.rewrites, *self.rewrites) if self.rewrites else base.rewrites,
            seq=self.seq,
            watermark=self.watermark,
            budget=self.budget,
            _preds=self.preds.finish(),
            _succs=self.succs.finish(),
            _keys=self.keys.finish(),
            _admitted=self.admitted.finish(),
            _last_id=self.last_id,
        )


Handler = Callable[[Draft, Any, int], None]
"""Applies one event (at position ``index`` of the log) to a draft, or raises InvalidEvent."""


def node_scheduled(draft: Draft, event: NodeScheduled, index: int) -> None:
    """A new pending node; its id must be a fresh, non-empty string."""
    node_id = event.node_id
    if not isinstance(node_id, str) or not node_id:
        raise InvalidEvent(index, f"node id must be a non-empty string, got {node_id!r}")
    if node_id in draft.nodes:
        raise InvalidEvent(index, f"node {node_id!r} is already scheduled")
    draft.scheduled.append(node_id)
    draft.nodes[node_id] = NodeRecord(
        id=node_id,
        kind=event.kind,
        captured_at=event.at,
        config=event.config,
        tags=tuple(event.tags),
    )


def edge_added(draft: Draft, event: EdgeAdded, index: int) -> None:
    """A new edge between live nodes; never a duplicate, never a cycle."""
    source, target = event.source, event.target
    for end in (source, target):
        if end not in draft.nodes:
            raise InvalidEvent(index, f"edge {source!r} -> {target!r}: unknown node {end!r}")
    if draft.has_edge(source, target):
        raise InvalidEvent(index, f"edge {source!r} -> {target!r} already exists")
    if source == target or _reaches(draft.succs, target, source):
        raise InvalidEvent(index, f"edge {source!r} -> {target!r} would close a cycle")
    for end in (source, target):
        if draft.nodes[end].status == "retired":
            raise InvalidEvent(index, f"edge {source!r} -> {target!r}: {end!r} is retired")
    # An edge of the base state removed earlier in this batch stays in `removed`: the
    # re-added one goes to the end, exactly as folding event by event puts it.
    draft.add_edge(EdgeRecord(source, target))


def edge_removed(draft: Draft, event: EdgeRemoved, index: int) -> None:
    """An existing edge into pending work goes away."""
    source, target = event.source, event.target
    if not draft.has_edge(source, target):
        raise InvalidEvent(index, f"edge {source!r} -> {target!r} does not exist")
    status = draft.nodes[target].status
    if status != "pending":
        raise InvalidEvent(
            index,
            f"edge {source!r} -> {target!r}: {target!r} is {status}; "
            "only edges into pending work can be removed",
        )
    draft.drop_edge(EdgeRecord(source, target))


def node_retired(draft: Draft, event: NodeRetired, index: int) -> None:
    """A pending node without edges leaves the graph (status ``retired``)."""
    node = draft.node(event.node_id, index)
    if node.status != "pending":
        raise InvalidEvent(index, f"node {node.id!r} is {node.status}; only a pending node retires")
    if draft.succs.get(node.id) or draft.preds.get(node.id):
        raise InvalidEvent(
            index, f"node {node.id!r} still has edges; remove them before retiring it"
        )
    draft.nodes[node.id] = _changed(node, status="retired")


def stage_started(draft: Draft, event: StageStarted, index: int) -> None:
    """A pending or failed stage runs (one more attempt)."""
    node = draft.node(event.node_id, index)
    if node.status == "completed":
        raise InvalidEvent(index, f"node {node.id!r} already completed; it cannot start again")
    if node.status == "running":
        raise InvalidEvent(index, f"node {node.id!r} is already running")
    draft.nodes[node.id] = _changed(node, status="running", attempts=node.attempts + 1, error=None)


def stage_completed(draft: Draft, event: StageCompleted, index: int) -> None:
    """A running stage settles with its output."""
    node = draft.node(event.node_id, index)
    if node.status != "running":
        raise InvalidEvent(
            index, f"node {node.id!r} is {node.status}; only a running node completes"
        )
    draft.nodes[node.id] = _changed(
        node, status="completed", completed_at=event.at, held_output=hold(event.output)
    )


def stage_failed(draft: Draft, event: StageFailed, index: int) -> None:
    """A running stage fails with its error."""
    node = draft.node(event.node_id, index)
    if node.status != "running":
        raise InvalidEvent(index, f"node {node.id!r} is {node.status}; only a running node fails")
    draft.nodes[node.id] = _changed(node, status="failed", error=event.error)


def rewrite_decided(draft: Draft, event: RewriteAdmitted | RewriteRejected, index: int) -> None:
    """A rewrite decision: admitted ids are dense and monotone; keys are decided once."""
    fact = event.fact
    expected = "admitted" if isinstance(event, RewriteAdmitted) else "rejected"
    if fact.decision != expected:
        raise InvalidEvent(
            index, f"a {type(event).__name__} event must carry decision {expected!r}"
        )
    if fact.proposer not in draft.nodes:
        raise InvalidEvent(index, f"rewrite proposer {fact.proposer!r} is not a node")
    if fact.key is not None and fact.key in draft.keys:
        raise InvalidEvent(index, f"rewrite key {fact.key!r} was already decided")
    if expected == "admitted":
        if fact.rewrite_id != draft.last_id + 1:
            raise InvalidEvent(
                index,
                f"admitted rewrite_id must be {draft.last_id + 1} (ids are dense and "
                f"monotone), got {fact.rewrite_id!r}",
            )
        draft.last_id += 1
        draft.admitted[draft.last_id] = fact
    elif fact.rewrite_id is not None or fact.code not in REJECTION_CODES:
        raise InvalidEvent(
            index,
            f"a rejected rewrite has no rewrite_id and one of the codes {list(REJECTION_CODES)}",
        )
    if fact.key is not None:
        draft.keys[fact.key] = None
    draft.rewrites.append(fact)


def rewrite_applied(draft: Draft, event: RewriteApplied, index: int) -> None:
    """The next admitted rewrite's nodes are in: the watermark moves."""
    rewrite_id = event.rewrite_id
    if rewrite_id != draft.watermark + 1 or rewrite_id > draft.last_id:
        raise InvalidEvent(
            index,
            f"rewrite {rewrite_id!r} cannot be applied: the watermark is {draft.watermark} "
            f"and the last admitted rewrite is {draft.last_id}",
        )
    fact = draft.fact(rewrite_id)
    for added in fact.diff.get("nodes", ()):
        if added.get("id") not in draft.nodes:
            raise InvalidEvent(
                index,
                f"rewrite {rewrite_id} applied before its node {added.get('id')!r} was scheduled",
            )
    for gone in fact.diff.get("retired", ()):
        if gone not in draft.nodes or draft.nodes[gone].status != "retired":
            raise InvalidEvent(index, f"rewrite {rewrite_id} applied before {gone!r} was retired")
    draft.watermark = rewrite_id


def rewrite_budget_set(draft: Draft, event: RewriteBudgetSet, index: int) -> None:
    """The run's rewrite budget, set once: dimensions to integers >= 0."""
    if draft.budget is not None:
        raise InvalidEvent(index, "the run's rewrite budget is already set")
    granted = event.budget
    if not isinstance(granted, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in granted.items()
    ):
        raise InvalidEvent(
            index, f"a rewrite budget maps dimensions to integers >= 0, got {granted!r}"
        )
    draft.budget = dict(granted)


def tool_call_made(draft: Draft, event: ToolCallMade, index: int) -> None:
    """Provenance only: the calling stage must exist."""
    draft.node(event.node_id, index)


HANDLERS: Final[Mapping[type, Handler]] = MappingProxyType(
    {
        NodeScheduled: node_scheduled,
        EdgeAdded: edge_added,
        EdgeRemoved: edge_removed,
        NodeRetired: node_retired,
        StageStarted: stage_started,
        StageCompleted: stage_completed,
        StageFailed: stage_failed,
        RewriteAdmitted: rewrite_decided,
        RewriteRejected: rewrite_decided,
        RewriteApplied: rewrite_applied,
        RewriteBudgetSet: rewrite_budget_set,
        ToolCallMade: tool_call_made,
    }
)
"""The handler of each event type (exactly the substrate's event types)."""


def fold(events: Iterable[Event], state: GraphState = EMPTY_STATE) -> GraphState:
    """Apply ``events`` to ``state`` and return the new state.

    The input state is not modified and shares structure with the result
    (persistent maps, an append-only edge list): the cost is O(events ×
    log nodes), whatever the size of ``state``. Folding a batch at once
    equals folding its events one by one.

    Raises:
        InvalidEvent: an event cannot follow the state so far; nothing of the
            batch is applied.
    """
    draft = Draft.of(state)
    for event in events:
        handler = HANDLERS.get(type(event))
        if handler is None:
            raise InvalidEvent(draft.seq, f"not a substrate event: {event!r}")
        handler(draft, event, draft.seq)
        draft.seq += 1
    return draft.finish()


_NODE_FIELDS: Final = NodeRecord.__slots__
_NODE_FIELD_SET: Final = frozenset(_NODE_FIELDS)


def _changed(node: NodeRecord, **changes: Any) -> NodeRecord:
    """``dataclasses.replace(node, **changes)`` without its generic machinery.

    A node changes at every start, completion and failure; ``replace`` was a
    tenth of folding a large import.
    """
    if not changes.keys() <= _NODE_FIELD_SET:  # what replace() would refuse
        bad = sorted(changes.keys() - _NODE_FIELD_SET)
        raise InvalidArgument("changes", f"must name fields of NodeRecord {_NODE_FIELDS}", bad)
    out = object.__new__(NodeRecord)
    for name in _NODE_FIELDS:
        object.__setattr__(out, name, changes[name] if name in changes else getattr(node, name))
    return out


def _reaches(succs: DraftLinks, start: NodeId, goal: NodeId) -> bool:
    """Whether ``goal`` is reachable from ``start`` (a node without successors reaches nothing)."""
    if not succs.get(start):
        return False
    seen = {start}
    stack = [start]
    while stack:
        for nxt in succs.get(stack.pop()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False
