"""The substrate log: an append-only event sequence with a cached fold.

A :class:`SubstrateLog` is an immutable *view* — the first ``len(log)``
events of a buffer. Appending to the newest view extends the shared buffer
in place and returns a longer view; every older view still sees exactly its
own prefix. So appending ``k`` events costs O(k), taking a prefix costs
O(1), and many versions of one run (a checkpoint history) share one buffer.
Appending to a view that is not the newest (a fork) copies its prefix once.

Everything derived from a log — its materialized state, the chain hash that
identifies it, its newest event time, and any structure a consumer registers
(:meth:`SubstrateLog.derived`) — lives on its :class:`~cortex_agents.substrate._branch.Branch`,
extended incrementally, bounded, under the branch's one lock.

:func:`append_events` is the reducer a LangGraph state channel uses: nodes
return event dicts (:func:`~cortex_agents.substrate.event_to_dict`),
which keeps LangGraph's pending writes plain JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar, overload

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._bounds import MAX_STRING_CHARS
from cortex_agents.substrate._branch import Branch, Derived
from cortex_agents.substrate._events import (
    EVENT_TYPES,
    Event,
    check_event,
    check_ids,
    event_from_dict,
    event_to_dict,
    same_event,
)
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._state import GraphState

__all__ = ["LogBuffer", "SubstrateLog", "append_events"]

_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())
T = TypeVar("T")


class LogBuffer:
    """Committed events loaded from storage, viewed read-only by many logs.

    Only its owner (a store's cache) extends it, with events it knows are
    committed; a log built from :meth:`view` copies before appending.
    """

    __slots__ = ("_buffer",)

    def __init__(self, events: Iterable[Event] = (), source: SubstrateLog | None = None) -> None:
        if source is None:  # loaded: compressed at once
            self._buffer = Branch(events, sealed=True)
        else:  # compressed as ``source`` compresses them, sharing its chunks
            self._buffer = Branch(sealed=True)
            self.extend(events, source)

    def __len__(self) -> int:
        return len(self._buffer.events)

    def extend(self, events: Iterable[Event], source: SubstrateLog | None = None) -> None:
        """Add committed events at the end.

        ``source``: the log these events came from, holding them at the same
        positions (a run's log a store commits): the compressed chunks its
        branch sealed from these very event objects are shared, not sealed
        again (:meth:`~cortex_agents.substrate._packed.EventList.extend`).
        """
        self._buffer.extend(list(events), None if source is None else source.branch)

    def sizes(self) -> dict[str, int]:
        """What its branch keeps derived from the events, per kind (see :meth:`Branch.sizes`)."""
        return self._buffer.sizes()

    def view(self, length: int) -> SubstrateLog:
        """The log of the first ``length`` events (O(1))."""
        if not 0 <= length <= len(self._buffer.events):
            raise InvalidArgument("length", f"must be between 0 and {len(self)}", length)
        return SubstrateLog._view(self._buffer, length)


def _converted(
    items: tuple[Event | Mapping[str, Any], ...],
) -> tuple[list[Event], tuple[dict[str, Any], ...] | None]:
    """The items as checked events, and their JSON dicts when every item was an event.

    An event is checked by making its dict (:func:`check_event`); that dict is
    kept, so the step that writes, hashes and stores the event does not make it
    again. An event dict is not kept: its key order or types may differ from
    the stored form.
    """
    events: list[Event] = []
    forms: list[dict[str, Any]] | None = []
    for item in items:
        if isinstance(item, _EVENT_CLASSES):
            form = event_to_dict(item, max_string_chars=MAX_STRING_CHARS)  # check_event's check
            check_ids(item)
            events.append(item)
            if forms is not None:
                forms.append(form)
        else:
            events.append(_as_event(item))
            forms = None
    return events, None if forms is None else tuple(forms)


def _as_event(item: Event | Mapping[str, Any]) -> Event:
    if isinstance(item, _EVENT_CLASSES):
        check_event(item)  # storable, as a dict would have been
        return item
    if isinstance(item, Mapping):
        event = event_from_dict(item, max_string_chars=MAX_STRING_CHARS)
        check_ids(event)  # what check_event adds for an event object
        return event
    raise InvalidArgument("substrate update", "items must be events or event dicts", item)


class SubstrateLog(Sequence[Event]):
    """An immutable, append-only sequence of substrate events.

    Identified by content: :attr:`digest` is the chain hash of its events.
    """

    __slots__ = ("_buffer", "_length")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._buffer = Branch([_as_event(e) for e in events])
        self._length = len(self._buffer.events)

    @classmethod
    def of_folded(cls, events: Sequence[Event], state: GraphState) -> SubstrateLog:
        """A log of ``events`` whose fold is ``state``, both taken as given (nothing is checked).

        For a caller that built the events itself, checked every value in
        them as :meth:`appended` would, and folded them (a snapshot file's
        reader): checking and folding again would double the cost of a large
        import.
        """
        buffer = Branch(events)
        buffer.remember(len(buffer), state)
        return cls._view(buffer, len(buffer))

    @classmethod
    def _view(cls, buffer: Branch, length: int) -> SubstrateLog:
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
            span = range(self._length)[index]
            if span.step == 1:
                return tuple(self._buffer.events.range(span.start, span.stop))
            return tuple(self._buffer.events[i] for i in span)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("substrate log index out of range")
        return self._buffer.events[index]

    def __iter__(self) -> Iterator[Event]:
        return self._buffer.events.range(0, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubstrateLog):
            return NotImplemented
        if self._length != other._length:
            return False
        if self._buffer is other._buffer:
            return True
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal by value, not hashable

    def __repr__(self) -> str:
        return f"SubstrateLog(<{self._length} events>)"

    def __reduce__(self) -> tuple[Any, tuple[list[dict[str, Any]]]]:
        """Pickle as the event dicts (a server that pickles thread state can hold a log)."""
        return (_unpickled, ([event_to_dict(e) for e in self],))

    def since(self, seq: int) -> tuple[Event, ...]:
        """The events after the first ``seq`` ones (O(new events))."""
        if not 0 <= seq <= self._length:
            raise InvalidArgument("seq", f"must be between 0 and {self._length}", seq)
        return tuple(self._buffer.events[seq : self._length])

    def event_dicts(self, start: int) -> list[dict[str, Any]]:
        """The JSON form (:func:`event_to_dict`) of each event after the first ``start`` ones.

        When the latest append to this log's branch made exactly these events,
        the dicts it made checking them are returned, not made again (and a
        channel update of these very dicts is adopted at once: see
        :meth:`~cortex_agents.substrate._branch.Branch.made_from`). The dicts
        may be shared: read them, never change them.
        """
        if not 0 <= start <= self._length:
            raise InvalidArgument("start", f"must be between 0 and {self._length}", start)
        forms = self._buffer.forms(start, self._length)
        if forms is not None:
            return list(forms)
        return [event_to_dict(e) for e in self._buffer.events.range(start, self._length)]

    def prefix(self, length: int) -> SubstrateLog:
        """The view of the first ``length`` events (O(1))."""
        if not 0 <= length <= self._length:
            raise InvalidArgument("length", f"must be between 0 and {self._length}", length)
        return SubstrateLog._view(self._buffer, length)

    @property
    def state(self) -> GraphState:
        """The materialized graph state of this view (folds only what no cached state covers)."""
        return self._buffer.state(self._length)

    @property
    def digest(self) -> bytes:
        """The chain hash of this log's events (16 bytes; the empty log's is all zeros)."""
        return self._buffer.digest(self._length)

    @property
    def latest(self) -> datetime | None:
        """The newest event time of this log (``None`` when it is empty); O(1) amortised."""
        return self._buffer.latest(self._length)

    @property
    def branch(self) -> Branch:
        """The branch this view reads (shared with every other view of it)."""
        return self._buffer

    def extends(self, base: SubstrateLog) -> bool:
        """Whether this log starts with exactly ``base``'s events (by chain hash)."""
        n = len(base)
        if self._length < n:
            return False
        return self._buffer is base._buffer or self._buffer.digest(n) == base.digest

    def derived(self, key: Hashable, factory: Callable[[], Derived[T]]) -> T:
        """A structure kept incrementally on this log's branch, as of this log's length.

        See :meth:`~cortex_agents.substrate._branch.Branch.derived`.
        """
        return self._buffer.derived(key, factory, self._length)

    def appended(self, events: Iterable[Event | Mapping[str, Any]]) -> SubstrateLog:
        """A new log with ``events`` after this one's, checked against the fold.

        Raises:
            InvalidEvent: an event cannot follow the log; nothing is appended.
            InvalidArgument: an item is neither an event nor an event dict, or
                holds a value that cannot be stored.
        """
        items = tuple(events)
        if not items:
            return self
        buffer, end = self._buffer, self._length + len(items)
        if len(buffer.events) >= end:  # the branch goes on past this view: maybe with these
            if buffer.made_from(self._length, items):
                return SubstrateLog._view(buffer, end)  # these very items, appended here already
            new, forms = _converted(items)
            if self._holds(new):
                return SubstrateLog._view(buffer, end)  # validated when they were first appended
        else:
            new, forms = _converted(items)
        state = fold(new, self.state)  # validates before anything is shared
        with buffer.lock:
            if not buffer.sealed and len(buffer.events) == self._length:
                buffer.events.extend(new)
            else:  # a fork of an older view: copy the prefix once
                buffer = buffer.fork(self._length, new)
            buffer.record_source(self._length, items, forms)
        buffer.remember(end, state)
        return SubstrateLog._view(buffer, end)

    def _holds(self, new: Sequence[Event]) -> bool:
        """Whether the branch already holds exactly ``new`` after this view (as stored JSON).

        Then appending them is adopting them: the same step folded twice (a
        stage that scheduled its successors, then the channel's reducer)
        shares one branch instead of copying it.
        """
        buffer, end = self._buffer, self._length + len(new)
        if len(buffer.events) < end:
            return False
        held = buffer.events[self._length : end]
        return all(same_event(a, b) for a, b in zip(held, new, strict=True))


def _unpickled(items: list[dict[str, Any]]) -> SubstrateLog:
    """A pickled log again: its events read as stored ones are (a log stored before a bound
    existed unpickles as it was)."""
    buffer = Branch([event_from_dict(item) for item in items])
    return SubstrateLog._view(buffer, len(buffer))


# A pickle names the function that rebuilds a log by module and name. It names the
# package, not this private module, so pickled thread state (the dev server's
# `.langgraph_api/`) outlives a move or rename of the package's modules.
_unpickled.__module__ = "cortex_agents.substrate"


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
