"""A branch's events in memory: every full run of events held as one compressed chunk.

A live run keeps every event of its branch, and the store keeps its cache of
the committed log; as Python objects an event costs far more than its JSON
(a stage-started event ~130 B, a memory query's ranking 5–8 KB: a dict per
match, a float object per score). Nothing reads most of them again: binding,
hashing and folding read the events since they last looked, a few at the
end. Old events are read only by whoever reads the whole log (an export, a
fork's fold from an old state, a structure built afresh).

So :class:`EventList` keeps its newest events as objects and seals each full
run of :data:`CHUNK` events behind them into one zlib-compressed JSON array
(:func:`event_to_dict` forms; the events of a run share their keys, times
and ids, so they compress several times better together than apart). At
least :data:`CHUNK` of the newest events always stay objects, and an append
seals at most :data:`SEALS_PER_EXTEND` runs of the events before it, so what
a run reads after an append (the events since it last looked) is not
decoded; the last
:data:`DECODED_KEPT` chunks decoded are kept, so reading old events in order
decodes each chunk once.

Reading returns what was appended: an event is sealed only when the event
its JSON rebuilds is exactly the same value — the same types all the way
down (``1``, ``1.0`` and ``True`` apart, tuples and lists apart), the same
time zone object. Any other event stays in its chunk as the object itself.
Sealed events read back as equal, new objects (shared by the reads that hit
one decoded chunk): events are frozen, and their payloads are for reading.

Chunks cover fixed positions (``k * CHUNK`` up to ``(k + 1) * CHUNK``) and
never change, so a prefix of the list (a fork) shares the chunks below it,
and two lists holding the same events can share one chunk
(:meth:`EventList.extend`'s ``source``).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final, overload

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._events import EVENT_TYPES, Event, event_from_dict, event_to_dict
from cortex_agents.substrate._records import RewriteFact

__all__ = ["CHUNK", "DECODED_KEPT", "SEALS_PER_EXTEND", "EventList"]

CHUNK: Final = 64
"""Events per compressed chunk: a live run's compress to 24.7 B each in runs of 64, 22.0 in runs
of 128 (level 6); a longer run is more to decode for one old event."""
DECODED_KEPT: Final = 2
"""Decoded chunks an :class:`EventList` keeps (most recently read first)."""
SEALS_PER_EXTEND: Final = 2
"""Runs an append seals at most. An append of many events (a run scheduling its whole wire) is
sealed over the appends that follow, so the reads right after it — its chain hash, its commit,
an index built afresh — find the objects, not chunks to decode; a live run appends a few events
per step, so a backlog drains ~30 times faster than it grows."""
ISSUED_KEPT: Final = 8
"""How many of the latest chunks sealed or decoded a list remembers the objects of (the ones it
was sealed from, or a decode's), for another list holding those objects to share the chunk: a
store's cache seals in the same order, behind by the commits it has not had yet."""
_LEVEL: Final = 6
"""zlib's default level: a run of a live run's events 12% smaller than at level 1 (24.7 against 28.2 B
per event), sealing ~0.5 µs per event slower."""
# ASCII escapes keep a lone surrogate (refused on entry, but readable from old rows) encodable
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)
_STRUCTS: Final = frozenset((*EVENT_TYPES.values(), RewriteFact))


class _Chunk:
    """``CHUNK`` events: their JSON array, compressed; ``kept``: the ones held as themselves, by offset."""

    __slots__ = ("data", "kept")

    def __init__(self, data: bytes, kept: dict[int, Event] | None) -> None:
        self.data = data
        self.kept = kept

    def events(self) -> tuple[Event, ...]:
        """The events, rebuilt (those kept: themselves)."""
        forms = json.loads(zlib.decompress(self.data))
        kept = self.kept
        if kept is None:
            return tuple(event_from_dict(form) for form in forms)
        return tuple(kept[i] if i in kept else event_from_dict(f) for i, f in enumerate(forms))


def _sealed(events: Sequence[Event]) -> _Chunk:
    """One chunk of ``events``; each event the trip does not rebuild exactly is kept as itself."""
    forms: list[dict[str, Any] | None] = []
    kept: dict[int, Event] = {}
    for i, event in enumerate(events):
        try:
            forms.append(event_to_dict(event))
        except InvalidArgument:  # not storable (an unchecked event): left for a check to refuse
            forms.append(None)
            kept[i] = event
    text = _ENCODER.encode(forms)
    for i, form in enumerate(json.loads(text)):
        if i in kept:
            continue
        try:
            back = event_from_dict(form)
        except InvalidArgument:
            back = None
        if back is None or not _exactly(back, events[i]):
            kept[i] = events[i]
    if kept:  # their forms are not read back: drop the bytes
        text = _ENCODER.encode([None if i in kept else f for i, f in enumerate(forms)])
    return _Chunk(zlib.compress(text.encode("ascii"), _LEVEL), kept or None)


class EventList:
    """An append-only list of events, full runs of :data:`CHUNK` held compressed (see the module docstring).

    Indexing and slicing return events (slices as lists); :meth:`prefix`
    copies the first events without decoding a whole chunk.

    Reads may run while another thread extends the list (a branch extends
    under its lock, its views read without it): the list's parts are
    replaced as one value, never changed where a reader could see them.
    """

    __slots__ = ("_decoded", "_issued", "_parts")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        # (chunks, how many of them this value covers, the events after them as objects);
        # the chunk list grows in place, past what any earlier value covers
        self._parts: tuple[list[_Chunk], int, list[Event]] = ([], 0, [])
        self._decoded: tuple[tuple[_Chunk, tuple[Event, ...]], ...] = ()
        # the latest chunks sealed or decoded, by number, and the objects this list handed out
        # for them (see ``_shared``)
        self._issued: tuple[tuple[int, Sequence[Event]], ...] = ()
        self._parts[2].extend(events)
        self._seal(None)  # a list made at once (a log loaded, imported) is sealed at once

    def __len__(self) -> int:
        _, sealed, tail = self._parts
        return sealed * CHUNK + len(tail)

    @property
    def compressed(self) -> int:
        """How many of the first events are held in chunks (a multiple of :data:`CHUNK`)."""
        return self._parts[1] * CHUNK

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            span = range(len(self))[index]
            if span.step == 1:
                return list(self.range(span.start, span.stop))
            return [self[i] for i in span]
        chunks, sealed, tail = self._parts
        base = sealed * CHUNK
        if index < 0:
            index += base + len(tail)
        if index >= base:
            return tail[index - base]  # IndexError past the end, as a list's
        if index < 0:
            raise IndexError("event list index out of range")
        return self._events_of(chunks, index // CHUNK)[index % CHUNK]

    def __iter__(self) -> Iterator[Event]:
        return self.range(0, len(self))

    def range(self, start: int, stop: int) -> Iterator[Event]:
        """The events at ``start`` up to ``stop`` (``0 <= start <= stop <= len``), without a copy of the list."""
        return self._range(self._parts, start, stop)

    def _range(
        self, parts: tuple[list[_Chunk], int, list[Event]], start: int, stop: int
    ) -> Iterator[Event]:
        chunks, sealed, tail = parts
        base = sealed * CHUNK
        i = start
        while i < min(stop, base):
            number, offset = divmod(i, CHUNK)
            end = min(stop, (number + 1) * CHUNK)
            yield from self._events_of(chunks, number)[offset : end - number * CHUNK]
            i = end
        if i < stop:
            yield from tail[i - base : stop - base]

    def _events_of(self, chunks: list[_Chunk], number: int) -> tuple[Event, ...]:
        """Chunk ``number``'s events, decoded once while it stays among the latest :data:`DECODED_KEPT` read."""
        chunk = chunks[number]
        decoded = self._decoded
        for held, events in decoded:
            if held is chunk:
                return events
        events = chunk.events()
        self._decoded = ((chunk, events), *decoded[: DECODED_KEPT - 1])
        self._issued = ((number, events), *self._issued[: ISSUED_KEPT - 1])
        return events

    def extend(self, events: Iterable[Event], source: EventList | None = None) -> None:
        """Add events at the end, first sealing up to :data:`SEALS_PER_EXTEND` full runs of the
        events before them (never the newest :data:`CHUNK`, never the ones this call adds).

        ``source``: another list holding the same events at the same
        positions (the run's branch whose events a store caches). A run this
        list seals whose objects ``source`` lately sealed, or decoded from its
        chunk, is not sealed again: the two lists share ``source``'s chunk.
        """
        self._seal(SEALS_PER_EXTEND, source)
        self._parts[2].extend(events)

    def _seal(self, limit: int | None, source: EventList | None = None) -> None:
        """Seal the oldest full runs of the events held as objects (at most ``limit``), but the newest."""
        chunks, sealed, tail = self._parts
        count = (len(tail) - CHUNK) // CHUNK  # at least CHUNK events stay objects
        if limit is not None:
            count = min(count, limit)
        if count <= 0:
            return
        issued = self._issued
        made: list[_Chunk] = []
        for start in range(0, count * CHUNK, CHUNK):
            run = tail[start : start + CHUNK]
            number = sealed + start // CHUNK
            made.append(_shared(source, number, run) or _sealed(run))
            issued = ((number, run), *issued[: ISSUED_KEPT - 1])
        # a chunk's place in the list is its number: a seal that raised half way (MemoryError,
        # an interrupt) must leave none behind, or every later chunk would sit a place off.
        # What lies past `sealed` is nobody's: each reader reads below its own value's count
        del chunks[sealed:]
        chunks.extend(made)
        self._issued = issued
        self._parts = (chunks, sealed + count, tail[count * CHUNK :])

    def prefix(self, length: int) -> EventList:
        """A new list of the first ``length`` events (whole chunks shared, not decoded)."""
        parts = self._parts
        chunks, sealed, _ = parts
        whole = min(length // CHUNK, sealed)
        other = EventList()
        rest = list(self._range(parts, whole * CHUNK, length))
        other._parts = (chunks[:whole], whole, rest)
        return other


def _shared(source: EventList | None, number: int, run: list[Event]) -> _Chunk | None:
    """``source``'s chunk ``number`` when each object in ``run`` is one ``source`` lately handed
    out for that chunk's place: sealed it from (the run's branch, a store's cache committing each
    step before the next), or decoded it into (a commit that came after the run sealed them)."""
    if source is None:
        return None
    chunks, count, _ = source._parts
    if number >= count:
        return None
    handed = [objects for held, objects in source._issued if held == number]
    if not handed:
        return None
    for i, event in enumerate(run):
        if not any(objects[i] is event for objects in handed):
            return None
    return chunks[number]


def _exactly(a: Any, b: Any) -> bool:
    """Whether two events (or values in them) are the same value of the same types, all the way down."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is dict:
            # same keys in the same order, of the same types: a str subclass (a StrEnum
            # member) is a storable key equal to its text, and the trip makes it a str
            if list(x) != list(y) or list(map(type, x)) != list(map(type, y)):
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
        elif kind in _STRUCTS:
            stack.extend((getattr(x, s), getattr(y, s)) for s in kind.__slots__)
        elif x != y:  # str, int, bool, None; anything else only if equal by its own rule
            return False
    return True
