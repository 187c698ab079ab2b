"""The materialized graph state: what a fold over the substrate's events holds.

:func:`~cortex_agents.substrate.fold` is the only way a
:class:`GraphState` changes. It checks every event against the state so far
and raises :class:`InvalidEvent` for one that cannot follow (an edge to an
unknown node, a second completion, an edge that would close a cycle, ...):
the substrate is a DAG by construction.

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
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, overload

from immutables import Map

from cortex_agents.errors import UnknownNode
from cortex_agents.substrate._records import (
    EdgeRecord,
    NodeId,
    NodeRecord,
    Observation,
    RewriteFact,
)

__all__ = ["EMPTY_STATE", "AppendOnly", "GraphState", "NodeTable"]

T = TypeVar("T")


class AppendOnly(Sequence[T], Generic[T]):
    """An immutable sequence that shares one growing buffer with its longer versions.

    ``appended`` on the newest version extends the buffer in place (O(new));
    so does appending to an older version exactly the items the buffer holds
    after it. Otherwise it copies first. Every version sees only its prefix.
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

    __hash__ = None  # type: ignore[assignment]  # equal by value, not hashable

    def __repr__(self) -> str:
        return f"AppendOnly({list(self)!r})"

    def appended(self, items: Sequence[T]) -> AppendOnly[T]:
        """A longer version with ``items`` at the end."""
        if not items:
            return self
        with self._lock:
            end = self._length + len(items)
            if len(self._items) == self._length or (
                len(self._items) >= end and self._items[self._length : end] == list(items)
            ):  # the newest version, or the same items appended again: share the buffer
                if len(self._items) == self._length:
                    self._items.extend(items)
                out = AppendOnly.__new__(AppendOnly)
                # The versions sharing a buffer share its lock too: two of them must never both
                # find themselves the newest and extend it at once.
                out._items, out._length, out._lock = (
                    self._items,
                    self._length + len(items),
                    self._lock,
                )
                return out
        # Copying needs no lock: a version's prefix of the buffer never changes, only grows past it.
        return AppendOnly([*self, *items])


class NodeTable(Mapping[NodeId, NodeRecord]):
    """Nodes by id, iterated in scheduling order (a persistent map plus an append-only order)."""

    __slots__ = ("_map", "_order")

    def __init__(
        self,
        table: Map[NodeId, NodeRecord] | None = None,
        order: AppendOnly[NodeId] | None = None,
    ) -> None:
        self._map: Map[NodeId, NodeRecord] = table if table is not None else Map()
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

    __hash__ = None  # type: ignore[assignment]  # equal by value, not hashable

    def __repr__(self) -> str:
        return f"NodeTable({list(self._order)!r})"


def _empty_map() -> Map[Any, Any]:
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
    _preds: Map[NodeId, Sequence[NodeId]] = field(default_factory=_empty_map, repr=False)
    _succs: Map[NodeId, Sequence[NodeId]] = field(default_factory=_empty_map, repr=False)
    _keys: Map[str, None] = field(default_factory=_empty_map, repr=False)
    _admitted: Map[int, RewriteFact] = field(default_factory=_empty_map, repr=False)
    _last_id: int = field(default=0, repr=False)

    def node(self, node_id: str) -> NodeRecord:
        """The node with this id.

        Raises:
            UnknownNode: no such node.
        """
        try:
            return self.nodes[NodeId(node_id)]
        except KeyError:
            raise UnknownNode(node_id) from None

    def predecessors(self, node_id: str) -> Sequence[NodeId]:
        """Direct inputs of a node (its Markov boundary upstream), in edge order.

        An immutable sequence; ``in`` on it is O(1) whatever the node's degree.
        """
        self.node(node_id)
        return self._preds.get(NodeId(node_id), ())

    def successors(self, node_id: str) -> Sequence[NodeId]:
        """Direct consumers of a node, in edge order (an immutable sequence; ``in`` is O(1))."""
        self.node(node_id)
        return self._succs.get(NodeId(node_id), ())

    def observations(self) -> tuple[Observation, ...]:
        """The settled nodes as observations, in scheduling order."""
        return tuple(
            Observation(
                node_id=n.id,
                kind=n.kind,
                output=n.output,
                completed_at=n.completed_at,  # type: ignore[arg-type]  # settled: it is set
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
        """The highest admitted ``rewrite_id`` (0 when none was admitted); O(1)."""
        return self._last_id

    def decided(self, key: str) -> bool:
        """Whether a rewrite decision with this idempotency key is recorded; O(log rewrites)."""
        return key in self._keys

    @property
    def unapplied_rewrites(self) -> tuple[RewriteFact, ...]:
        """Admitted rewrites beyond the watermark, in ``rewrite_id`` order: still to materialize.

        O(1) when every admitted rewrite is applied (the common case, checked per step).
        """
        if self._last_id <= self.watermark:
            return ()
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
