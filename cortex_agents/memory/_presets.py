"""Named queries ("presets") and the open registry that holds them.

A preset is a walk spec (direction, weights, prior, limit, ...) plus what the
query side needs: the name of its semantic scorer and its kind filters. The
built-in ones are listed in :data:`BUILTIN_PRESETS` (chosen by the retrieval
harness on its held-out split; see ``tools/eval_retrieval.py``).

A registry is a value: :meth:`PresetRegistry.with_presets` returns a new one,
so wire authors add presets without touching library code or global state::

    presets = BUILTIN_PRESETS.with_presets(
        Preset(name="auditor", spec=WalkSpec(direction="bidirectional", limit=5))
    )

It also carries the scorer registry its presets name scorers in
(:meth:`PresetRegistry.with_scorers`, :meth:`PresetRegistry.with_embedding_cache`),
so a wire's presets are everything a stage's queries resolve against.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from cortex_agents.errors import InvalidArgument, UnknownPreset
from cortex_agents.memory._embedding import EmbeddingCache
from cortex_agents.memory._projections import BUILTIN_PROJECTIONS, Projection, ProjectionRegistry
from cortex_agents.memory._scorers import (
    BUILTIN_SCORERS,
    DEFAULT_SCORER,
    ScorerEntry,
    ScorerRegistry,
)
from cortex_agents.memory._semantic import SemanticScorer
from cortex_agents.memory._spec import Query, WalkSpec, Weights

__all__ = [
    "BUILTIN_PRESETS",
    "DEFAULT_LIMIT",
    "BRIDGE",
    "EVIDENCE_ONLY",
    "FEEDBACK",
    "FEEDBACK_DEPTH",
    "NAMED_EVIDENCE",
    "SUPPORT",
    "Preset",
    "PresetRegistry",
]

_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A named walk spec.

    Attributes:
        name: Matches ``[A-Za-z0-9_.-]+``, at most 64 characters.
        spec: The walk it stands for.
        description: One line for humans (shown by the CLI and the tool schema).
        scorer: The name of its semantic scorer in the registry's scorers.
        kinds: Keep only candidates of these stage kinds (``None``: every kind).
        exclude_kinds: Drop candidates of these stage kinds.
    """

    name: str
    spec: WalkSpec
    description: str = ""
    scorer: str = DEFAULT_SCORER
    kinds: frozenset[str] | None = None
    exclude_kinds: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InvalidArgument(
                "preset.name", "must match `[A-Za-z0-9_.-]+`, at most 64 characters", self.name
            )
        if not isinstance(self.spec, WalkSpec):
            raise InvalidArgument("preset.spec", "must be a `WalkSpec`", self.spec)
        if not isinstance(self.scorer, str) or not self.scorer:
            raise InvalidArgument("preset.scorer", "must be a scorer name", self.scorer)
        # Query validates the kind filters (a collection of kind names, not one string).
        probe = Query(kinds=self.kinds, exclude_kinds=self.exclude_kinds)
        object.__setattr__(self, "kinds", probe.kinds)
        object.__setattr__(self, "exclude_kinds", probe.exclude_kinds)


class PresetRegistry(Mapping[str, Preset]):
    """An immutable name -> :class:`Preset` mapping, with the scorers and projections its queries name.

    Args:
        presets: The presets it holds.
        scorers: Where preset scorer names resolve (default :data:`BUILTIN_SCORERS`).
        projections: Where a stage's projection name resolves (default: none registered).
    """

    __slots__ = ("_presets", "_projections", "_scorers")

    def __init__(
        self,
        presets: Iterable[Preset] = (),
        *,
        scorers: ScorerRegistry = BUILTIN_SCORERS,
        projections: ProjectionRegistry = BUILTIN_PROJECTIONS,
    ) -> None:
        table: dict[str, Preset] = {}
        for preset in presets:
            if preset.name in table:
                raise InvalidArgument("preset.name", "must be unique in a registry", preset.name)
            table[preset.name] = preset
        if not isinstance(scorers, ScorerRegistry):
            raise InvalidArgument("scorers", "must be a `ScorerRegistry`", scorers)
        if not isinstance(projections, ProjectionRegistry):
            raise InvalidArgument("projections", "must be a `ProjectionRegistry`", projections)
        self._presets = table
        self._scorers = scorers
        self._projections = projections

    @property
    def scorers(self) -> ScorerRegistry:
        """The scorer registry preset scorer names resolve in."""
        return self._scorers

    @property
    def projections(self) -> ProjectionRegistry:
        """The typed projections a stage's memory declaration may name."""
        return self._projections

    def _with(self, presets: Iterable[Preset] | None = None, **parts: Any) -> PresetRegistry:
        return PresetRegistry(
            self._presets.values() if presets is None else presets,
            scorers=parts.get("scorers", self._scorers),
            projections=parts.get("projections", self._projections),
        )

    def __getitem__(self, name: str) -> Preset:
        return self._presets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._presets)

    def __len__(self) -> int:
        return len(self._presets)

    def __repr__(self) -> str:
        return f"PresetRegistry({sorted(self._presets)})"

    def resolve(self, name: str) -> Preset:
        """The preset called ``name``.

        Raises:
            UnknownPreset: no such preset; the error lists the known names.
        """
        try:
            return self._presets[name]
        except (KeyError, TypeError):
            raise UnknownPreset(str(name), sorted(self._presets)) from None

    def spec(self, name: str, **overrides: Any) -> WalkSpec:
        """The preset's walk spec with ``overrides`` applied (and validated)."""
        base = self.resolve(name).spec
        return replace(base, **overrides) if overrides else base

    def scorer(self, name: str, override: str | None = None) -> SemanticScorer:
        """The loaded scorer of preset ``name`` (or the scorer called ``override``).

        Raises:
            UnknownPreset: no such preset.
            UnknownScorer, ScorerUnavailable: its scorer is not registered or cannot load.
        """
        return self._scorers.load(override or self.resolve(name).scorer)

    def query(
        self,
        name: str,
        *,
        text: str | None = None,
        routing_key: str | None = None,
        scorer: str | None = None,
        kinds: frozenset[str] | None = None,
        projection: str | None = None,
    ) -> Query:
        """The :class:`Query` a call naming preset ``name`` runs.

        The preset gives the scorer (unless ``scorer`` names another) and the
        kind filters (``kinds``, when given, replaces the preset's); the call
        gives the text and the routing key; ``projection`` names the typed
        projection memory reads through (default: the whole output).

        Raises:
            UnknownPreset, UnknownScorer, ScorerUnavailable: as :meth:`scorer`.
            UnknownProjection: ``projection`` is not registered.
        """
        preset = self.resolve(name)
        extra: dict[str, Any] = {}
        if projection is not None:
            extra["extractor"] = self._projections.resolve(projection).extractor
        return Query(
            text=text,
            routing_key=routing_key,
            kinds=kinds if kinds is not None else preset.kinds,
            exclude_kinds=preset.exclude_kinds,
            scorer=self._scorers.load(scorer or preset.scorer),
            **extra,
        )

    def with_presets(self, *presets: Preset, replace_existing: bool = False) -> PresetRegistry:
        """A new registry with ``presets`` added (and the same scorers).

        Raises:
            InvalidArgument: a name already exists and ``replace_existing`` is false.
        """
        table = dict(self._presets)
        for preset in presets:
            if preset.name in table and not replace_existing:
                raise InvalidArgument(
                    "preset.name", "already exists (pass replace_existing=True)", preset.name
                )
            table[preset.name] = preset
        return self._with(table.values())

    def with_scorers(self, *entries: ScorerEntry, replace_existing: bool = False) -> PresetRegistry:
        """A new registry whose scorer registry also holds ``entries``.

        Raises:
            InvalidArgument: a scorer name already exists and ``replace_existing`` is false.
        """
        scorers = self._scorers.with_scorers(*entries, replace_existing=replace_existing)
        return self._with(scorers=scorers)

    def with_embedding_cache(self, cache: EmbeddingCache) -> PresetRegistry:
        """A new registry whose embedding scorers keep body vectors in ``cache``
        (e.g. :class:`cortex_agents.embeddings.StoreEmbeddingCache` over the run's store)."""
        return self._with(scorers=self._scorers.with_embedding_cache(cache))

    def with_projections(
        self, *projections: Projection, replace_existing: bool = False
    ) -> PresetRegistry:
        """A new registry whose stages may also name ``projections`` (seed 001, F7).

        Raises:
            InvalidArgument: a name already exists and ``replace_existing`` is false.
        """
        registry = self._projections.with_projections(
            *projections, replace_existing=replace_existing
        )
        return self._with(projections=registry)


DEFAULT_LIMIT: Final = 10
"""Matches a built-in preset keeps: an agent rarely reads more than 10-20."""

EVIDENCE_ONLY: Final = frozenset({"planner", "merge", "reviewer", "rewriter"})
"""Kinds the ``reviewer`` preset leaves out: coordination (planner, merge) and commentary
(reviewer, rewriter) restate every topic without adding evidence (harness: re-review family)."""

SUPPORT: Final = 0.6
"""Edge support of the built-in presets: an analyst another matching analyst built on gains
0.6 x that analyst's semantic axis (harness, chain family: hop 1 back into the top 3)."""
NAMED_EVIDENCE: Final = 0.2
"""Semantic axis a candidate gains when the query names its evidence (an entity the question
names: the first hop of a multi-hop question)."""
BRIDGE: Final = 0.15
"""Semantic axis a candidate gains when the best-ranked candidate's body names its evidence
(the bridge entity of a multi-hop question)."""

FEEDBACK: Final = 2.0
"""Semantic axis gain of the opt-in feedback pass (``Topological(second_pass="feedback")``,
:mod:`cortex_agents.memory._feedback`), chosen on the harness's dev split; no built-in preset
turns it on (it would change every recorded tool result)."""
FEEDBACK_DEPTH: Final = 1
"""How many of the first pass's candidates the opt-in feedback pass reads."""

# Chosen with tools/eval_retrieval.py on the dev split of every family (synthetic and
# multi-hop), reported on the held-out split (README, "Retrieval quality"): the semantic axis
# first, scored by the wordllama+bm25 blend (BM25 finds identifiers — years, seasons, model
# numbers — static embeddings confuse; the embedding finds paraphrases BM25 misses); a
# little recency, measured from the newest candidate so that a snapshot queried days after
# its run still tells its rounds apart; hop decay (influence divides its mass at every
# fan-out and piles it on conduits: the seed's failure); edge support; entity signals (the
# query or the best match naming a candidate's evidence); each body text ranked once (an
# earlier round's copy of a finding never takes a place in the top k); evidence-only kinds.
_RANKED: Final = WalkSpec(
    prior="hop_decay",
    weights=Weights(graph=0.25, temporal=0.25, semantic=1.0),
    limit=DEFAULT_LIMIT,
    time_reference="newest",
    support=SUPPORT,
    named_evidence=NAMED_EVIDENCE,
    bridge=BRIDGE,
    distinct_bodies=True,
)

BUILTIN_PRESETS: Final = PresetRegistry(
    [
        Preset(
            name="default",
            spec=_RANKED,
            description="ancestors, text first (wordllama+bm25, hop decay, weights 0.25/0.25/1)",
        ),
        Preset(
            name="analyst",
            spec=_RANKED,
            description="ancestors, text first (wordllama+bm25, hop decay, weights 0.25/0.25/1)",
        ),
        Preset(
            name="reviewer",
            spec=_RANKED,
            description="ancestors' evidence: text first, no planner/merge/reviewer/rewriter",
            exclude_kinds=EVIDENCE_ONLY,
        ),
        Preset(
            name="planner",
            spec=WalkSpec(
                direction="bidirectional",
                prior="hop_decay",
                weights=Weights(graph=0.25, temporal=0.5, semantic=1.0),
                limit=DEFAULT_LIMIT,
                time_reference="newest",
                support=SUPPORT,
                named_evidence=NAMED_EVIDENCE,
                bridge=BRIDGE,
                distinct_bodies=True,
            ),
            description="both directions, text first, recency weighted 2x the graph axis",
        ),
    ]
)
"""The built-in presets; the seed's were influence with weights 1/1/1 (``reviewer`` 1.5/1/1),
token Jaccard, every kind, recency from the snapshot's time, no edge support and no limit."""
