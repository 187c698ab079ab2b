"""Load a wire from a file: a Python module exposing ``wire``, or TOML / YAML.

TOML and YAML files are validated by pydantic; every problem names its field::

    name = "fanout"
    on_failure = "stop"            # or "continue"

    [kinds]                        # kind name -> "module:function" or "path/to/file.py:function"
    planner = "fanout_demo.py:plan"
    analyst = "fanout_demo.py:analyse"

    [[stages]]
    id = "planner"
    kind = "planner"

    [[stages]]
    id = "analyst-a"
    kind = "analyst"
    after = ["planner"]
    memory = { strategy = "topological", preset = "analyst", scorer = "minilm" }
    rewrite = { forms = ["append_after"], attempts = 3 }   # may propose rewrites

    [budget]                       # rewrite budget (defaults 16 / 32 / 6 / 4 / 4)
    nodes = 8

    [presets.auditor]              # extra memory presets
    direction = "descendants"
    weights = { graph = 1, temporal = 0 }
    scorer = "jaccard"             # a registered scorer (default: the built-in default)
    exclude_kinds = ["reviewer"]

    [scorers.mine]                 # extra semantic scorers: a factory returning a scorer ...
    load = "my_scorers.py:make"    # ... as "module:function" or "file.py:function"
    install = "pip install my-embedder"
    [scorers.mixed]                # ... or a weighted blend of registered scorers
    parts = { mine = 1, jaccard = 1 }

    [projections.headline]         # typed projections (seed 001, F7): the artifact's model ...
    model = "my_artifacts.py:Analysis"   # ... as "module:Class" or "file.py:Class"
    fields = ["claim_ref", "finding"]    # ... and the fields memory reads and shows

A stage reads through a projection with
``memory = { strategy = "topological", projection = "headline" }``. A
classic stage (the default strategy) reads no other ``memory`` key, so one
given to it is a problem, not silently unused.

Every scorer a topological stage may use is loaded when the wire is
validated: a missing package or a corrupt model file is reported then,
naming the scorer and how to install it.

Relative file paths in ``kinds`` are resolved against the wire file's folder.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from cortex_agents._bundled import bundled_path
from cortex_agents.errors import CortexError, InvalidArgument, InvalidWire, Problem
from cortex_agents.memory._diversity import MMR_DEPTH, MMR_LAMBDA
from cortex_agents.memory._presets import BUILTIN_PRESETS, Preset, PresetRegistry
from cortex_agents.memory._projections import Projection
from cortex_agents.memory._scorers import DEFAULT_SCORER, ScorerEntry
from cortex_agents.memory._spec import WalkSpec, Weights
from cortex_agents.memory._strategy import Classic, Topological
from cortex_agents.rewrite._policy import RewritePolicy
from cortex_agents.rewrite._spec import FORMS
from cortex_agents.runtime._wire import Wire, WireBuilder

__all__ = ["load_wire"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Memory(_Strict):
    strategy: Literal["classic", "topological"] = "classic"
    preset: str = "default"
    routing_key: str | None = None
    limit: Annotated[int, Field(ge=1)] | None = None
    past_boundary: str | None = None
    upstream_of_kind: str | None = None
    scorer: str | None = None
    projection: str | None = None
    second_pass: Literal["feedback"] | None = None
    diversity: Literal["mmr"] | None = None
    mmr_lambda: float | None = None


class _Rewrite(_Strict):
    forms: list[Literal["append_after", "expand_retain", "expand_replace"]] = list(FORMS)
    attempts: Annotated[int, Field(ge=1, le=16)] = 3


class _Stage(_Strict):
    id: str
    kind: str
    after: list[str] = []
    memory: _Memory = _Memory()
    prompt: str | None = None
    config: dict[str, JsonValue] = {}
    tags: list[str] = []
    scratch: Literal["global", "per_thread"] | None = None
    rewrite: _Rewrite | None = None


class _Budget(_Strict):
    nodes: Annotated[int, Field(ge=0)] = 16
    edges: Annotated[int, Field(ge=0)] = 32
    depth: Annotated[int, Field(ge=0)] = 6
    breadth: Annotated[int, Field(ge=0)] = 4
    operations: Annotated[int, Field(ge=0)] = 4


class _Weights(_Strict):
    graph: float = 1.0
    temporal: float = 1.0
    semantic: float = 1.0


class _Preset(_Strict):
    direction: Literal["ancestors", "descendants", "bidirectional"] = "ancestors"
    scope: Literal["settled_only", "debug_all_statuses"] = "settled_only"
    max_distance: Annotated[int, Field(ge=1)] | None = None
    limit: Annotated[int, Field(ge=1)] | None = None
    weights: _Weights = _Weights()
    prior: Literal["influence", "hop_decay"] = "influence"
    alpha: float = 0.85
    time_scale: float = 3600.0
    time_reference: Literal["snapshot", "newest"] = "snapshot"
    past_boundary: str | None = None
    support: float = 0.0
    named_evidence: float = 0.0
    bridge: float = 0.0
    feedback: float = 0.0
    feedback_depth: Annotated[int, Field(ge=1)] = 1
    distinct_bodies: bool = False
    diversity: Literal["mmr"] | None = None
    mmr_lambda: float = MMR_LAMBDA
    mmr_depth: Annotated[int, Field(ge=1)] = MMR_DEPTH
    description: str = ""
    scorer: str = DEFAULT_SCORER
    kinds: list[str] | None = None
    exclude_kinds: list[str] = []


class _Scorer(_Strict):
    load: str | None = None
    parts: dict[str, float] | None = None
    description: str = ""
    install: str = ""


class _Projection(_Strict):
    model: str
    fields: list[str]
    description: str = ""


class _WireFile(_Strict):
    name: str
    on_failure: Literal["stop", "continue"] = "stop"
    kinds: dict[str, str]
    stages: list[_Stage]
    budget: _Budget = _Budget()
    presets: dict[str, _Preset] = {}
    scorers: dict[str, _Scorer] = {}
    projections: dict[str, _Projection] = {}


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "wire"


def _module_from_file(path: Path) -> ModuleType:
    name = f"_cortex_wire_{abs(hash(path.resolve()))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InvalidWire([Problem(str(path), "cannot be imported as a Python module")])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise InvalidWire(
            [Problem(str(path), f"importing it raised {type(exc).__name__}: {exc}")]
        ) from exc
    return module


def _resolve(reference: str, base: Path, where: str) -> Any:
    module_name, sep, attr = reference.rpartition(":")
    if not sep or not module_name or not attr:
        raise InvalidWire(
            [Problem(where, f"must be 'module:function' or 'file.py:function' (got {reference!r})")]
        )
    if module_name.endswith(".py"):
        path = (base / module_name).resolve()
        if not path.is_file():
            raise InvalidWire([Problem(where, f"no file {str(path)!r}")])
        module = _module_from_file(path)
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # not found, or its import raised: the wire cannot load it
            raise InvalidWire(
                [Problem(where, f"cannot import {module_name!r}: {type(exc).__name__}: {exc}")]
            ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise InvalidWire([Problem(where, f"{module_name!r} has no {attr!r}")]) from None


def _from_data(data: Any, base: Path) -> Wire:
    try:
        spec = _WireFile.model_validate(data)
    except PydanticValidationError as exc:
        raise InvalidWire(
            [Problem(_where(tuple(e["loc"])), e["msg"]) for e in exc.errors()]
        ) from None
    problems: list[Problem] = []
    presets = _with_scorers(BUILTIN_PRESETS, spec.scorers, base, problems)
    presets = _with_projections(presets, spec.projections, base, problems)
    presets = _with_presets(presets, spec.presets, problems)
    if problems:
        raise InvalidWire(problems)
    builder = (
        WireBuilder(spec.name, presets=presets)
        .on_failure(spec.on_failure)
        .budget(**spec.budget.model_dump())
    )
    _add_kinds(builder, spec.kinds, base, problems)
    _add_stages(builder, spec.stages, problems)
    try:
        wire = builder.build()
    except InvalidWire as exc:
        problems += exc.problems
    if problems:
        raise InvalidWire(problems)
    return wire


def _with_presets(
    presets: PresetRegistry, declared: dict[str, _Preset], problems: list[Problem]
) -> PresetRegistry:
    """``presets`` with the file's ``[presets]`` registered (problems collected, not raised)."""
    for name, p in declared.items():
        try:
            walk = WalkSpec(
                direction=p.direction,
                scope=p.scope,
                max_distance=p.max_distance,
                limit=p.limit,
                weights=Weights(
                    graph=p.weights.graph, temporal=p.weights.temporal, semantic=p.weights.semantic
                ),
                prior=p.prior,
                alpha=p.alpha,
                time_scale=p.time_scale,
                time_reference=p.time_reference,
                past_boundary=p.past_boundary,
                support=p.support,
                named_evidence=p.named_evidence,
                bridge=p.bridge,
                feedback=p.feedback,
                feedback_depth=p.feedback_depth,
                distinct_bodies=p.distinct_bodies,
                diversity=p.diversity,
                mmr_lambda=p.mmr_lambda,
                mmr_depth=p.mmr_depth,
            )
            preset = Preset(
                name=name,
                spec=walk,
                description=p.description,
                scorer=p.scorer,
                kinds=frozenset(p.kinds) if p.kinds is not None else None,
                exclude_kinds=frozenset(p.exclude_kinds),
            )
            presets = presets.with_presets(preset)
        except InvalidArgument as exc:
            problems.append(
                Problem(f"presets.{name}.{exc.field}", f"{exc.rule} (got {exc.value!r})")
            )
    return presets


def _add_kinds(
    builder: WireBuilder, kinds: dict[str, str], base: Path, problems: list[Problem]
) -> None:
    """Declare the file's kinds on ``builder`` (problems collected, not raised)."""
    # Every problem is collected, then reported together: a kind that cannot be loaded
    # stays declared (so its stages are not also "unknown kind") and nothing runs.
    for name, reference in kinds.items():
        try:
            fn = _resolve(reference, base, f"kinds.{name}")
        except InvalidWire as exc:
            problems += exc.problems
            fn = _unloaded
        if not callable(fn):
            problems.append(Problem(f"kinds.{name}", f"{reference!r} is not callable"))
            fn = _unloaded
        builder.kind(name, fn)


def _add_stages(builder: WireBuilder, stages: list[_Stage], problems: list[Problem]) -> None:
    """Add the file's stages to ``builder`` (problems collected, not raised)."""
    for i, stage in enumerate(stages):
        if stage.memory.strategy == "classic":  # it reads none of the other keys: say so
            problems += [
                Problem(
                    f"stages[{i}].memory.{key}", "is only allowed with strategy = 'topological'"
                )
                for key in _Memory.model_fields
                if key != "strategy" and key in stage.memory.model_fields_set
            ]
        try:
            memory = (
                Classic()
                if stage.memory.strategy == "classic"
                else Topological(
                    preset=stage.memory.preset,
                    routing_key=stage.memory.routing_key,
                    limit=stage.memory.limit,
                    past_boundary=stage.memory.past_boundary,
                    upstream_of_kind=stage.memory.upstream_of_kind,
                    scorer=stage.memory.scorer,
                    projection=stage.memory.projection,
                    second_pass=stage.memory.second_pass,
                    diversity=stage.memory.diversity,
                    mmr_lambda=stage.memory.mmr_lambda,
                )
            )
        except InvalidArgument as exc:
            problems.append(Problem(f"stages[{i}].memory.{exc.field}", exc.rule))
            memory = Classic()
        rewrite = None
        if stage.rewrite is not None:
            try:
                rewrite = RewritePolicy(
                    forms=tuple(stage.rewrite.forms), attempts=stage.rewrite.attempts
                )
            except InvalidArgument as exc:
                problems.append(Problem(f"stages[{i}].{exc.field}", exc.rule))
        builder.stage(
            stage.id,
            stage.kind,
            after=stage.after,
            memory=memory,
            prompt=stage.prompt,
            config=stage.config,
            tags=stage.tags,
            scratch=stage.scratch,
            rewrite=rewrite,
        )


def _with_scorers(
    presets: PresetRegistry, scorers: dict[str, _Scorer], base: Path, problems: list[Problem]
) -> PresetRegistry:
    """``presets`` with the file's ``[scorers]`` registered (problems collected, not raised)."""
    entries = []
    for name, s in scorers.items():
        where = f"scorers.{name}"
        load: Any = s.load
        try:
            if load is not None and load.partition(":")[0].endswith(".py"):
                load = _resolve(
                    load, base, f"{where}.load"
                )  # a file beside the wire: import it now
            entries.append(
                ScorerEntry(
                    name=name,
                    load=load,
                    parts=s.parts,
                    description=s.description,
                    install=s.install,
                )
            )
        except InvalidWire as exc:
            problems += exc.problems
        except InvalidArgument as exc:
            problems.append(Problem(where, f"{exc.rule} (got {exc.value!r})"))
    try:
        return presets.with_scorers(*entries, replace_existing=False)
    except InvalidArgument as exc:
        problems.append(Problem(f"scorers.{exc.value}", exc.rule))
        return presets


def _with_projections(
    presets: PresetRegistry,
    projections: dict[str, _Projection],
    base: Path,
    problems: list[Problem],
) -> PresetRegistry:
    """``presets`` with the file's ``[projections]`` registered (problems collected, not raised)."""
    declared = []
    for name, p in projections.items():
        where = f"projections.{name}"
        try:
            model = _resolve(p.model, base, f"{where}.model")
            declared.append(Projection.of_fields(name, model, p.fields, p.description))
        except InvalidWire as exc:
            problems += exc.problems
        except InvalidArgument as exc:
            field = exc.field.removeprefix("projection.")
            problems.append(Problem(f"{where}.{field}", f"{exc.rule} (got {exc.value!r})"))
    return presets.with_projections(*declared) if declared else presets


def _unloaded(ctx: Any) -> Any:  # stands in for a kind that failed to load; never runs
    raise AssertionError("a wire with problems is never built")


def load_wire(path: str | Path) -> Wire:
    """Load and validate a wire from ``.py``, ``.toml``, ``.yaml`` or ``.yml``.

    ``graphs/<name>`` that is not a file here names the example shipped with
    the package (``graphs/fanout_demo.py``, ``graphs/claim_review.py``), so the
    README's commands work outside a clone too.

    Raises:
        InvalidWire: the file is missing, unreadable or invalid; every problem
            names its field.
    """
    path = Path(path)
    if not path.is_file() and path.parent.as_posix() == "graphs":
        with contextlib.suppress(InvalidArgument):
            path = bundled_path("graphs", path.name)
    if not path.is_file():
        raise InvalidWire([Problem(str(path), "no such file")])
    suffix = path.suffix.lower()
    if suffix == ".py":
        wire = getattr(_module_from_file(path), "wire", None)
        if not isinstance(wire, Wire):
            raise InvalidWire(
                [Problem(str(path), "must define `wire`, a cortex_agents.runtime.Wire")]
            )
        return wire
    try:
        text = path.read_text(encoding="utf-8")
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            raise InvalidWire([Problem(str(path), "must be a .py, .toml, .yaml or .yml file")])
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidWire([Problem(str(path), f"cannot be parsed: {exc}")]) from None
    except CortexError:
        raise
    except Exception as exc:  # yaml.YAMLError and friends
        raise InvalidWire([Problem(str(path), f"cannot be parsed: {exc}")]) from None
    return _from_data(data, path.parent)
