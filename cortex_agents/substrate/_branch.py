"""One branch of a run: its events, and everything derived from them, extended incrementally.

A :class:`Branch` is the storage shared by every
:class:`~cortex_agents.substrate.SubstrateLog` view of one log. It owns,
under one lock and one bound each:

* the events (append-only; a view sees a prefix), every full run of them but
  the newest held as one compressed chunk
  (:class:`~cortex_agents.substrate._packed.EventList`: read back exactly, rebuilt);
* the **chain hash** of every prefix: ``digest[i] = H(digest[i-1] ||
  canonical(event[i]))`` (BLAKE2b, 16 bytes; the empty log's is 16 zero
  bytes). Two logs with equal chain hashes hold the same events in the same
  order, so a log, a stage's frontier and a checkpoint's substrate are
  identified by content, never by length plus a last event;
* the **latest event time** of every prefix (a running maximum), so the
  runtime's clock never scans the log;
* the **materialized state** of a few lengths (:data:`STATE_CACHE`, least
  recently used first out), so a longer view folds only what it adds;
* **derived structures** (:class:`Derived`): anything else a consumer wants
  kept incrementally per branch, e.g. the memory index
  (:mod:`cortex_agents.memory._index`) or what a graph-bound tool links after
  (one per stage kind). Each is extended by the events it has not seen, up
  to the length asked for, and answers for any prefix it has seen — binding
  a snapshot costs O(new events). At most :data:`MAX_DERIVED` are kept, least
  recently used first out: an evicted one is built again from the events when
  next asked for (correct, only slower), so no number of keys a workflow
  uses is an error. A structure that can copy itself as of a prefix
  (``fork(length)``) is carried over to a branch forked from this one, so a
  fork does not re-read the events it shares.

Digests and times are computed lazily, on first use, for the events not yet
covered: a branch nobody asks for a hash pays nothing.

The states, the derived structures and the latest appends' event dicts are
three kinds (:data:`STATES`, :data:`DERIVED`, :data:`FORMS`) of the branch's
one :class:`~cortex_agents.substrate._budget.DerivedBudget` (:attr:`Branch.budget`),
each within its own limit and all within one capacity. A derived structure
keeps its own sub-caches there too, under kinds of their own (the memory
index's: :data:`INDEX_LIMITS`). Digests and times are
not in it: they are the branch's data, one entry per event, like the events.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Protocol, TypeVar

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._budget import DerivedBudget
from cortex_agents.substrate._events import Event, event_to_dict
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._packed import EventList
from cortex_agents.substrate._state import EMPTY_STATE, GraphState

__all__ = [
    "DERIVED",
    "DIGEST_SIZE",
    "EMPTY_DIGEST",
    "FORMS",
    "FORMS_KEPT",
    "INDEX_ADJACENCY",
    "INDEX_ASKED",
    "INDEX_FIELDS",
    "INDEX_LIMITS",
    "MAX_DERIVED",
    "STATES",
    "STATE_CACHE",
    "Branch",
    "Derived",
    "canonical_event",
    "chain_digest",
]

DIGEST_SIZE: Final = 16
EMPTY_DIGEST: Final = bytes(DIGEST_SIZE)
STATE_CACHE: Final = 4
"""Materialized states kept per branch (the empty state is free and not counted)."""
FORMS_KEPT: Final = 32
"""Appends per branch whose event dicts are kept for reuse (see :meth:`Branch.forms`)."""
MAX_DERIVED: Final = 16
"""Derived structures one branch keeps (least recently used evicted first; rebuilt when asked for)."""
STATES: Final = "state"
"""The budget kind of materialized states, keyed by prefix length."""
DERIVED: Final = "derived"
"""The budget kind of derived structures, keyed by the consumer's key."""
FORMS: Final = "forms"
"""The budget kind of the latest appends' event dicts, keyed by where each append started."""
INDEX_FIELDS: Final = "index.fields"
"""The budget kind of what a memory index keeps per extractor (its fields), 8 kept."""
INDEX_ADJACENCY: Final = "index.adjacency"
"""The budget kind of a memory index's compiled adjacency matrices, 4 kept."""
INDEX_ASKED: Final = "index.asked"
"""The budget kind of how often a memory index was asked for an edge set's matrix, 64 kept."""
INDEX_LIMITS: Final[Mapping[str, int]] = MappingProxyType(
    {INDEX_FIELDS: 8, INDEX_ADJACENCY: 4, INDEX_ASKED: 64}
)
"""The limits of the memory index's kinds, in a branch's budget or an index's own (issue 25).

Named here, below the index, so a branch's budget has room for them from the
start: the index (:mod:`cortex_agents.memory._index_columns`) names them, the
branch never names the index."""
BRANCH_BUDGET: Final = STATE_CACHE + MAX_DERIVED + FORMS_KEPT + sum(INDEX_LIMITS.values())
"""A branch's budget capacity: every kind's limit fits at once, so no kind evicts another's."""

T = TypeVar("T", covariant=True)


# one encoder for every hash: ``json.dumps`` with options builds a new one per call
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_event(event: Event, form: Mapping[str, Any] | None = None) -> bytes:
    """The bytes an event contributes to a chain hash: its JSON form, keys sorted, UTF-8.

    ``form``: the event's :func:`~cortex_agents.substrate.event_to_dict`
    already made (it is not made again).

    Raises:
        InvalidArgument: the event holds a value that cannot be stored.
    """
    return _CANONICAL.encode(event_to_dict(event) if form is None else form).encode("utf-8")


def chain_digest(previous: bytes, event: Event, form: Mapping[str, Any] | None = None) -> bytes:
    """The chain hash after ``event``, given the hash of everything before it (``form``: as
    :func:`canonical_event`)."""
    digest = hashlib.blake2b(previous, digest_size=DIGEST_SIZE)
    digest.update(canonical_event(event, form))
    return digest.digest()


class Derived(Protocol[T]):
    """A structure a branch extends incrementally (the seam for e.g. a memory index).

    Attributes:
        length: How many of the branch's events it has taken in.
    """

    length: int

    def extend(self, events: Sequence[Event], state: GraphState) -> None:
        """Take in the next ``events``; ``state`` is the materialized state after them.

        Raise rather than skip an event it cannot apply: a silently stale
        structure is worse than a failed one.
        """

    def at(self, length: int) -> T:
        """An immutable view of the structure as of the first ``length`` events (<= ``self.length``)."""

    # Optional: ``fork(length, budget) -> Derived[T]``, a new structure of the first
    # ``length`` events (<= ``self.length``), for a branch forked there, keeping its own
    # sub-caches in ``budget``, the fork's (see :meth:`Branch.fork`).


class Branch:
    """Events of one log and what is derived from them; shared by every view.

    A *sealed* branch belongs to a storage cache: views never extend it in
    place (appending copies), so only committed events ever enter it.

    Attributes:
        budget: Everything kept derived from the events (states, structures,
            event dicts), bounded; the branch is the only thing that fills it.
        lock: Taken for the events' growth and a derived structure's extension;
            the budget's own lock may be taken while holding it, never the reverse.
    """

    # ``__weakref__``: what holds a branch alive can be checked (a saver holds none)
    __slots__ = (
        "__weakref__",
        "_digests",
        "_latest",
        "_source",
        "budget",
        "events",
        "lock",
        "sealed",
    )

    def __init__(self, events: Iterable[Event] = (), *, sealed: bool = False) -> None:
        self.events = EventList(events)
        self.lock = threading.RLock()
        self.sealed = sealed
        self._digests = bytearray()
        self._latest: list[datetime] = []
        self.budget = DerivedBudget(
            BRANCH_BUDGET,
            limits={STATES: STATE_CACHE, DERIVED: MAX_DERIVED, FORMS: FORMS_KEPT, **INDEX_LIMITS},
        )
        # the latest append: where it started, and what its events were made from
        self._source: tuple[int, tuple[object, ...]] | None = None

    def __len__(self) -> int:
        return len(self.events)

    # -- growth --------------------------------------------------------------------------
    def extend(self, events: Sequence[Event], source: Branch | None = None) -> None:
        """Add events at the end (the caller has checked they may follow).

        ``source``: a branch holding the same events at the same positions
        (the run's, whose committed events a store caches): a chunk it sealed
        from these very event objects is shared, not sealed again.
        """
        with self.lock:
            self.events.extend(events, None if source is None else source.events)

    def fork(self, length: int, events: Sequence[Event]) -> Branch:
        """A new, unsealed branch: this one's first ``length`` events, then ``events``.

        Hashes and times already computed for the shared prefix are copied,
        not recomputed; the nearest cached state within the shared prefix is
        shared (states are immutable), so the fork folds from there, not from
        the first event; a derived structure that can ``fork`` is carried over
        as of the shared prefix (the others start afresh).
        """
        with self.lock:
            other = Branch()
            other.events = self.events.prefix(length)  # whole chunks shared, not decoded
            other.events.extend(events)
            other._digests = self._digests[: DIGEST_SIZE * length]
            other._latest = self._latest[:length]
            base, state = self._nearest_state(length)
            if base:
                other.budget.put(STATES, base, state)
            for key, structure in self.budget.items(DERIVED):
                carry = getattr(structure, "fork", None)
                if carry is not None:
                    # the carried structure keeps its sub-caches in the fork's budget
                    forked = carry(min(length, structure.length), other.budget)
                    other.budget.put(DERIVED, key, forked)
        return other

    def record_source(
        self,
        start: int,
        items: tuple[object, ...],
        forms: tuple[dict[str, Any], ...] | None = None,
    ) -> None:
        """Remember the objects the events after ``start`` were made from (the latest append's only).

        ``forms``: the events' JSON dicts (:func:`~cortex_agents.substrate.event_to_dict`),
        made while checking them: what a step writes, hashes and stores is then
        converted once (see :meth:`forms`).
        """
        with self.lock:
            self._source = (start, items)
            if forms:
                self.budget.put(FORMS, start, forms)

    def made_from(self, start: int, items: Sequence[object]) -> bool:
        """Whether the latest append made the events after ``start`` from these very objects.

        Compared by identity: the same list of events or event dicts handed
        to the reducer twice (LangGraph applies a step's writes once for its
        conditional edges, then to the channel) is adopted without being
        converted and compared again. So is the list of the dicts the latest
        append made of its events (:meth:`forms`: what a stage writes to the
        channel). An event dict changed in place between the two calls is not
        seen: what the first call made is kept.
        """
        with self.lock:
            source = self._source
        forms = self.budget.peek(FORMS, start) if source is not None else None
        if source is None or source[0] != start:
            return False
        return any(
            made is not None
            and len(made) == len(items)
            and all(a is b for a, b in zip(made, items, strict=True))
            for made in (source[1], forms)
        )

    def forms(self, start: int, end: int) -> tuple[dict[str, Any], ...] | None:
        """The JSON dicts of events ``start..end``, if one of the latest appends made exactly those.

        The last :data:`FORMS_KEPT` appends' are kept: a checkpoint that stores
        a step's events may be written after the next steps ran (LangGraph's
        ``durability="async"``). ``None``: not known (convert the events). The
        dicts are shared: read them, never change them.
        """
        forms = self.budget.peek(FORMS, start)
        return forms if forms is not None and start + len(forms) == end else None

    # -- materialized state --------------------------------------------------------------
    def state(self, length: int) -> GraphState:
        """The materialized state of the first ``length`` events.

        Folds from the longest cached state not beyond ``length``; the result
        is cached (least recently used states are evicted past :data:`STATE_CACHE`).
        """
        cached: GraphState | None = self.budget.get(STATES, length)
        if cached is not None:
            return cached
        base, start = self._nearest_state(length)
        with self.lock:
            pending = self.events[base:length]
        return self.remember(length, fold(pending, start))  # outside every lock: folding is pure

    def _nearest_state(self, length: int) -> tuple[int, GraphState]:
        """The longest cached state not beyond ``length`` (the empty one if none), and its length."""
        for base in sorted((k for k in self.cached_states() if k <= length), reverse=True):
            state: GraphState | None = self.budget.peek(STATES, base)
            if state is not None:  # else evicted since the keys were read: try a shorter one
                return base, state
        return 0, EMPTY_STATE

    def remember(self, length: int, state: GraphState) -> GraphState:
        """Cache the state of the first ``length`` events (bounded, least recently used out).

        Returns the state kept: one another thread cached for ``length``
        meanwhile wins (the same fold of the same events).
        """
        if not length:
            return state  # the empty state is a constant
        kept: GraphState = self.budget.put(STATES, length, state)
        return kept

    def cached_states(self) -> tuple[int, ...]:
        """Lengths whose state is cached, least recently used first (diagnostics and tests)."""
        return tuple(k for k in self.budget.keys(STATES) if isinstance(k, int))

    def sizes(self) -> dict[str, int]:
        """What the branch's budget holds, per kind (:meth:`DerivedBudget.sizes`)."""
        return self.budget.sizes()

    # -- identity and time ---------------------------------------------------------------
    def digest(self, length: int) -> bytes:
        """The chain hash of the first ``length`` events (O(events not hashed yet))."""
        if not length:
            return EMPTY_DIGEST
        with self.lock:
            have = len(self._digests) // DIGEST_SIZE
            if have < length:
                previous = bytes(self._digests[-DIGEST_SIZE:]) if have else EMPTY_DIGEST
                # the dicts the latest append made checking its events are not made again
                start = -1 if self._source is None else self._source[0]
                forms = self.budget.peek(FORMS, start) or ()
                for i, event in enumerate(self.events.range(have, length), have):
                    form = forms[i - start] if start <= i < start + len(forms) else None
                    previous = chain_digest(previous, event, form)
                    self._digests += previous
            end = DIGEST_SIZE * length
            return bytes(self._digests[end - DIGEST_SIZE : end])

    def latest(self, length: int) -> datetime | None:
        """The newest event time among the first ``length`` events (``None`` when empty)."""
        if not length:
            return None
        with self.lock:
            have = len(self._latest)
            if have < length:
                newest = self._latest[-1] if have else None
                for event in self.events.range(have, length):
                    if newest is None or event.at > newest:
                        newest = event.at
                    self._latest.append(newest)
            return self._latest[length - 1]

    # -- derived structures --------------------------------------------------------------
    def derived(self, key: Hashable, factory: Callable[[], Derived[T]], length: int) -> T:
        """The structure registered under ``key``, as of the first ``length`` events.

        Created by ``factory`` on first use (or again, after it was evicted),
        then extended by the events it has not taken in yet (up to
        ``length``), under the branch's lock. Past :data:`MAX_DERIVED`
        structures, the least recently used one is evicted.

        Raises:
            InvalidArgument: the structure did not take in the events it was given.
        """
        with self.lock:  # the structure grows under the branch's lock, the map under the budget's
            structure: Derived[T] | None = self.budget.get(DERIVED, key)
            if structure is None:
                # an evicted structure's views stay valid: they hold it
                structure = self.budget.put(DERIVED, key, factory())
            if structure.length < length:
                structure.extend(self.events[structure.length : length], self.state(length))
                if structure.length != length:
                    raise InvalidArgument(
                        "derived structure",
                        f"must have taken in {length} events after extend, has {structure.length}",
                        key,
                    )
            return structure.at(length)
