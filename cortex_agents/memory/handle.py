"""The memory handle: a stage's bound, memoised view of its snapshot."""

from __future__ import annotations

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory.engine import QueryMemo, rank_vectorised
from cortex_agents.memory.match import Match, Ranking
from cortex_agents.memory.presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory.snapshot import MemorySnapshot
from cortex_agents.memory.spec import Query, WalkSpec
from cortex_agents.memory.strategy import Classic, MemoryStrategy, Topological

__all__ = ["MemoryHandle"]


class MemoryHandle:
    """One snapshot, bound once, queried many times.

    The handle memoises walks per ``(origin, direction)`` and influence maps
    per ``(origin, direction, alpha)``, so a tool loop that queries memory
    repeatedly in one stage computes each map once.

    Args:
        snapshot: The snapshot bound at stage entry.
        origin: The stage's node id, used when a query names no origin.
        presets: The preset registry the stage's strategy and tools resolve in.
        strategy: The stage's declared memory strategy.
    """

    __slots__ = ("_memo", "origin", "presets", "snapshot", "strategy")

    def __init__(
        self,
        snapshot: MemorySnapshot,
        origin: str | None = None,
        *,
        presets: PresetRegistry = BUILTIN_PRESETS,
        strategy: MemoryStrategy | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.origin = origin
        self.presets = presets
        self.strategy: MemoryStrategy = strategy if strategy is not None else Classic()
        self._memo = QueryMemo()

    def query(
        self, spec: WalkSpec | None = None, query: Query | None = None, *, origin: str | None = None
    ) -> tuple[Match, ...]:
        """Rank memory from ``origin`` (default: the handle's origin).

        Raises:
            InvalidArgument: neither the call nor the handle names an origin.
            UnknownNode: the origin is not in the snapshot.
            CycleError: the snapshot's topology has a cycle.
        """
        return self.rank(spec, query, origin=origin).matches

    def rank(
        self, spec: WalkSpec | None = None, query: Query | None = None, *, origin: str | None = None
    ) -> Ranking:
        """:meth:`query`, with the number of candidates before the limit (``Ranking.total``).

        Raises:
            InvalidArgument: neither the call nor the handle names an origin.
            UnknownNode: the origin is not in the snapshot.
            CycleError: the snapshot's topology has a cycle.
        """
        start = origin if origin is not None else self.origin
        if start is None:
            raise InvalidArgument("origin", "is required when the handle has none", None)
        return rank_vectorised(self.snapshot, start, spec, query, memo=self._memo)

    def recall(self, text: str | None = None) -> tuple[Match, ...]:
        """The stage's own query, as its declared strategy resolves it.

        Args:
            text: What the stage is about (a reviewer's focus), for the semantic axis.

        Classic stages recall nothing: they see their direct inputs only.
        """
        if not isinstance(self.strategy, Topological):
            return ()
        spec, query = self.strategy.resolve(self.presets, text=text)
        return self.query(spec, query)

    def query_for(
        self, preset: str, *, text: str | None = None, routing_key: str | None = None
    ) -> Query:
        """The :class:`Query` a tool call naming ``preset`` runs in this stage.

        The preset gives the scorer and kind filters; a topological stage that
        declares ``scorer`` overrides the preset's for every call, and one that
        declares ``projection`` reads every output through it; the call gives
        ``text`` and ``routing_key``.

        Raises:
            UnknownPreset: no such preset.
            UnknownScorer, ScorerUnavailable: the scorer is not registered or cannot load.
            UnknownProjection: the declared projection is not registered.
        """
        declared = self.strategy if isinstance(self.strategy, Topological) else None
        return self.presets.query(
            preset,
            text=text,
            routing_key=routing_key,
            scorer=declared.scorer if declared else None,
            projection=declared.projection if declared else None,
        )

    @property
    def influence_computations(self) -> int:
        """How many influence maps this handle has computed (not served from memo)."""
        return self._memo.influence_computations
