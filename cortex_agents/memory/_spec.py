"""What a memory query asks for: the walk (:class:`WalkSpec`) and the query (:class:`Query`).

``WalkSpec`` says how candidates are enumerated and ranked (direction, scope,
distance cut, limit, weights, graph prior, alpha, time scale, boundary).
``Query`` says what they are filtered and compared on (routing key, kinds,
text, extractor, scorer). Both validate on construction and raise
:class:`~cortex_agents.errors.InvalidArgument` naming the field and the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._diversity import (
    DIVERSITIES,
    MMR_DEPTH,
    MMR_LAMBDA,
    Diversity,
    check_mmr_lambda,
)
from cortex_agents.memory._extract import Extractor, default_extractor
from cortex_agents.memory._semantic import SemanticScorer, token_jaccard

__all__ = [
    "DIRECTIONS",
    "PRIORS",
    "SCOPES",
    "TIME_REFERENCES",
    "Direction",
    "GraphPrior",
    "Query",
    "Scope",
    "TimeReference",
    "WalkSpec",
    "Weights",
]

Direction = Literal["ancestors", "descendants", "bidirectional"]
Scope = Literal["settled_only", "debug_all_statuses"]
GraphPrior = Literal["influence", "hop_decay"]
TimeReference = Literal["snapshot", "newest"]

DIRECTIONS: Final[tuple[str, ...]] = get_args(Direction)
SCOPES: Final[tuple[str, ...]] = get_args(Scope)
PRIORS: Final[tuple[str, ...]] = get_args(GraphPrior)
TIME_REFERENCES: Final[tuple[str, ...]] = get_args(TimeReference)
AXES: Final = ("graph", "temporal", "semantic")


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidArgument(name, f"must be one of {', '.join(map(repr, allowed))}", value)


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(name, f"must be an integer >= {minimum}", value)


def _check_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgument(name, "must be a finite number", value)
    return float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Weights:
    """Weights of the three axes; the score is their weighted mean.

    Each weight is a finite number >= 0 and at least one is > 0, so the
    normalised score stays in [0, 1].
    """

    graph: float = 1.0
    temporal: float = 1.0
    semantic: float = 1.0

    def __post_init__(self) -> None:
        for axis in AXES:
            value = _check_number(f"weights.{axis}", getattr(self, axis))
            if value < 0:
                raise InvalidArgument(f"weights.{axis}", "must be >= 0", value)
            object.__setattr__(self, axis, value)
        if self.total == 0:
            raise InvalidArgument("weights", "must have at least one axis > 0", self.as_dict())
        if not math.isfinite(self.total):  # the composite divides by it
            raise InvalidArgument("weights", "must have a finite sum", self.as_dict())

    @property
    def total(self) -> float:
        """``graph + temporal + semantic``, the normaliser of the score."""
        return self.graph + self.temporal + self.semantic

    def as_dict(self) -> dict[str, float]:
        """The weights by axis name."""
        return {"graph": self.graph, "temporal": self.temporal, "semantic": self.semantic}


@dataclass(frozen=True, slots=True, kw_only=True)
class WalkSpec:
    """How candidates are enumerated and ranked.

    Attributes:
        direction: ``ancestors`` (walk transposed edges), ``descendants`` or
            ``bidirectional`` (each direction walked separately, merged).
        scope: ``settled_only`` keeps completed nodes; ``debug_all_statuses``
            is an operator escape hatch that keeps every status.
        max_distance: Drop candidates more than this many hops away.
        limit: Keep the first ``limit`` matches of the full ranking.
        weights: Axis weights of the composite score.
        prior: The graph axis: ``influence`` (DAG random walk) or
            ``hop_decay`` (``1 / (1 + hops)``, kept for A/B evaluation).
        alpha: Damping of the random walk, in [0, 1].
        time_scale: Seconds for the temporal axis to halve: ``1 / (1 + age / time_scale)``.
        time_reference: What ``age`` is measured from: ``snapshot`` (its
            ``captured_at``, the seed's) or ``newest`` (the newest candidate's
            time, so the newest candidate scores 1 and older work keeps its
            spacing however long after the run the snapshot is queried).
        past_boundary: A stage kind. When set, only nodes strictly beyond the
            nearest nodes of this kind (in the walk direction) are candidates:
            "walk past my merge node".
        support: Relevance along dependency edges, in [0, 1]: each candidate's
            semantic axis gains ``support`` times the largest semantic axis
            among the candidates it shares an edge with (capped at 1), so the
            analyst a matching analyst built on rises with it. 0 (the seed's)
            turns it off.
        named_evidence: In [0, 1]: a candidate whose evidence the query text
            names (:mod:`cortex_agents.memory._entities`) gains this much
            semantic axis (capped at 1), before edge support. 0 turns it off.
        bridge: In [0, 1]: after ranking, each candidate whose evidence the
            best-ranked candidate's body names gains this much semantic axis
            (capped at 1), and the candidates are ranked again — the bridge
            entity of a multi-hop question. 0 turns it off.
        feedback: A finite number >= 0: a second retrieval pass that reads what the first
            found (:mod:`cortex_agents.memory._feedback`): after ``bridge``, the
            salient words of the first ``feedback_depth`` candidates' bodies
            score every candidate's body, and its semantic axis gains
            ``feedback`` times that pass's axis (capped at 1; the pass's BM25
            axis is rarely above 0.5, so a gain above 1 is useful); the
            candidates are ranked again. 0 (every built-in preset's) turns it off.
        feedback_depth: How many of the first pass's candidates the second
            pass reads (an integer >= 1).
        distinct_bodies: Rank each body text once: a candidate whose
            (non-empty) body equals a better-ranked candidate's goes after
            every candidate whose body is new, the repeats keeping their
            order — an earlier round's copy of a finding never pushes a new
            finding out of the top ``k``.
        diversity: ``"mmr"``: an opt-in second stage, last before the limit, that
            reorders the first ``mmr_depth`` candidates by maximal marginal
            relevance (:mod:`cortex_agents.memory._diversity`: each candidate's
            score against its token likeness to those already chosen; scores
            unchanged, ties in first-stage order; with ``distinct_bodies``,
            the new bodies among them only, the repeats staying after).
            ``None`` (every built-in preset's) leaves the order as it is.
        mmr_lambda: Relevance weight of the ``mmr`` stage, ``0 < mmr_lambda <= 1``
            (1 gives the first-stage order back); default
            :data:`~cortex_agents.memory._diversity.MMR_LAMBDA`.
        mmr_depth: How many of the first candidates the ``mmr`` stage reorders
            (an integer >= 1); default :data:`~cortex_agents.memory._diversity.MMR_DEPTH`.
    """

    direction: Direction = "ancestors"
    scope: Scope = "settled_only"
    max_distance: int | None = None
    limit: int | None = None
    weights: Weights = field(default_factory=Weights)
    prior: GraphPrior = "influence"
    alpha: float = 0.85
    time_scale: float = 3600.0
    past_boundary: str | None = None
    time_reference: TimeReference = "snapshot"
    support: float = 0.0
    named_evidence: float = 0.0
    bridge: float = 0.0
    feedback: float = 0.0
    feedback_depth: int = 1
    distinct_bodies: bool = False
    diversity: Diversity | None = None
    mmr_lambda: float = MMR_LAMBDA
    mmr_depth: int = MMR_DEPTH

    def __post_init__(self) -> None:
        _check_choice("direction", self.direction, DIRECTIONS)
        _check_choice("scope", self.scope, SCOPES)
        _check_choice("prior", self.prior, PRIORS)
        if self.max_distance is not None:
            _check_int("max_distance", self.max_distance, 1)
        if self.limit is not None:
            _check_int("limit", self.limit, 1)
        if not isinstance(self.weights, Weights):
            raise InvalidArgument("weights", "must be a `Weights` value", self.weights)
        alpha = _check_number("alpha", self.alpha)
        if not 0.0 <= alpha <= 1.0:
            raise InvalidArgument("alpha", "must be between 0 and 1", self.alpha)
        object.__setattr__(self, "alpha", alpha)
        time_scale = _check_number("time_scale", self.time_scale)
        if time_scale <= 0:
            raise InvalidArgument("time_scale", "must be > 0 seconds", self.time_scale)
        object.__setattr__(self, "time_scale", time_scale)
        _check_choice("time_reference", self.time_reference, TIME_REFERENCES)
        if not isinstance(self.distinct_bodies, bool):
            raise InvalidArgument("distinct_bodies", "must be true or false", self.distinct_bodies)
        _check_int("feedback_depth", self.feedback_depth, 1)
        if _check_number("feedback", self.feedback) < 0:
            raise InvalidArgument("feedback", "must be >= 0", self.feedback)
        object.__setattr__(self, "feedback", float(self.feedback))
        if self.diversity is not None:
            _check_choice("diversity", self.diversity, DIVERSITIES)
        object.__setattr__(self, "mmr_lambda", check_mmr_lambda(self.mmr_lambda))
        _check_int("mmr_depth", self.mmr_depth, 1)
        for name in ("support", "named_evidence", "bridge"):
            value = _check_number(name, getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise InvalidArgument(name, "must be between 0 and 1", getattr(self, name))
            object.__setattr__(self, name, value)
        if self.past_boundary is not None and (
            not isinstance(self.past_boundary, str) or not self.past_boundary
        ):
            raise InvalidArgument(
                "past_boundary", "must be a non-empty stage kind", self.past_boundary
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """What candidates are filtered and compared on.

    Attributes:
        routing_key: Keep only candidates whose extracted routing key equals it.
        text: Query text for the semantic axis; none gives semantic 0.
        kinds: Keep only candidates of these stage kinds.
        exclude_kinds: Drop candidates of these stage kinds (applied after ``kinds``).
        extractor: Turns a node's output into routing key, body text, evidence.
        scorer: Scores body text against ``text``.
    """

    routing_key: str | None = None
    text: str | None = None
    kinds: frozenset[str] | None = None
    exclude_kinds: frozenset[str] = frozenset()
    extractor: Extractor = default_extractor
    scorer: SemanticScorer = token_jaccard

    def __post_init__(self) -> None:
        if self.routing_key is not None and not isinstance(self.routing_key, str):
            raise InvalidArgument("routing_key", "must be a string", self.routing_key)
        if self.text is not None and not isinstance(self.text, str):
            raise InvalidArgument("text", "must be a string", self.text)
        if self.kinds is not None:
            if isinstance(self.kinds, str) or not all(isinstance(k, str) for k in self.kinds):
                raise InvalidArgument("kinds", "must be a collection of stage kinds", self.kinds)
            object.__setattr__(self, "kinds", frozenset(self.kinds))
        if isinstance(self.exclude_kinds, str) or not all(
            isinstance(k, str) for k in self.exclude_kinds
        ):
            raise InvalidArgument(
                "exclude_kinds", "must be a collection of stage kinds", self.exclude_kinds
            )
        object.__setattr__(self, "exclude_kinds", frozenset(self.exclude_kinds))
        if not callable(self.extractor):
            raise InvalidArgument("extractor", "must be callable", self.extractor)
        if not callable(self.scorer):
            raise InvalidArgument("scorer", "must be callable", self.scorer)
