"""One bounded, least-recently-used budget for everything a branch derives from its events.

A :class:`DerivedBudget` is one map from ``(kind, key)`` to a value: ``kind``
names what is kept (``"state"``, ``"derived"``, ``"forms"``, ...) and ``key``
is what that kind is looked up by (a prefix length, a consumer's key). Every
value is a function of the branch's events, so losing one is never wrong,
only slower: :meth:`DerivedBudget.put` evicts the least recently used entries
until the new one fits, and never raises.

Lock discipline: the budget's lock guards the map and nothing else. A caller
derives a value *outside* it and offers it with :meth:`~DerivedBudget.put`;
when another thread put a value under the same key meanwhile, that one is
kept and the caller's duplicate discarded (both are the same function of the
same events). A structure with a lock of its own (the branch's) may take the
budget's while holding it, never the reverse: one order, so no two threads
wait on each other.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any, Final

from cortex_agents.errors import InvalidArgument

__all__ = ["DerivedBudget"]

_MISSING: Final = object()


class DerivedBudget:
    """A bounded map ``(kind, key) -> value`` with weights and least-recently-used eviction.

    Args:
        capacity: The total weight held at most (every kind together).
        limits: Per kind, how many entries it keeps at most: a kind past its
            limit gives up its own least recently used entry first, so a burst
            of one kind (many small appends) does not push out another (the
            memory index). A kind without a limit is bounded by ``capacity`` only.

    Raises:
        InvalidArgument: ``capacity`` or a limit is below 1.
    """

    # ``__weakref__``: a structure it keeps may refer back to it weakly (no cycle)
    __slots__ = ("__weakref__", "_capacity", "_entries", "_kinds", "_limits", "_lock", "_weight")

    def __init__(self, capacity: int, *, limits: Mapping[str, int] | None = None) -> None:
        if capacity < 1:
            raise InvalidArgument("capacity", "must be at least 1", capacity)
        for kind, limit in (limits or {}).items():
            if limit < 1:
                raise InvalidArgument(f"limits[{kind!r}]", "must be at least 1", limit)
        self._capacity = capacity
        self._limits = dict(limits or {})
        # (kind, key) -> (value, weight), least recently used first
        self._entries: OrderedDict[tuple[str, Hashable], tuple[Any, int]] = OrderedDict()
        self._weight = 0
        # each kind's keys in the same order, so a kind's oldest is found without a scan
        self._kinds: dict[str, OrderedDict[Hashable, None]] = {}
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """The total weight this budget holds at most."""
        return self._capacity

    def get(self, kind: str, key: Hashable) -> Any | None:
        """The value kept under ``(kind, key)``, now the most recently used (``None``: not kept)."""
        with self._lock:
            entry = self._entries.get((kind, key))
            if entry is None:
                return None
            self._entries.move_to_end((kind, key))
            self._kinds[kind].move_to_end(key)
            return entry[0]

    def peek(self, kind: str, key: Hashable) -> Any | None:
        """The value kept under ``(kind, key)``, its place in the eviction order unchanged."""
        with self._lock:
            entry = self._entries.get((kind, key))
            return None if entry is None else entry[0]

    def put(self, kind: str, key: Hashable, value: Any, weight: int = 1) -> Any:
        """Keep ``value`` under ``(kind, key)``; return the value kept there.

        A value already kept under that key stays (a racing thread's
        duplicate is discarded; both derive from the same events) and is
        returned. Otherwise least recently used entries are evicted — first
        of ``kind`` past its limit, then of any kind past the capacity —
        until the new one fits. A value heavier than the whole capacity is
        returned but not kept. Never raises for lack of room.

        Raises:
            InvalidArgument: ``weight`` is below 1.
        """
        if weight < 1:
            raise InvalidArgument("weight", "must be at least 1", weight)
        with self._lock:
            entry = self._entries.get((kind, key))
            if entry is not None:
                self._entries.move_to_end((kind, key))
                self._kinds[kind].move_to_end(key)
                return entry[0]
            if weight > self._capacity:
                return value
            self._entries[(kind, key)] = (value, weight)
            self._weight += weight
            self._kinds.setdefault(kind, OrderedDict())[key] = None
            self._shed(kind)
            return value

    def _shed(self, kind: str) -> None:
        """Evict until ``kind`` is within its limit and the whole within capacity (lock held)."""
        limit = self._limits.get(kind)
        mine = self._kinds[kind]
        if limit is not None and len(mine) > limit:
            self._drop((kind, next(iter(mine))))
        while self._weight > self._capacity:
            self._drop(next(iter(self._entries)))

    def _drop(self, entry: tuple[str, Hashable]) -> None:
        """Remove one entry, keeping the totals (lock held)."""
        self._weight -= self._entries.pop(entry)[1]
        del self._kinds[entry[0]][entry[1]]

    def evict(self, kind: str) -> int:
        """Drop every entry of ``kind`` (e.g. after a rollback); return how many were dropped."""
        with self._lock:
            gone = list(self._kinds.get(kind, ()))
            for key in gone:
                self._drop((kind, key))
            return len(gone)

    def keys(self, kind: str) -> tuple[Hashable, ...]:
        """The keys ``kind`` holds, least recently used first."""
        with self._lock:
            return tuple(self._kinds.get(kind, ()))

    def items(self, kind: str) -> tuple[tuple[Hashable, Any], ...]:
        """``(key, value)`` of every entry of ``kind``, least recently used first (order unchanged)."""
        with self._lock:
            return tuple((key, self._entries[(kind, key)][0]) for key in self._kinds.get(kind, ()))

    def sizes(self) -> dict[str, int]:
        """The weight each kind holds (every limited kind listed, ``0`` when empty)."""
        with self._lock:
            sizes = dict.fromkeys(self._limits, 0)
            for (kind, _), (_, weight) in self._entries.items():
                sizes[kind] = sizes.get(kind, 0) + weight
            return sizes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
