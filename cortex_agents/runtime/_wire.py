"""Wires: a workflow declared as stages, edges, the stage kinds it may use and a rewrite budget.

A :class:`Wire` is validated when it is built — unknown kind, dangling edge,
cycle, duplicate id, a topological strategy with an unknown preset or
structural kind, a semantic scorer that is not registered or cannot load
(its model package missing, its file corrupt) — and raises
:class:`InvalidWire` listing every problem, so nothing runs on an invalid
wire (and no scorer fails to load in the middle of a run). Build one in Python::

    wire = (
        WireBuilder("fanout")
        .kind("planner", plan)
        .kind("analyst", analyse)
        .stage("planner", "planner")
        .stage("analyst-a", "analyst", after=["planner"], memory=Topological(preset="analyst"))
        .build()
    )

or load one from a file (:mod:`cortex_agents.runtime._wire_file`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from cortex_agents.errors import (
    CycleError,
    InvalidArgument,
    InvalidWire,
    Problem,
    ScorerUnavailable,
    UnknownPreset,
    UnknownProjection,
    UnknownScorer,
)
from cortex_agents.memory._embedding import EmbeddingCache
from cortex_agents.memory._influence import canonical_order
from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory._strategy import Classic, MemoryStrategy, Topological
from cortex_agents.rewrite._budget import DEFAULT_BUDGET, DIMENSIONS, unknown_dimension_rule
from cortex_agents.rewrite._policy import RewritePolicy
from cortex_agents.scratch._connector import connector_problems
from cortex_agents.substrate._bounds import MAX_ID_CHARS, MAX_TAGS, id_problem
from cortex_agents.substrate._events import storable_json
from cortex_agents.substrate._records import NodeId

if TYPE_CHECKING:
    from cortex_agents.runtime._context import StageContext

__all__ = [
    "ID_PATTERN",
    "OnFailure",
    "RewriteBudget",
    "StageFunction",
    "StageKind",
    "StageSpec",
    "Wire",
    "WireBuilder",
]

ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]+")
"""Stage ids and kind names: no ``:`` (reserved for rewrite-created ids ``anchor:local``)."""

STRUCTURED_OUTPUT_FORMS: Final = ("auto", "json_schema", "json_object", "off")
"""What a stage's ``structured_output`` config may say. Defined here, below the stages
(``cortex_agents.stages.FORMS`` is this tuple), so the wire checks it without importing them."""

StageFunction = Callable[["StageContext"], Any] | Callable[["StageContext"], Awaitable[Any]]
OnFailure = Literal["stop", "continue"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageKind:
    """A registered stage kind: the function that runs every stage of that kind.

    Attributes:
        name: The kind's name (also the LangGraph node that runs it).
        fn: ``fn(ctx) -> output`` (sync or async); the output must be JSON-able
            or a pydantic model.
        description: One line for humans.
    """

    name: str
    fn: StageFunction
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StageSpec:
    """One stage of a wire.

    Attributes:
        id: Unique in the wire; matches ``[A-Za-z0-9_.-]+``.
        kind: A registered stage kind.
        memory: Its memory strategy (classic by default).
        prompt: An optional prompt name or path for LLM stages.
        config: JSON configuration passed to the stage.
        tags: Labels recorded on its node.
        scratch: ``global`` or ``per_thread`` to give the stage scratch memory
            (the ``memory`` tool and the prompt connector); ``None``: none.
        rewrite: Its rewrite capability (``ctx.propose_rewrite`` and, for LLM
            stages, the ``propose_rewrite`` tool); ``None``: it cannot propose.
    """

    id: str
    kind: str
    memory: MemoryStrategy = field(default_factory=Classic)
    prompt: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    scratch: Literal["global", "per_thread"] | None = None
    rewrite: RewritePolicy | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteBudget:
    """The per-run rewrite budget, five dimensions (DESIGN §6; see :mod:`cortex_agents.rewrite._budget`).

    A run fixes it in its substrate when it starts (``rewrite_budget_set``), so
    a resumed run keeps the budget it started with.
    """

    nodes: int = DEFAULT_BUDGET["nodes"]
    edges: int = DEFAULT_BUDGET["edges"]
    depth: int = DEFAULT_BUDGET["depth"]
    breadth: int = DEFAULT_BUDGET["breadth"]
    operations: int = DEFAULT_BUDGET["operations"]

    def as_dict(self) -> dict[str, int]:
        """The budget by dimension."""
        return {d: getattr(self, d) for d in DIMENSIONS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Wire:
    """A validated workflow.

    Attributes:
        name: The wire's name.
        stages: Its stages, in declaration order.
        edges: ``(source, target)`` stage-id pairs.
        kinds: The registered stage kinds it may use, by name.
        presets: The preset registry its topological stages resolve in.
        budget: The rewrite budget of each run.
        on_failure: ``stop`` (a failed stage stops the run) or ``continue``
            (independent stages go on; the failed stage's successors never run).
    """

    name: str
    stages: tuple[StageSpec, ...]
    edges: tuple[tuple[str, str], ...]
    kinds: Mapping[str, StageKind]
    presets: PresetRegistry = field(default_factory=lambda: BUILTIN_PRESETS)
    budget: RewriteBudget = field(default_factory=RewriteBudget)
    on_failure: OnFailure = "stop"
    _by_id: Mapping[str, StageSpec] = field(init=False, repr=False, compare=False)
    _by_kind: Mapping[str, StageSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", MappingProxyType(dict(self.kinds)))
        problems = _problems(self)
        if problems:
            raise InvalidWire(problems)
        by_kind: dict[str, StageSpec] = {}
        for s in self.stages:
            by_kind.setdefault(s.kind, s)
        object.__setattr__(self, "_by_id", MappingProxyType({s.id: s for s in self.stages}))
        object.__setattr__(self, "_by_kind", MappingProxyType(by_kind))

    def stage(self, stage_id: str) -> StageSpec:
        """The stage with this id.

        Raises:
            KeyError: no such stage.
        """
        return self._by_id[stage_id]

    def spec_for(self, node_id: str, kind: str) -> StageSpec:
        """How a node runs: its declared stage, or — for a node an admitted rewrite
        added — the declaration of the wire's first stage of its kind (memory
        strategy, prompt, scratch), without rewrite capability; a kind no stage
        declares runs classic. A rewrite-created node's config and tags are its own.
        """
        declared = self._by_id.get(node_id)
        if declared is not None:
            return declared
        template = self._by_kind.get(kind)
        if template is None:
            return StageSpec(id=node_id, kind=kind)
        return StageSpec(
            id=node_id,
            kind=kind,
            memory=template.memory,
            prompt=template.prompt,
            scratch=template.scratch,
        )

    def vocabulary(self) -> dict[str, Mapping[str, Any]]:
        """The kinds a rewrite may use, each with the base config its new nodes start from
        (the config of the wire's first stage of that kind, or ``{}``)."""
        return {
            name: dict(self._by_kind[name].config) if name in self._by_kind else {}
            for name in self.kinds
        }

    @property
    def uses_scratch(self) -> bool:
        """Whether any stage has scratch memory."""
        return any(s.scratch is not None for s in self.stages)

    @property
    def rewrites(self) -> bool:
        """Whether any stage may propose rewrites."""
        return any(s.rewrite is not None for s in self.stages)

    def with_embedding_cache(self, cache: EmbeddingCache) -> Wire:
        """The same wire, its embedding scorers keeping body vectors in ``cache``.

        With :class:`cortex_agents.embeddings.StoreEmbeddingCache` over the run's
        store, a resumed run (or any later run on the same store) embeds no body
        it embedded before.
        """
        return dataclasses.replace(self, presets=self.presets.with_embedding_cache(cache))

    def order(self) -> list[NodeId]:
        """Stage ids in canonical topological order."""
        relation: dict[NodeId, list[NodeId]] = {NodeId(s.id): [] for s in self.stages}
        for source, target in self.edges:
            relation[NodeId(source)].append(NodeId(target))
        return canonical_order(relation)


def _problems(wire: Wire) -> list[Problem]:
    problems: list[Problem] = []
    if not isinstance(wire.name, str) or not ID_PATTERN.fullmatch(wire.name):
        problems.append(Problem("name", f"must match `{ID_PATTERN.pattern}` (got {wire.name!r})"))
    problems += _kind_problems(wire)
    if not wire.stages:
        problems.append(Problem("stages", "must declare at least one stage"))
    seen: dict[str, int] = {}
    for i, stage in enumerate(wire.stages):
        where = f"stages[{i}]"
        if not isinstance(stage.id, str) or not ID_PATTERN.fullmatch(stage.id):
            problems.append(
                Problem(f"{where}.id", f"must match `{ID_PATTERN.pattern}` (got {stage.id!r})")
            )
        elif len(stage.id) > MAX_ID_CHARS:
            problems.append(
                Problem(
                    f"{where}.id",
                    f"must be at most {MAX_ID_CHARS} characters (got {len(stage.id)})",
                )
            )
        elif stage.id in seen:
            problems.append(
                Problem(
                    f"{where}.id",
                    f"duplicate stage id {stage.id!r} (first at stages[{seen[stage.id]}])",
                )
            )
        else:
            seen[stage.id] = i
        problems += _stage_problems(stage, where, wire)
    problems += _scorer_problems(wire)
    problems += _edge_problems(wire.edges, seen)
    if wire.on_failure not in ("stop", "continue"):
        problems.append(
            Problem("on_failure", f"must be 'stop' or 'continue' (got {wire.on_failure!r})")
        )
    problems += _budget_problems(wire.budget)
    return problems


def _kind_problems(wire: Wire) -> list[Problem]:
    """What is wrong with the wire's kind names and registrations."""
    problems: list[Problem] = []
    for name, kind in wire.kinds.items():
        # reserved: `scheduler` is the compiled graph's own node, `__*` names are LangGraph's
        if not ID_PATTERN.fullmatch(name) or name == "scheduler" or name.startswith("__"):
            problems.append(
                Problem(
                    f"kinds[{name!r}]", f"must match `{ID_PATTERN.pattern}` and not be reserved"
                )
            )
        elif len(name) > MAX_ID_CHARS:
            problems.append(
                Problem(f"kinds[{name[:40]!r}...]", f"must be at most {MAX_ID_CHARS} characters")
            )
        elif not isinstance(kind, StageKind) or not callable(kind.fn):
            problems.append(Problem(f"kinds[{name!r}]", "must be a StageKind with a callable `fn`"))
    return problems


def _stage_problems(stage: StageSpec, where: str, wire: Wire) -> list[Problem]:
    """What is wrong with one stage besides its id (kind, memory, config, rewrite, scratch)."""
    problems: list[Problem] = []
    if stage.kind not in wire.kinds:
        problems.append(
            Problem(
                f"{where}.kind",
                f"unknown kind {stage.kind!r}; registered: {sorted(wire.kinds)}",
            )
        )
    problems += _strategy_problems(stage.memory, f"{where}.memory", wire)
    problems += _stored_problems(stage, where)
    if isinstance(stage.config, Mapping):
        settings = stage.config.get("scratch_connector")
        problems += connector_problems(settings, f"{where}.config.scratch_connector")
        if "structured_output" in stage.config:
            problems += _structured_output_problems(
                stage.config["structured_output"], f"{where}.config.structured_output"
            )
    if stage.rewrite is not None and not isinstance(stage.rewrite, RewritePolicy):
        problems.append(
            Problem(f"{where}.rewrite", "must be a RewritePolicy(forms=..., attempts=...) or None")
        )
    if stage.scratch not in (None, "global", "per_thread"):
        problems.append(
            Problem(
                f"{where}.scratch",
                f"must be 'global', 'per_thread' or None (got {stage.scratch!r})",
            )
        )
    return problems


def _edge_problems(edges: Sequence[tuple[str, str]], seen: Mapping[str, int]) -> list[Problem]:
    """Edges naming unknown stages, repeated edges, and a cycle if there is one."""
    problems: list[Problem] = []
    relation: dict[NodeId, list[NodeId]] = {NodeId(s): [] for s in seen}
    pairs: set[tuple[str, str]] = set()
    for i, (source, target) in enumerate(edges):
        for end, value in (("source", source), ("target", target)):
            if value not in seen:
                problems.append(Problem(f"edges[{i}].{end}", f"unknown stage {value!r}"))
        if (source, target) in pairs:
            problems.append(Problem(f"edges[{i}]", f"duplicate edge {source!r} -> {target!r}"))
        pairs.add((source, target))
        # Edges to unknown stages are reported above; the cycle check sees only the others.
        if source in seen and target in seen:
            relation[NodeId(source)].append(NodeId(target))
    try:
        canonical_order(relation)
    except CycleError as exc:
        problems.append(Problem("edges", f"cycle {' -> '.join(exc.cycle)}; a wire must be a DAG"))
    return problems


def _budget_problems(budget: object) -> list[Problem]:
    """What is wrong with the wire's rewrite budget."""
    if not isinstance(budget, RewriteBudget):
        return [Problem("budget", "must be a RewriteBudget (see WireBuilder.budget)")]
    problems: list[Problem] = []
    for dimension, amount in budget.as_dict().items():
        # bool is a subclass of int: without the first test True would pass as a budget of 1.
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            problems.append(
                Problem(f"budget.{dimension}", f"must be an integer >= 0 (got {amount!r})")
            )
    return problems


def _stored_problems(stage: StageSpec, where: str) -> list[Problem]:
    """What of a stage its node would store but a run refuses (the bounds of a stored value)."""
    problems: list[Problem] = []
    tags = stage.tags
    if len(tags) > MAX_TAGS:
        problems.append(Problem(f"{where}.tags", f"must hold at most {MAX_TAGS} tags"))
    for j, tag in enumerate(tags):
        rule = id_problem(tag)
        if rule is not None:
            problems.append(Problem(f"{where}.tags[{j}]", rule))
    try:
        storable_json(stage.config, f"{where}.config")
    except InvalidArgument as exc:
        problems.append(Problem(exc.field, exc.rule))
    return problems


def _strategy_problems(strategy: Any, where: str, wire: Wire) -> list[Problem]:
    if isinstance(strategy, Classic):
        return []
    if not isinstance(strategy, Topological):
        return [Problem(where, "must be Classic() or Topological(...)")]
    problems = []
    try:
        wire.presets.resolve(strategy.preset)
    except UnknownPreset as exc:
        problems.append(Problem(f"{where}.preset", str(exc)))
    if strategy.projection is not None:
        try:
            wire.presets.projections.resolve(strategy.projection)
        except UnknownProjection as exc:
            problems.append(Problem(f"{where}.projection", str(exc)))
    for attr in ("past_boundary", "upstream_of_kind"):
        kind = getattr(strategy, attr)
        if kind is not None and kind not in wire.kinds:
            problems.append(
                Problem(
                    f"{where}.{attr}", f"unknown kind {kind!r}; registered: {sorted(wire.kinds)}"
                )
            )
    return problems


def _structured_output_problems(value: object, where: str) -> list[Problem]:
    """A stage's ``structured_output`` setting, checked with the wire rather than at its first call."""
    if value in STRUCTURED_OUTPUT_FORMS:
        return []
    return [Problem(where, f"must be one of {list(STRUCTURED_OUTPUT_FORMS)} (got {value!r})")]


def _scorer_problems(wire: Wire) -> list[Problem]:
    """Load every scorer a topological stage or its model's tool calls may use.

    A tool call may name any preset of the registry, so once any stage is
    topological every preset's scorer must load, plus each stage's override.
    """
    wanted: dict[str, str] = {}  # scorer name -> where it is first named
    for i, stage in enumerate(wire.stages):
        strategy = stage.memory
        if isinstance(strategy, Topological) and strategy.scorer is not None:
            wanted.setdefault(strategy.scorer, f"stages[{i}].memory.scorer")
    if not any(isinstance(stage.memory, Topological) for stage in wire.stages):
        return []
    for name, preset in wire.presets.items():
        wanted.setdefault(preset.scorer, f"presets.{name}.scorer")
    problems = []
    for scorer, where in wanted.items():
        try:
            wire.presets.scorers.load(scorer)
        except (UnknownScorer, ScorerUnavailable) as exc:
            problems.append(Problem(where, str(exc)))
    return problems


class WireBuilder:
    """A small fluent builder for :class:`Wire`."""

    def __init__(self, name: str, *, presets: PresetRegistry = BUILTIN_PRESETS) -> None:
        self._name = name
        self._presets = presets
        self._kinds: dict[str, StageKind] = {}
        self._stages: list[StageSpec] = []
        self._edges: list[tuple[str, str]] = []
        self._budget = RewriteBudget()
        self._on_failure: OnFailure = "stop"

    def kind(self, name: str, fn: StageFunction, description: str = "") -> WireBuilder:
        """Register a stage kind."""
        self._kinds[name] = StageKind(name=name, fn=fn, description=description)
        return self

    def stage(
        self,
        stage_id: str,
        kind: str,
        *,
        after: Iterable[str] = (),
        memory: MemoryStrategy | None = None,
        prompt: str | None = None,
        config: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        scratch: Literal["global", "per_thread"] | None = None,
        rewrite: RewritePolicy | None = None,
    ) -> WireBuilder:
        """Add a stage, with edges from each stage in ``after``."""
        self._stages.append(
            StageSpec(
                id=stage_id,
                kind=kind,
                memory=memory if memory is not None else Classic(),
                prompt=prompt,
                config=dict(config or {}),
                tags=tuple(tags),
                scratch=scratch,
                rewrite=rewrite,
            )
        )
        self._edges.extend((source, stage_id) for source in after)
        return self

    def edge(self, source: str, target: str) -> WireBuilder:
        """Add an edge."""
        self._edges.append((source, target))
        return self

    def budget(self, **dimensions: int) -> WireBuilder:
        """Set rewrite budget dimensions (nodes, edges, depth, breadth, operations).

        Raises:
            InvalidWire: a dimension that is not one of the five, located (``budget.bogus``).
        """
        unknown = [d for d in dimensions if d not in DIMENSIONS]
        if unknown:
            raise InvalidWire([Problem(f"budget.{d}", unknown_dimension_rule()) for d in unknown])
        self._budget = RewriteBudget(**{**self._budget.as_dict(), **dimensions})
        return self

    def on_failure(self, policy: OnFailure) -> WireBuilder:
        """``stop`` (default) or ``continue``."""
        self._on_failure = policy
        return self

    def build(self) -> Wire:
        """The validated wire.

        Raises:
            InvalidWire: with every problem.
        """
        return Wire(
            name=self._name,
            stages=tuple(self._stages),
            edges=tuple(self._edges),
            kinds=self._kinds,
            presets=self._presets,
            budget=self._budget,
            on_failure=self._on_failure,
        )
