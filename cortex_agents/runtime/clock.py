"""Clocks: the runtime reads time only through one, so runs can replay byte for byte."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cortex_agents.timestamps import require_aware

__all__ = ["Clock", "TickingClock", "utc_clock"]

Clock = Callable[[], datetime]
"""A function returning the current time as an aware UTC datetime."""


def utc_clock() -> datetime:
    """The system clock, in UTC."""
    return datetime.now(UTC)


class TickingClock:
    """A deterministic clock: ``start``, then ``start + step``, ``start + 2 step``, ...

    Thread-safe: parallel stages each get a distinct, increasing time.
    """

    def __init__(self, start: datetime, step: timedelta = timedelta(seconds=1)) -> None:
        self._next = require_aware(start, "start")
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now = self._next
            self._next += self._step
            return now
