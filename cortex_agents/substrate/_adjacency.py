"""A node's links (its predecessors or successors), extended in O(1) amortised per edge.

A state keeps, per node, the nodes it links to in edge order. Rebuilding that
sequence per edge (``(*links, target)``) makes a node of degree *d* cost
O(*d*²) to fold: 100,000 edges into one node took minutes. Here:

* up to :data:`SMALL` links are a tuple (copying a few pointers is cheaper
  than any structure, and most nodes have a handful of links);
* beyond that, :class:`Links`: an append-only buffer with an index from link
  to position, shared by every version of the node's links. Appending to the
  newest version extends the buffer in place; each version sees its prefix,
  and asks the index whether a link is within it — O(1) both;
* a draft that *removes* links (:class:`DraftLinks`) works on an
  insertion-ordered dict per node it removes from, built once per batch, and
  freezes it back when the batch finishes — O(1) per removal.

Every version stays immutable to its readers: the buffer only grows past a
version's end, never inside it.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Final, overload

from immutables import Map, MapMutation

from cortex_agents.substrate._records import NodeId

__all__ = ["SMALL", "DraftLinks", "Links", "appended", "frozen_links"]

SMALL: Final = 8
"""Links of one node held as a plain tuple (at most this many)."""


class Links(Sequence[NodeId]):
    """An immutable sequence of distinct node ids that shares one buffer with its longer versions.

    Membership is O(1) (an index from id to position, shared too). Use
    :func:`appended` rather than building one: small link lists are tuples.
    """

    __slots__ = ("_index", "_items", "_length", "_lock")

    def __init__(self, items: Iterable[NodeId] = ()) -> None:
        self._items: list[NodeId] = list(items)
        self._index: dict[NodeId, int] = {x: i for i, x in enumerate(self._items)}
        self._length = len(self._items)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> NodeId: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[NodeId, ...]: ...
    def __getitem__(self, index: int | slice) -> NodeId | tuple[NodeId, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[NodeId]:
        items = self._items
        for i in range(self._length):
            yield items[i]

    def __contains__(self, node: object) -> bool:
        position = self._index.get(node)  # type: ignore[call-overload]  # any object may be asked
        return position is not None and position < self._length

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Links | tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by value, not hashable

    def __repr__(self) -> str:
        return f"Links({list(self)!r})"

    def appended(self, node: NodeId) -> Links:
        """A version one longer, ``node`` last (it must not be in this version)."""
        with self._lock:
            items, end = self._items, self._length
            if len(items) == end:  # the newest version: extend the shared buffer
                items.append(node)
                self._index[node] = end
                share = True
            else:  # shared only if a longer version already appended this very node
                share = items[end] == node
            if share:
                out = Links.__new__(Links)
                out._items, out._index, out._lock = items, self._index, self._lock
                out._length = end + 1
                return out
        return Links([*self, node])  # an older version taking another path: a copy of its own


def appended(links: Sequence[NodeId] | None, node: NodeId) -> Sequence[NodeId]:
    """``links`` (``None``: none yet) with ``node`` at the end, in O(1) amortised."""
    if links is None:
        return (node,)
    if isinstance(links, Links):
        return links.appended(node)
    if len(links) < SMALL:
        return (*links, node)
    return Links((*links, node))


def frozen_links(nodes: Collection[NodeId]) -> Sequence[NodeId]:
    """The stored form of a node's links (a tuple when small)."""
    return tuple(nodes) if len(nodes) <= SMALL else Links(nodes)


class DraftLinks:
    """One direction of a draft's adjacency: a persistent map in mutation mode.

    Appends go straight to the map's values (:func:`appended`). The first
    removal from a node in a batch copies that node's links into an
    insertion-ordered dict the rest of the batch works on (O(1) per add,
    remove and lookup); :meth:`finish` freezes them back.
    """

    __slots__ = ("_map", "_work")

    def __init__(self, base: Map[NodeId, Sequence[NodeId]]) -> None:
        self._map: MapMutation[NodeId, Sequence[NodeId]] = base.mutate()
        self._work: dict[NodeId, dict[NodeId, None]] = {}

    def get(self, node: NodeId) -> Collection[NodeId]:
        """The links of ``node`` now, in order (empty when it has none)."""
        work = self._work.get(node)
        if work is not None:
            return work.keys()
        return self._map.get(node, ())

    def has(self, node: NodeId, other: NodeId) -> bool:
        """Whether ``node`` links to ``other`` (O(1): a short tuple, an index or a dict)."""
        return other in self.get(node)

    def add(self, node: NodeId, other: NodeId) -> None:
        """Link ``node`` to ``other`` (the caller checked it is not linked yet)."""
        work = self._work.get(node)
        if work is not None:
            work[other] = None
        else:
            self._map[node] = appended(self._map.get(node), other)

    def drop(self, node: NodeId, other: NodeId) -> None:
        """Unlink ``node`` from ``other`` (the caller checked it is linked)."""
        work = self._work.get(node)
        if work is None:
            work = self._work[node] = dict.fromkeys(self._map.get(node, ()))
        del work[other]

    def finish(self) -> Map[NodeId, Sequence[NodeId]]:
        """The persistent map this draft describes (a node left with no links has no key)."""
        for node, work in self._work.items():
            if work:
                self._map[node] = frozen_links(work.keys())
            elif node in self._map:
                del self._map[node]
        return self._map.finish()
