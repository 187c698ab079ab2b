"""A branch's events in memory, provenance events held packed.

A :class:`~cortex_agents.substrate.events.ToolCallMade` carries the tool's
answer as JSON — a memory query's ranking of ten matches with their scores
and the resolved query is ~2.4 KB stored, and 5–8 KB as Python objects (a
dict per match, a float object per score). Nothing folds it into the graph
state, and it is read again only when someone reads the log (an export, the
chain hash, a view's newest time, a prefix a structure catches up on). A
live run keeps every event of its branch, twice (the run's log and the
store's cache), so those objects were the largest part of what a long run
kept per stage.

:class:`EventList` keeps such an event as its JSON, zlib-compressed (~0.9 KB
for that ranking), and rebuilds it on every read: a read returns an equal,
new event. An event is packed only when the rebuilt one is exactly the same
value (the same types all the way down, ``1``, ``1.0`` and ``True`` apart,
tuples and lists apart, the same time zone), so reading the log returns what
was appended; any other event is kept as it is. Every other event type is
kept as the object: their payloads are shared with the materialized state
(a completed stage's output and time are its node's), so packing them would
add bytes, not remove them.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Final, overload

from cortex_agents.substrate.events import Event, ToolCallMade, event_from_dict, event_to_dict

__all__ = ["EventList", "pack", "unpack"]

_PACKED_TYPES: Final = (ToolCallMade,)
"""Event types held packed: provenance, whose payload nothing else in memory shares."""
_LEVEL: Final = 1
"""zlib's fastest level: a ranking's JSON compresses nearly as well as at level 6, ~4x faster."""


def pack(event: Event) -> Event | bytes:
    """``event`` as compressed JSON when it is of a packed type and survives the trip exactly, else itself."""
    if type(event) not in _PACKED_TYPES:
        return event
    try:
        text = json.dumps(event_to_dict(event), separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return event  # not JSON: left for whoever checks the event to refuse
    data = zlib.compress(text.encode("utf-8"), _LEVEL)
    return data if _exactly(unpack(data), event) else event


def unpack(item: Event | bytes) -> Event:
    """The event an :func:`pack` result holds (a new, equal event when it was packed)."""
    if type(item) is not bytes:
        return item  # type: ignore[return-value]  # an event kept as itself
    return event_from_dict(json.loads(zlib.decompress(item)))


class EventList:
    """An append-only list of events, packing what :func:`pack` packs (see the module docstring).

    Indexing and slicing return events (slices as lists); :meth:`prefix`
    copies the first items without rebuilding any event.
    """

    __slots__ = ("_items",)

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._items: list[Event | bytes] = [pack(e) for e in events]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [unpack(item) for item in self._items[index]]
        return unpack(self._items[index])

    def __iter__(self) -> Iterator[Event]:
        return map(unpack, self._items)

    def range(self, start: int, stop: int) -> Iterator[Event]:
        """The events at ``start`` up to ``stop`` (without copying the list)."""
        items = self._items
        return (unpack(items[i]) for i in range(start, stop))

    def extend(self, events: Iterable[Event]) -> None:
        """Add events at the end."""
        self._items.extend(pack(e) for e in events)

    def prefix(self, length: int) -> EventList:
        """A new list of the first ``length`` events (packed ones stay packed)."""
        other = EventList.__new__(EventList)
        other._items = self._items[:length]
        return other


def _exactly(a: Any, b: Any) -> bool:
    """Whether two events (or values in them) are the same value of the same types, all the way down."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is dict:
            if list(x) != list(y):  # same keys in the same order
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif kind is list or kind is tuple:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif kind is float:
            if not (x == y and math.copysign(1.0, x) == math.copysign(1.0, y)):
                return False
        elif kind is datetime:
            if x != y or x.tzinfo is not y.tzinfo:
                return False
        elif kind in _PACKED_TYPES:
            stack.extend((getattr(x, s), getattr(y, s)) for s in kind.__slots__)
        elif x != y:  # str, int, bool, None; anything else only if equal by its own rule
            return False
    return True
