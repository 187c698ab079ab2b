"""The memory handle: a stage's bound, memoised view of its snapshot.

Also the seam a tool reads memory through: :class:`HasMemory` is any context
that carries a handle (a stage's ``StageContext``, or a hand-built one), and
:meth:`MemoryHandle.rank_request` answers a caller's request — a tool call's
arguments, every one optional — in one call, resolved against the stage's
declared strategy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._engine import QueryMemo, rank_vectorised
from cortex_agents.memory._match import Match, Ranking
from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._spec import Direction, Query, Scope, WalkSpec, _check_int
from cortex_agents.memory._strategy import Classic, MemoryStrategy, Topological, declared_preset

__all__ = ["HasMemory", "MemoryHandle", "RankedRequest"]

_RESOLVED: Final = (
    "preset",
    "direction",
    "scope",
    "routing_key",
    "query_text",
    "max_graph_distance",
    "limit",
    "scorer",
    "projection",
    "second_pass",
    "diversity",
    "mmr_lambda",
)
"""Every key :meth:`MemoryHandle.rank_request` resolves itself; ``extra`` may not name one."""


def _check_request(
    max_limit: object,
    preset: object,
    max_graph_distance: object,
    limit: object,
    extra: Mapping[str, Any] | None,
) -> None:
    """Refuse what :meth:`MemoryHandle.rank_request` would otherwise read as "not given".

    ``0`` and ``""`` are falsy: without these checks they fell back to the
    preset's value, and an ``extra`` key could overwrite a resolved one, so
    the recorded arguments no longer said what ran.
    """
    _check_int("max_limit", max_limit, 1)
    if preset is not None and (not isinstance(preset, str) or not preset):
        raise InvalidArgument(
            "preset", "must be a non-empty preset name, or None for the stage's own", preset
        )
    if max_graph_distance is not None:
        _check_int("max_graph_distance", max_graph_distance, 1)
    if limit is not None:
        _check_int("limit", limit, 1)
    clashes = sorted(set(extra or ()) & set(_RESOLVED))
    if clashes:
        raise InvalidArgument(
            "extra",
            f"must not name a resolved argument ({', '.join(f'`{k}`' for k in _RESOLVED)})",
            clashes,
        )


def _resolved(
    request: Mapping[str, Any],
    spec: WalkSpec,
    scorer: str,
    projection: str | None,
    extra: Mapping[str, Any],
    declared: Topological | None,
) -> dict[str, Any]:
    """Every argument a request resolved to, in the order recorded results have always had."""
    resolved: dict[str, Any] = {
        "preset": request["preset"],
        "direction": spec.direction,
        "scope": spec.scope,
        "routing_key": request["routing_key"],
        "query_text": request["query_text"],
        "max_graph_distance": spec.max_distance,
        "limit": spec.limit,
        "scorer": scorer,
        "projection": projection,
        **extra,
    }
    if declared and declared.second_pass is not None:  # only then: older results unchanged
        resolved["second_pass"] = declared.second_pass
    if declared and declared.diversity is not None:  # likewise
        resolved["diversity"] = declared.diversity
        resolved["mmr_lambda"] = spec.mmr_lambda
    return resolved


@runtime_checkable
class HasMemory(Protocol):
    """A context that carries a stage's memory handle, as ``memory``.

    A stage's :class:`~cortex_agents.runtime.StageContext` is one; so is any
    object with a ``memory`` attribute (a test's or a script's own context).
    Runtime-checkable: ``isinstance(context, HasMemory)`` asks only whether
    ``context`` has a ``memory`` attribute, as a tool checks its
    ``ToolRuntime.context``.
    """

    @property
    def memory(self) -> MemoryHandle:
        """The handle over the snapshot bound at stage entry."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RankedRequest:
    """A request ranked by :meth:`MemoryHandle.rank_request`, and what it resolved to.

    Attributes:
        ranking: The first ``spec.limit`` matches and the number of candidates.
        spec: The walk spec that ran (the preset's, the stage's opt-in passes, the request's
            overrides).
        preset: The preset the request ran (its own, else the stage's declared one).
        projection: The stage's declared projection, if any (each match carries it).
        resolved: Every resolved argument, in a fixed order, enough to recompute the
            ranking from the snapshot: ``preset``, ``direction``, ``scope``,
            ``routing_key``, ``query_text``, ``max_graph_distance``, ``limit``,
            ``scorer``, ``projection``, the caller's ``extra`` entries, then
            ``second_pass`` and ``diversity`` / ``mmr_lambda`` only when the
            stage opts in (so results without them keep their keys).
    """

    ranking: Ranking
    spec: WalkSpec
    preset: str
    projection: str | None
    resolved: dict[str, Any]


class MemoryHandle:
    """One snapshot, bound once, queried many times.

    Which method to call: :meth:`query` is the one way to rank — a walk spec
    and a query, both explicit (``None``: the defaults), from the handle's
    origin. The others are shorthands over the same engine and memo, each for
    one caller:

    - :meth:`recall`: a stage's own declared query (what ``ctx.recall()``
      runs): its strategy's preset, opt-in passes and scorer, resolved for
      you. Classic stages recall nothing.
    - :meth:`rank_request`: the seam for tools — a request whose arguments
      are all optional, resolved against the stage's strategy, returned with
      every argument it resolved to, so a result can be recomputed. Its
      ``ranking.total`` is the number of candidates before the limit, which
      is ``len(query(...))`` with the same spec and ``limit=None``.
    - :meth:`query_for`: not a ranking; the :class:`Query` a preset gives in
      this stage, to pass to :meth:`query`.

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
        return self._rank(spec, query, origin=origin).matches

    def _rank(
        self, spec: WalkSpec | None, query: Query | None, *, origin: str | None = None
    ) -> Ranking:
        """:meth:`query`, with the number of candidates before the limit (``Ranking.total``).

        Private so the handle has one public verb to rank with: callers that
        need the count get it from :meth:`rank_request`, the tools' seam.
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

    def rank_request(
        self,
        *,
        max_limit: int,
        preset: str | None = None,
        direction: Direction | None = None,
        routing_key: str | None = None,
        query_text: str | None = None,
        max_graph_distance: int | None = None,
        limit: int | None = None,
        scope: Scope = "settled_only",
        extra: Mapping[str, Any] | None = None,
    ) -> RankedRequest:
        """Resolve a request against this stage's strategy, rank it, and say what it resolved to.

        What a tool call runs, in one call: the request's preset, else the
        stage's declared one (``default`` for a classic stage); that preset's
        walk spec with the stage's declared second pass and diversity switched
        on; the request's ``direction``, ``scope``, ``max_graph_distance`` and
        ``limit`` over it (the limit: the request's, else the preset's, else
        ``max_limit``, never more than ``max_limit``); the query of
        :meth:`query_for` (the stage's declared scorer and projection win over
        the preset's). A routing key is never inherited from the stage, so a
        caller can broaden the filter.

        Args:
            max_limit: The most matches one request materialises.
            preset: The preset to run; ``None``: the stage's declared one.
            direction: Overrides the preset's direction.
            routing_key: Keep only matches with this routing key (never the stage's).
            query_text: Words to match against each match's text.
            max_graph_distance: Overrides the preset's ``max_distance``.
            limit: Overrides the preset's limit (still at most ``max_limit``).
            scope: ``settled_only``, or ``debug_all_statuses`` for developers.
            extra: Entries the caller records with the resolved arguments (a
                tool's token budget), placed after ``projection``.

        Raises:
            UnknownPreset: no such preset.
            InvalidArgument: ``max_limit``, ``limit`` or ``max_graph_distance`` is not an
                integer >= 1; ``preset`` is empty; an ``extra`` key names a resolved
                argument; or an override breaks another rule of :class:`WalkSpec`.
                Checked before anything is ranked.
            UnknownScorer, ScorerUnavailable: the scorer is not registered or cannot load.
            UnknownProjection: the declared projection is not registered.
            UnknownNode: the handle's origin is not in the snapshot.
        """
        _check_request(max_limit, preset, max_graph_distance, limit, extra)
        name = preset if preset is not None else declared_preset(self.strategy)
        declared = self.strategy if isinstance(self.strategy, Topological) else None
        spec = self.presets.spec(name)
        spec = declared.passes(spec) if declared else spec  # its second pass, when it opts in
        overrides: dict[str, Any] = {
            "direction": direction,
            "scope": scope,
            "max_distance": max_graph_distance,
            "limit": min(limit if limit is not None else (spec.limit or max_limit), max_limit),
        }
        spec = dataclasses.replace(spec, **{k: v for k, v in overrides.items() if v is not None})
        query = self.query_for(name, text=query_text, routing_key=routing_key)
        ranking = self._rank(spec, query)
        projection = declared.projection if declared else None
        scorer = (declared.scorer if declared else None) or self.presets.resolve(name).scorer
        request = {"preset": name, "routing_key": routing_key, "query_text": query_text}
        resolved = _resolved(request, spec, scorer, projection, extra or {}, declared)
        return RankedRequest(
            ranking=ranking, spec=spec, preset=name, projection=projection, resolved=resolved
        )

    @property
    def influence_computations(self) -> int:
        """How many influence maps this handle has computed (not served from memo)."""
        return self._memo.influence_computations
