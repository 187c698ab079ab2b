"""Clocks: the runtime reads time only through one, so runs can replay byte for byte."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cortex_agents._timestamps import require_aware

__all__ = ["Clock", "LogicalClock", "TickingClock", "utc_clock"]

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


class LogicalClock:
    """Deterministic time, even with stages running in parallel.

    The runtime asks it for a clock per stage (:meth:`for_stage`): stage ``p``
    of the frontier that starts at substrate length ``f`` reads
    ``start + f * frontier_step + p * stage_step``, then one ``tick`` more at
    each read. Whatever order threads run in, every event gets the same time
    in every run — which is what lets recorded LLM exchanges replay, since
    memory scores (and so prompts) depend on times. Reads outside a stage
    (the scheduler's) tick on from ``start``.
    """

    def __init__(
        self,
        start: datetime,
        *,
        frontier_step: timedelta = timedelta(seconds=10),
        stage_step: timedelta = timedelta(seconds=1),
        tick: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self.start = require_aware(start, "start")
        self.frontier_step = frontier_step
        self.stage_step = stage_step
        self.tick = tick
        self._outside = TickingClock(self.start, tick)

    def __call__(self) -> datetime:
        return self._outside()

    def for_stage(self, frontier: int, position: int) -> Clock:
        """The clock of one stage: its own deterministic time line."""
        return TickingClock(
            self.start + frontier * self.frontier_step + position * self.stage_step, self.tick
        )
