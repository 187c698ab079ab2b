"""A read-only view of one thread's substrate, with seed 004's query helpers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from cortex_agents._timestamps import require_aware
from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._transfer import UnknownThread, latest_time, thread_config
from cortex_agents.substrate import _queries as queries
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId, NodeRecord
from cortex_agents.substrate._state import GraphState

__all__ = ["SubstrateView", "open_view"]


@dataclass(frozen=True, slots=True)
class SubstrateView:
    """A thread's substrate at one checkpoint; every listing has an explicit order.

    Attributes:
        thread_id: The thread.
        log: Its events.
    """

    thread_id: str
    log: SubstrateLog

    @property
    def state(self) -> GraphState:
        """The materialized graph."""
        return self.log.state

    def lineage(
        self, node_id: str, *, max_depth: int = queries.DEFAULT_LINEAGE_DEPTH
    ) -> tuple[tuple[NodeId, int], ...]:
        """Ancestors by BFS, ``(node, depth)`` ordered by ``(depth, id)``."""
        return queries.lineage(self.state, node_id, max_depth=max_depth)

    def neighbors(
        self, node_id: str, direction: Literal["upstream", "downstream", "both"] = "both"
    ) -> tuple[NodeId, ...]:
        """Direct neighbors, sorted by id."""
        return queries.neighbors(self.state, node_id, direction)

    def recent(self, limit: int, *, kind: str | None = None) -> tuple[NodeRecord, ...]:
        """The ``limit`` most recently settled nodes, newest first."""
        return queries.recent(self.state, limit, kind=kind)

    def since(self, timestamp: datetime, *, kind: str | None = None) -> tuple[NodeRecord, ...]:
        """Nodes settled at or after ``timestamp``, oldest first."""
        return queries.since(self.state, timestamp, kind=kind)

    def by_tag(self, tag: str) -> tuple[NodeRecord, ...]:
        """Nodes carrying ``tag``, in scheduling time order."""
        return queries.by_tag(self.state, tag)

    def snapshot(self, as_of: datetime | None = None, *, seq: int | None = None) -> MemorySnapshot:
        """The memory snapshot of the substrate as of a time or an event count.

        Args:
            as_of: Keep the events at or before this time; it is also the
                snapshot's reference time. Default: the newest event's time.
            seq: Keep the first ``seq`` events instead (exact, for replay).

        Raises:
            InvalidArgument: both ``as_of`` and ``seq`` are given, or ``seq`` is out of range.
        """
        if as_of is not None and seq is not None:
            raise InvalidArgument("as_of", "cannot be combined with `seq`", as_of)
        if seq is not None:
            prefix = self.log.prefix(seq)
            reference = latest_time(prefix) if seq else latest_time(self.log)
            return MemorySnapshot.from_state(prefix.state, reference, run_id=self.thread_id)
        if as_of is None:
            return MemorySnapshot.from_state(
                self.state, latest_time(self.log), run_id=self.thread_id
            )
        cut = require_aware(as_of, "as_of")
        state = fold(event for event in self.log if event.at <= cut)
        return MemorySnapshot.from_state(state, cut, run_id=self.thread_id)


def open_view(
    saver: CortexSaver, thread_id: str, *, checkpoint_id: str | None = None
) -> SubstrateView:
    """The view of a thread at a checkpoint (its latest by default).

    Raises:
        UnknownThread: the thread has no checkpoint with a substrate.
    """
    log = saver.substrate(thread_config(thread_id, checkpoint_id))
    if log is None:
        raise UnknownThread(thread_id)
    return SubstrateView(thread_id, log)
