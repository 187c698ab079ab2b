"""Memory strategy, declared per node in the wire (never by a global switch).

* :class:`Classic` — the stage sees its direct inputs only. Its model gets
  no memory tool and runs single-shot. This is the default.
* :class:`Topological` — direct inputs are the Markov-boundary prefill, and
  the model may also query memory. The config names a preset, an optional
  routing key and limit, and the structural arguments that generalise seed
  001's ``retrieveAncestorAnalystBranches``: ``past_boundary="merge"`` walks
  past the nearest merge node, ``upstream_of_kind="analyst"`` keeps analysts.
  ``second_pass="feedback"`` opts every query of the stage into a second
  retrieval pass that reads what the first found
  (:mod:`cortex_agents.memory._feedback`); ``diversity="mmr"`` (with an
  optional ``mmr_lambda``) opts them into a last stage that reorders the
  first candidates by maximal marginal relevance
  (:mod:`cortex_agents.memory._diversity`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._diversity import DIVERSITIES, Diversity, check_mmr_lambda
from cortex_agents.memory._presets import BUILTIN_PRESETS, FEEDBACK, FEEDBACK_DEPTH, PresetRegistry
from cortex_agents.memory._spec import Query, WalkSpec

__all__ = [
    "SECOND_PASSES",
    "Classic",
    "MemoryStrategy",
    "SecondPass",
    "Topological",
    "declared_preset",
]

SecondPass = Literal["feedback"]
SECOND_PASSES: Final[tuple[str, ...]] = get_args(SecondPass)


@dataclass(frozen=True, slots=True)
class Classic:
    """Direct inputs only; no memory tool."""

    name: Literal["classic"] = "classic"


@dataclass(frozen=True, slots=True, kw_only=True)
class Topological:
    """Markov-boundary prefill plus ranked recall of settled work.

    Attributes:
        preset: Name of the preset the stage's queries start from.
        routing_key: Keep only nodes with this routing key in the stage's own query.
        limit: Number of matches the stage's own query keeps.
        past_boundary: Only nodes beyond the nearest node of this kind.
        upstream_of_kind: Only nodes of this kind.
        scorer: A scorer name that replaces the preset's, for every query of
            the stage (its own recall and its model's tool calls).
        projection: A typed projection's name (seed 001, F7): every query of
            the stage reads that slice of each output, and matches carry it.
        second_pass: ``"feedback"``: every query of the stage (its own recall
            and its model's tool calls) also runs the feedback pass
            (``WalkSpec.feedback`` :data:`~cortex_agents.memory._presets.FEEDBACK`,
            ``feedback_depth`` :data:`~cortex_agents.memory._presets.FEEDBACK_DEPTH`)
            on top of its preset; ``None`` (the default) leaves the preset as it is.
        diversity: ``"mmr"``: every query of the stage also reorders its first
            ``WalkSpec.mmr_depth`` candidates by maximal marginal relevance
            (``WalkSpec.diversity``, :mod:`cortex_agents.memory._diversity`);
            ``None`` (the default) leaves the preset's choice as it is.
        mmr_lambda: The relevance weight of that stage, ``0 < mmr_lambda <= 1``;
            ``None`` keeps the preset's ``WalkSpec.mmr_lambda`` (every built-in
            preset's is :data:`~cortex_agents.memory._diversity.MMR_LAMBDA`).
            Only with ``diversity="mmr"``.
    """

    preset: str = "default"
    routing_key: str | None = None
    limit: int | None = None
    past_boundary: str | None = None
    upstream_of_kind: str | None = None
    scorer: str | None = None
    projection: str | None = None
    second_pass: SecondPass | None = None
    diversity: Diversity | None = None
    mmr_lambda: float | None = None
    name: Literal["topological"] = "topological"

    def __post_init__(self) -> None:
        for attr in (
            "preset",
            "routing_key",
            "past_boundary",
            "upstream_of_kind",
            "scorer",
            "projection",
        ):
            value = getattr(self, attr)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidArgument(attr, "must be a non-empty string", value)
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1
        ):
            raise InvalidArgument("limit", "must be an integer >= 1", self.limit)
        if self.second_pass is not None and self.second_pass not in SECOND_PASSES:
            raise InvalidArgument(
                "second_pass",
                f"must be one of {', '.join(map(repr, SECOND_PASSES))} or None",
                self.second_pass,
            )
        if self.diversity is not None and self.diversity not in DIVERSITIES:
            raise InvalidArgument(
                "diversity",
                f"must be one of {', '.join(map(repr, DIVERSITIES))} or None",
                self.diversity,
            )
        if self.mmr_lambda is not None:
            if self.diversity != "mmr":
                raise InvalidArgument(
                    "mmr_lambda", "is only allowed with diversity='mmr'", self.mmr_lambda
                )
            object.__setattr__(self, "mmr_lambda", check_mmr_lambda(self.mmr_lambda))

    def passes(self, spec: WalkSpec) -> WalkSpec:
        """``spec`` with the stage's declared second pass and diversity switched on
        (unchanged without them)."""
        if self.second_pass == "feedback":
            spec = dataclasses.replace(spec, feedback=FEEDBACK, feedback_depth=FEEDBACK_DEPTH)
        if self.diversity == "mmr":  # an unset lambda keeps the preset's (MMR_LAMBDA unless set)
            lam = spec.mmr_lambda if self.mmr_lambda is None else self.mmr_lambda
            spec = dataclasses.replace(spec, diversity="mmr", mmr_lambda=lam)
        return spec

    def resolve(
        self, presets: PresetRegistry = BUILTIN_PRESETS, *, text: str | None = None
    ) -> tuple[WalkSpec, Query]:
        """The stage's own walk spec and query (``text``: what the stage is about).

        Raises:
            UnknownPreset: ``preset`` is not in ``presets``.
            UnknownScorer, ScorerUnavailable: the scorer is not registered or cannot load.
            UnknownProjection: the projection is not registered.
        """
        overrides: dict[str, Any] = {}
        if self.limit is not None:
            overrides["limit"] = self.limit
        if self.past_boundary is not None:
            overrides["past_boundary"] = self.past_boundary
        spec = self.passes(presets.spec(self.preset))
        spec = dataclasses.replace(spec, **overrides) if overrides else spec
        kinds = frozenset({self.upstream_of_kind}) if self.upstream_of_kind else None
        query = presets.query(
            self.preset,
            text=text,
            routing_key=self.routing_key,
            scorer=self.scorer,
            kinds=kinds,
            projection=self.projection,
        )
        return spec, query


MemoryStrategy = Classic | Topological


def declared_preset(strategy: MemoryStrategy) -> str:
    """The preset a tool call inherits when it names none (``default`` for classic)."""
    return strategy.preset if isinstance(strategy, Topological) else "default"
