"""The materialized graph state: a fold over the substrate's events.

:func:`fold` is the only way a :class:`GraphState` changes. It checks every
event against the state so far and raises :class:`InvalidEvent` for one
that cannot follow (an edge to an unknown node, a second completion, an edge
that would close a cycle, ...): the substrate is a DAG by construction.

Status transitions::

    (scheduled) -> pending -> running -> completed      (terminal: settled)
                     |         |    ^
                     |         v    |  a retry starts again
                     |        failed
                     v
                  retired    (an admitted expand_node(replace) took it out)

Rewrites (DESIGN §6) enter as decisions — ``rewrite_admitted`` with a dense,
monotone ``rewrite_id`` or ``rewrite_rejected`` — and an admitted one is
*materialized* later by its nodes and edges followed by ``rewrite_applied``,
which moves the watermark. The fold checks both halves: ids in order, each
applied once, after its nodes exist.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Generic, TypeVar, overload

from immutables import Map

from cortex_agents.errors import InvalidEvent, UnknownNode
from cortex_agents.substrate.events import (
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
from cortex_agents.substrate.records import (
    REJECTION_CODES,
    EdgeRecord,
    NodeId,
    NodeRecord,
    Observation,
    RewriteFact,
)

__all__ = ["EMPTY_STATE", "AppendOnly", "GraphState", "NodeTable", "fold"]

T = TypeVar("T")


class AppendOnly(Sequence[T], Generic[T]):
    """An immutable sequence that shares one growing buffer with its longer versions.

    ``appended`` on the newest version extends the buffer in place (O(new));
    on an older version it copies first. Every version sees only its prefix.
    """

    __slots__ = ("_items", "_length", "_lock")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._length = len(self._items)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        items = self._items
        for i in range(self._length):
            yield items[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AppendOnly):
            return self._length == other._length and all(
                a == b for a, b in zip(self, other, strict=True)
            )
        if isinstance(other, tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AppendOnly({list(self)!r})"

    def appended(self, items: Sequence[T]) -> AppendOnly[T]:
        """A longer version with ``items`` at the end."""
        if not items:
            return self
        with self._lock:
            if len(self._items) == self._length:
                self._items.extend(items)
                out = AppendOnly.__new__(AppendOnly)
                out._items, out._length, out._lock = (
                    self._items,
                    self._length + len(items),
                    self._lock,
                )
                return out
        return AppendOnly([*self, *items])


class NodeTable(Mapping[NodeId, NodeRecord]):
    """Nodes by id, iterated in scheduling order (a persistent map plus an append-only order)."""

    __slots__ = ("_map", "_order")

    def __init__(self, table: Map | None = None, order: AppendOnly[NodeId] | None = None) -> None:
        self._map = table if table is not None else Map()
        self._order = order if order is not None else AppendOnly()

    def __getitem__(self, node_id: NodeId) -> NodeRecord:
        return self._map[node_id]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._map

    def __iter__(self) -> Iterator[NodeId]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._map)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeTable):
            return self._order == other._order and self._map == other._map
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodeTable({list(self._order)!r})"


def _empty_map() -> Map:
    return Map()


@dataclass(frozen=True, slots=True)
class GraphState:
    """The graph as of some prefix of the event log.

    Attributes:
        nodes: Every node by id, in the order they were scheduled.
        edges: Every edge, in the order they were added.
        rewrites: Every rewrite decision, admitted or rejected, in order.
        seq: How many events were folded to reach this state.
        watermark: The highest ``rewrite_id`` whose nodes and edges are in the graph.
        budget: The run's rewrite budget per dimension, once the run set it.
    """

    nodes: Mapping[NodeId, NodeRecord] = field(default_factory=NodeTable)
    edges: Sequence[EdgeRecord] = field(default_factory=AppendOnly)
    rewrites: tuple[RewriteFact, ...] = ()
    seq: int = 0
    watermark: int = 0
    budget: Mapping[str, int] | None = None
    _preds: Mapping[NodeId, tuple[NodeId, ...]] = field(default_factory=_empty_map, repr=False)
    _succs: Mapping[NodeId, tuple[NodeId, ...]] = field(default_factory=_empty_map, repr=False)

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

    @property
    def last_rewrite_id(self) -> int:
        """The highest admitted ``rewrite_id`` (0 when none was admitted)."""
        return max(
            (r.rewrite_id or 0 for r in self.rewrites if r.decision == "admitted"), default=0
        )

    @property
    def unapplied_rewrites(self) -> tuple[RewriteFact, ...]:
        """Admitted rewrites beyond the watermark, in ``rewrite_id`` order: still to materialize."""
        return tuple(
            r
            for r in self.rewrites
            if r.decision == "admitted" and (r.rewrite_id or 0) > self.watermark
        )

    def budget_spent(self) -> dict[str, int]:
        """What the admitted rewrites cost, summed per dimension."""
        spent: dict[str, int] = {}
        for fact in self.rewrites:
            if fact.decision == "admitted":
                for dimension, amount in fact.cost.items():
                    spent[dimension] = spent.get(dimension, 0) + amount
        return spent


EMPTY_STATE: Final = GraphState()


def fold(events: Iterable[Event], state: GraphState = EMPTY_STATE) -> GraphState:
    """Apply ``events`` to ``state`` and return the new state.

    The input state is not modified and shares structure with the result
    (persistent maps, an append-only edge list): the cost is O(events ×
    log nodes), whatever the size of ``state``.

    Raises:
        InvalidEvent: an event cannot follow the state so far; nothing of the
            batch is applied.
    """
    table = state.nodes if isinstance(state.nodes, NodeTable) else NodeTable()
    nodes = table._map.mutate()
    scheduled: list[NodeId] = []
    preds = state._preds.mutate()  # type: ignore[attr-defined]
    succs = state._succs.mutate()  # type: ignore[attr-defined]
    new_edges: list[EdgeRecord] = []
    removed: set[tuple[str, str]] = set()
    rewrites = list(state.rewrites)
    keys = {r.key for r in rewrites if r.key is not None}
    last_id = state.last_rewrite_id
    watermark = state.watermark
    budget = state.budget
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
                scheduled.append(node_id)
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
                if target in succs.get(source, ()):
                    raise InvalidEvent(index, f"edge {source!r} -> {target!r} already exists")
                if source == target or _reaches(succs, target, source):
                    raise InvalidEvent(index, f"edge {source!r} -> {target!r} would close a cycle")
                for end in (source, target):
                    if nodes[end].status == "retired":
                        raise InvalidEvent(
                            index, f"edge {source!r} -> {target!r}: {end!r} is retired"
                        )
                removed.discard((source, target))
                new_edges.append(EdgeRecord(source, target))
                succs[source] = (*succs.get(source, ()), target)
                preds[target] = (*preds.get(target, ()), source)
            case EdgeRemoved(source=source, target=target):
                if target not in succs.get(source, ()):
                    raise InvalidEvent(index, f"edge {source!r} -> {target!r} does not exist")
                if nodes[target].status != "pending":
                    raise InvalidEvent(
                        index,
                        f"edge {source!r} -> {target!r}: {target!r} is {nodes[target].status}; "
                        "only edges into pending work can be removed",
                    )
                edge = EdgeRecord(source, target)
                if edge in new_edges:
                    new_edges.remove(edge)
                else:
                    removed.add((source, target))
                _drop(succs, source, target)
                _drop(preds, target, source)
            case NodeRetired(node_id=node_id):
                node = _known(nodes, node_id, index)
                if node.status != "pending":
                    raise InvalidEvent(
                        index, f"node {node_id!r} is {node.status}; only a pending node retires"
                    )
                if succs.get(node_id) or preds.get(node_id):
                    raise InvalidEvent(
                        index, f"node {node_id!r} still has edges; remove them before retiring it"
                    )
                nodes[node_id] = replace(node, status="retired")
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
                if fact.key is not None and fact.key in keys:
                    raise InvalidEvent(index, f"rewrite key {fact.key!r} was already decided")
                if expected == "admitted":
                    if fact.rewrite_id != last_id + 1:
                        raise InvalidEvent(
                            index,
                            f"admitted rewrite_id must be {last_id + 1} (ids are dense and "
                            f"monotone), got {fact.rewrite_id!r}",
                        )
                    last_id += 1
                elif fact.rewrite_id is not None or fact.code not in REJECTION_CODES:
                    raise InvalidEvent(
                        index,
                        "a rejected rewrite has no rewrite_id and one of the codes "
                        f"{list(REJECTION_CODES)}",
                    )
                if fact.key is not None:
                    keys.add(fact.key)
                rewrites.append(fact)
            case RewriteApplied(rewrite_id=rewrite_id):
                if rewrite_id != watermark + 1 or rewrite_id > last_id:
                    raise InvalidEvent(
                        index,
                        f"rewrite {rewrite_id!r} cannot be applied: the watermark is {watermark} "
                        f"and the last admitted rewrite is {last_id}",
                    )
                fact = next(r for r in rewrites if r.rewrite_id == rewrite_id)
                for added in fact.diff.get("nodes", ()):
                    if added.get("id") not in nodes:
                        raise InvalidEvent(
                            index,
                            f"rewrite {rewrite_id} applied before its node {added.get('id')!r} was scheduled",
                        )
                for gone in fact.diff.get("retired", ()):
                    if gone not in nodes or nodes[gone].status != "retired":
                        raise InvalidEvent(
                            index, f"rewrite {rewrite_id} applied before {gone!r} was retired"
                        )
                watermark = rewrite_id
            case RewriteBudgetSet(budget=granted):
                if budget is not None:
                    raise InvalidEvent(index, "the run's rewrite budget is already set")
                if not isinstance(granted, Mapping) or not all(
                    isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for k, v in granted.items()
                ):
                    raise InvalidEvent(
                        index, f"a rewrite budget maps dimensions to integers >= 0, got {granted!r}"
                    )
                budget = dict(granted)
            case ToolCallMade(node_id=node_id):
                _known(nodes, node_id, index)
            case _:
                raise InvalidEvent(index, f"not a substrate event: {event!r}")

    edges = state.edges
    if removed:  # rare (admitted rewrites only): copy the surviving edges once
        edges = AppendOnly(e for e in edges if (e.source, e.target) not in removed)
    if new_edges:
        edges = (edges if isinstance(edges, AppendOnly) else AppendOnly(edges)).appended(new_edges)
    return GraphState(
        nodes=NodeTable(nodes.finish(), table._order.appended(scheduled)),
        edges=edges,
        rewrites=tuple(rewrites),
        seq=seq,
        watermark=watermark,
        budget=budget,
        _preds=preds.finish(),
        _succs=succs.finish(),
    )


def _drop(links, node: str, other: str) -> None:
    """Remove ``other`` from ``links[node]`` (a key with no links left is deleted)."""
    rest = tuple(x for x in links.get(node, ()) if x != other)
    if rest:
        links[node] = rest
    else:
        del links[node]


def _known(nodes: Mapping[NodeId, NodeRecord], node_id: str, index: int) -> NodeRecord:
    try:
        return nodes[node_id]  # type: ignore[index]
    except KeyError:
        raise InvalidEvent(index, f"unknown node {node_id!r}") from None


def _reaches(succs: Mapping[str, tuple[str, ...]], start: str, goal: str) -> bool:
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
