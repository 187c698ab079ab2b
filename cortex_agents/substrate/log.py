"""The substrate log: an append-only event sequence with a cached fold.

A :class:`SubstrateLog` is an immutable *view* — the first ``len(log)``
events of a buffer. Appending to the newest view extends the shared buffer
in place and returns a longer view; every older view still sees exactly its
own prefix. So appending ``k`` events costs O(k), taking a prefix costs
O(1), and many versions of one run (a checkpoint history) share one buffer.
Appending to a view that is not the newest (a fork) copies its prefix once.

The log also caches the materialized :class:`GraphState` of a few lengths
per buffer, so the state of a longer view folds only the events it adds.

:func:`append_events` is the reducer a LangGraph state channel uses: nodes
return event dicts (:func:`~cortex_agents.substrate.events.event_to_dict`),
which keeps LangGraph's pending writes plain JSON.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, overload

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate.events import EVENT_TYPES, Event, event_from_dict
from cortex_agents.substrate.state import EMPTY_STATE, GraphState, fold

__all__ = ["LogBuffer", "SubstrateLog", "append_events"]

_STATE_CACHE: Final = 4
_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())


class _Buffer:
    """The shared, append-only storage behind every view of one log.

    A *sealed* buffer belongs to a storage cache: views of it never extend it
    in place (appending copies), so only committed events ever enter it.
    """

    __slots__ = ("events", "lock", "sealed", "states")

    def __init__(self, events: list[Event], *, sealed: bool = False) -> None:
        self.events = events
        self.lock = threading.Lock()
        self.sealed = sealed
        self.states: dict[int, GraphState] = {0: EMPTY_STATE}


class LogBuffer:
    """Committed events loaded from storage, viewed read-only by many logs.

    Only its owner (a store's cache) extends it, with events it knows are
    committed; a log built from :meth:`view` copies before appending.
    """

    __slots__ = ("_buffer",)

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._buffer = _Buffer(list(events), sealed=True)

    def __len__(self) -> int:
        return len(self._buffer.events)

    def extend(self, events: Iterable[Event]) -> None:
        """Add committed events at the end."""
        with self._buffer.lock:
            self._buffer.events.extend(events)

    def view(self, length: int) -> SubstrateLog:
        """The log of the first ``length`` events (O(1))."""
        if not 0 <= length <= len(self._buffer.events):
            raise InvalidArgument("length", f"must be between 0 and {len(self)}", length)
        return SubstrateLog._view(self._buffer, length)


def _as_event(item: Event | Mapping[str, Any]) -> Event:
    if isinstance(item, _EVENT_CLASSES):
        return item  # type: ignore[return-value]
    if isinstance(item, Mapping):
        return event_from_dict(item)
    raise InvalidArgument("substrate update", "items must be events or event dicts", item)


class SubstrateLog(Sequence[Event]):
    """An immutable, append-only sequence of substrate events."""

    __slots__ = ("_buffer", "_length")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._buffer = _Buffer([_as_event(e) for e in events])
        self._length = len(self._buffer.events)

    @classmethod
    def _view(cls, buffer: _Buffer, length: int) -> SubstrateLog:
        log = cls.__new__(cls)
        log._buffer = buffer
        log._length = length
        return log

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Event, ...]: ...
    def __getitem__(self, index: int | slice) -> Event | tuple[Event, ...]:
        if isinstance(index, slice):
            return tuple(self._buffer.events[: self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("substrate log index out of range")
        return self._buffer.events[index]

    def __iter__(self) -> Iterator[Event]:
        events = self._buffer.events
        for i in range(self._length):
            yield events[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubstrateLog):
            return NotImplemented
        if self._length != other._length:
            return False
        if self._buffer is other._buffer:
            return True
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SubstrateLog(<{self._length} events>)"

    def since(self, seq: int) -> tuple[Event, ...]:
        """The events after the first ``seq`` ones (O(new events))."""
        if not 0 <= seq <= self._length:
            raise InvalidArgument("seq", f"must be between 0 and {self._length}", seq)
        return tuple(self._buffer.events[seq : self._length])

    def prefix(self, length: int) -> SubstrateLog:
        """The view of the first ``length`` events (O(1))."""
        if not 0 <= length <= self._length:
            raise InvalidArgument("length", f"must be between 0 and {self._length}", length)
        return SubstrateLog._view(self._buffer, length)

    @property
    def state(self) -> GraphState:
        """The materialized graph state of this view (folds only what no cached state covers)."""
        buffer = self._buffer
        cached = buffer.states.get(self._length)
        if cached is not None:
            return cached
        base = max(k for k in tuple(buffer.states) if k <= self._length)
        state = fold(buffer.events[base : self._length], buffer.states[base])
        with buffer.lock:
            buffer.states[self._length] = state
            while len(buffer.states) > _STATE_CACHE:
                buffer.states.pop(min(k for k in buffer.states if k not in (0, self._length)))
        return state

    def appended(self, events: Iterable[Event | Mapping[str, Any]]) -> SubstrateLog:
        """A new log with ``events`` after this one's, checked against the fold.

        Raises:
            InvalidEvent: an event cannot follow the log; nothing is appended.
            InvalidArgument: an item is neither an event nor an event dict.
        """
        new = [_as_event(e) for e in events]
        if not new:
            return self
        state = fold(new, self.state)  # validates before anything is shared
        buffer = self._buffer
        with buffer.lock:
            if not buffer.sealed and len(buffer.events) == self._length:
                buffer.events.extend(new)
            else:  # a fork of an older view: copy the prefix once
                buffer = _Buffer([*buffer.events[: self._length], *new])
            buffer.states[self._length + len(new)] = state
        return SubstrateLog._view(buffer, self._length + len(new))


def append_events(
    current: SubstrateLog | None, update: Iterable[Event | Mapping[str, Any]] | None
) -> SubstrateLog:
    """Reducer of the substrate channel: append the update's events to ``current``.

    ``update`` is a list of events or event dicts (what a node returns under
    the substrate key).

    Raises:
        InvalidEvent: an event cannot follow the log; nothing is appended.
        InvalidArgument: ``update`` is not a list of events or event dicts.
    """
    current = current if current is not None else SubstrateLog()
    if update is None:
        return current
    if isinstance(update, SubstrateLog | str | bytes | Mapping):
        raise InvalidArgument(
            "substrate update", "must be a list of events or event dicts", type(update).__name__
        )
    return current.appended(update)
