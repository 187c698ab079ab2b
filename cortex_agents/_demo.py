"""Recorded scenarios: workflows whose LLM exchanges ship as cassettes, replayable offline.

A scenario names a wire, an input, a thread and a clock start, and says
which choices it forces (a repair the model did not decide, a budget of
zero) so the demo can say so. Recording it
(:func:`record_scenario`, used by ``tools/record_cassettes.py``) runs it live
against an OpenAI-compatible endpoint and writes ``cassettes/<name>.yaml``
plus ``cassettes/<name>.json`` — the model settings the requests were made
with. Replaying it (:func:`run_recorded`, behind ``cortex-agents demo``)
rebuilds the same model and clock, so every request body is byte-identical
to a recorded one, and runs with the network blocked.

:data:`SCENARIOS` are what ``cortex-agents demo`` shows; :data:`FIXTURES`
are recorded the same way for tests only (``tests/replay/cassettes``), e.g.
a model cut short mid tool call.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from cortex_agents._bundled import bundled_path
from cortex_agents._timestamps import format_timestamp, parse_timestamp
from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._transfer import thread_config
from cortex_agents.runtime import (
    LogicalClock,
    Progress,
    RewriteBudget,
    RunResult,
    Runtime,
    Wire,
    load_wire,
)
from cortex_agents.stages._llm import (
    CHAT_MODEL,
    TOOL_FORCE,
    TOOL_RESEND_INVALID,
    build_chat_model,
)
from cortex_agents.stages._structured import STRUCTURED_OUTPUT
from cortex_agents.stages._tool_turn_cap import TOOL_TURN_MAX_TOKENS, check_tool_turn_cap
from cortex_agents.substrate import ToolCallMade
from cortex_agents.testing import record, replay

__all__ = [
    "FIXTURES",
    "is_malformed_call",
    "SCENARIOS",
    "RecordedModel",
    "Scenario",
    "record_scenario",
    "recorded_model",
    "recorded_result",
    "run_recorded",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """A workflow run whose LLM exchanges are recorded.

    Attributes:
        name: Cassette name (``cassettes/<name>.yaml``).
        wire: The shipped wire file (in ``graphs/``).
        input: The run's input.
        thread: The thread id it runs on.
        clock_start: The logical clock's start (ISO 8601).
        description: One line for humans.
        stage_config: Config laid over the wire's, per stage id.
        budget: Rewrite budget dimensions laid over the wire's.
        expect: The rewrite outcomes the recording must show, in order:
            ``admitted`` or a rejection code (a live model decides what it
            proposes; a recording that misses its point is not kept);
            ``None``: whatever the model decided (a repair when its review
            found a gap, none when it found none).
        forced: The choices the scenario makes instead of the model or the
            wire, in words (the demo states them).
        max_tokens: An output cap replacing the recording settings' (a
            fixture cuts the model short on purpose).
        malformed: Whether the recording must show a tool call refused for
            malformed arguments (a fixture's point) or must show none (a
            demo's). A demo scenario's structured outputs must also all parse.
    """

    name: str
    wire: str
    input: dict[str, Any]
    thread: str
    clock_start: str
    description: str = ""
    stage_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    budget: Mapping[str, int] = field(default_factory=dict)
    expect: tuple[str, ...] | None = None
    forced: tuple[str, ...] = ()
    max_tokens: int | None = None
    malformed: bool = False

    def outcomes(self, result: RunResult) -> tuple[str, ...]:
        """The rewrite outcomes of a run: ``admitted`` or the rejection code, in order."""
        return tuple(f.code or f.decision for f in result.state.rewrites)

    def misses(self, result: RunResult) -> list[str]:
        """How a recorded run misses the scenario's point (empty: keep it)."""
        misses = []
        if not result.complete or result.failures:
            misses.append(f"the run did not complete ({sorted(result.failures)})")
        if self.expect is not None and (outcomes := self.outcomes(result)) != self.expect:
            misses.append(f"rewrite outcomes {list(outcomes)}, expected {list(self.expect)}")
        refused = [
            e.node_id
            for e in result.log
            if isinstance(e, ToolCallMade) and is_malformed_call(e.result)
        ]
        if self.malformed and not refused:
            misses.append("no tool call was refused for malformed arguments")
        if not self.malformed and refused:
            misses.append(f"tool calls refused for malformed arguments: {refused}")
        inferred = sorted(stage for stage, out in result.outputs.items() if not _parsed(out))
        if not self.malformed and inferred:
            misses.append(f"outputs inferred from text, not the JSON asked for: {inferred}")
        return misses

    def load_wire(self) -> Wire:
        """The scenario's wire: the shipped file with its overrides applied."""
        wire = load_wire(bundled_path("graphs", self.wire))
        if not self.stage_config and not self.budget:
            return wire
        unknown = sorted(set(self.stage_config) - {s.id for s in wire.stages})
        if unknown:
            raise InvalidArgument("stage_config", f"names no stage of {wire.name!r}", unknown)
        stages = tuple(
            dataclasses.replace(s, config={**s.config, **self.stage_config.get(s.id, {})})
            for s in wire.stages
        )
        budget = RewriteBudget(**{**wire.budget.as_dict(), **self.budget})
        return dataclasses.replace(wire, stages=stages, budget=budget)


def _parsed(output: Any) -> bool:
    value = output.get("value") if isinstance(output, dict) else None
    # Only an explicit `parsed: False` counts: outputs of stages that ask for no
    # JSON (and so carry no flag) are not misses.
    return not isinstance(value, dict) or value.get("parsed", True) is not False


def is_malformed_call(result: Any) -> bool:
    """Whether a journaled tool result is the refusal of arguments that were not a JSON object."""
    if not isinstance(result, dict) or result.get("status") != "error":
        return False
    try:
        error = json.loads(str(result.get("content", ""))).get("error", {})
    except (ValueError, AttributeError):
        return False
    return error.get("code") == "invalid_argument" and "not a valid JSON object" in str(
        error.get("message", "")
    )


_CLAIM_REVIEW: Final = Scenario(
    name="claim_review",
    wire="claim_review.py",
    input={"claim": "Remote work raises software developer productivity."},
    thread="demo",
    clock_start="2026-01-01T09:00:00Z",
    description="planner -> three analysts -> merge -> reviewer (topological) -> rewriter",
    forced=(
        "the reviewer's first model turn must call cortex_memory_query (the wire's tool "
        "policy); the query's arguments are the model's",
    ),
)
_REPAIR_FORCED: Final = (
    "the rewriter is configured repair = always: it is offered propose_rewrite and its "
    "first turn must call it, whatever the review found (with repair = on_gap, the "
    "default, a sound review means no repair)",
)

SCENARIOS: Final[dict[str, Scenario]] = {
    s.name: s
    for s in (
        _CLAIM_REVIEW,
        dataclasses.replace(
            _CLAIM_REVIEW,
            name="claim_review_repair",
            thread="repair",
            description="the rewriter proposes a repair branch and the runtime admits it; "
            "the branch runs",
            stage_config={"rewriter": {"repair": "always"}},
            expect=("admitted",),
            forced=(*_CLAIM_REVIEW.forced, *_REPAIR_FORCED),
        ),
        dataclasses.replace(
            _CLAIM_REVIEW,
            name="claim_review_over_budget",
            thread="over-budget",
            description="the run's budget grants no new node: the rewriter's repair branch "
            "is rejected",
            stage_config={"rewriter": {"repair": "always"}},
            budget={"nodes": 0},
            expect=("rewrite_budget_exceeded",),
            forced=(
                *_CLAIM_REVIEW.forced,
                *_REPAIR_FORCED,
                "the run's rewrite budget is set to 0 new nodes, so any repair is rejected",
            ),
        ),
        dataclasses.replace(
            _CLAIM_REVIEW,
            name="claim_review_compare",
            wire="claim_review_compare.py",
            thread="compare",
            description="the same merge reviewed twice: a classic reviewer (direct inputs "
            "only) beside a topological one (the analyst branches too)",
            forced=(
                "the topological reviewer's first model turn must call cortex_memory_query; "
                "the classic reviewer has no tool",
            ),
        ),
    )
}

FIXTURES: Final[dict[str, Scenario]] = {
    s.name: s
    for s in (
        dataclasses.replace(
            _CLAIM_REVIEW,
            name="malformed_tool_call",
            thread="malformed",
            description="every answer cut at 24 tokens: the reviewer's forced tool call "
            "arrives as unterminated JSON, and the answers are not the JSON asked for",
            max_tokens=24,
            forced=("every model answer is capped at 24 tokens",),
            malformed=True,
        ),
    )
}
"""Recorded like the scenarios, for tests only (``tests/replay/cassettes``), never in the demo."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedModel:
    """The model settings a cassette was recorded with (requests depend on every one).

    Attributes:
        base_url: The OpenAI-compatible endpoint.
        model: The model name sent.
        seed: Sampling seed sent.
        max_tokens: Output cap.
        max_tokens_field: The request field carrying the cap: OpenAI's
            ``max_completion_tokens`` (langchain's default), or the older
            ``max_tokens``, which llama.cpp's server reads (it ignores the other).
        structured_output: The response-format form every stage's answer
            asks for (:mod:`cortex_agents.stages._structured`): ``json_object``
            for llama-cpp-python's server, ``json_schema`` for OpenAI's API.
        frequency_penalty: Sent with every request when set (a small model
            otherwise loops on a phrase until its cap cuts a tool call short).
        tool_force: How a stage's policy forces a tool by name
            (``ToolPolicy.force``): ``named`` (OpenAI's form) or ``required``
            with that tool alone (llama.cpp's ``llama-server`` ignores a named choice).
        resend_invalid: How a call with unparsable arguments is sent back in
            later turns (``ToolPolicy.resend_invalid``): ``verbatim`` or
            ``wrapped`` (``llama-server`` refuses a history it cannot parse).
        tool_turn_max_tokens: Output cap of a turn that forces a tool
            (:mod:`cortex_agents.stages._tool_turn_cap`), sent in the
            ``max_tokens_field``; ``None`` (the default): ``max_tokens`` on
            every turn. A small model asked for one call writes a dozen until
            the cap cuts the turn; this cap must still fit one whole call.

    Raises:
        InvalidArgument: ``tool_turn_max_tokens`` is neither ``None`` nor an
            integer from 1 to ``max_tokens``.
    """

    base_url: str
    model: str
    seed: int = 7
    max_tokens: int = 256
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    structured_output: Literal["json_schema", "json_object", "off"] = "json_schema"
    frequency_penalty: float | None = None
    tool_force: Literal["named", "required"] = "named"
    resend_invalid: Literal["verbatim", "wrapped"] = "verbatim"
    tool_turn_max_tokens: int | None = None

    def __post_init__(self) -> None:
        check_tool_turn_cap(
            self.tool_turn_max_tokens, "tool_turn_max_tokens", max_tokens=self.max_tokens
        )

    def chat_model(self, api_key: str = "sk-replay") -> Any:
        """The ``ChatOpenAI`` whose requests match the recording."""
        return build_chat_model(
            model=self.model,
            base_url=self.base_url,
            api_key=api_key,
            seed=self.seed,
            max_tokens=self.max_tokens,
            max_tokens_field=self.max_tokens_field,
            # A retry would send a request the cassette does not hold (replay) or record
            # it twice (recording): one request, one exchange.
            max_retries=0,
            frequency_penalty=self.frequency_penalty,
        )


def _meta_path(scenario: Scenario, folder: Path) -> Path:
    return folder / f"{scenario.name}.json"


def recorded_model(scenario: Scenario, folder: Path | None = None) -> RecordedModel:
    """The settings a scenario's cassette was recorded with.

    Raises:
        InvalidArgument: the scenario has no recording.
    """
    folder = folder or bundled_path("cassettes")
    meta_path = _meta_path(scenario, folder)
    if not meta_path.is_file() or not (folder / f"{scenario.name}.yaml").is_file():
        raise InvalidArgument(
            "scenario",
            f"has no recorded cassette in {folder}; record it with tools/record_cassettes.py",
            scenario.name,
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    return RecordedModel(**meta["model"])


def _settings(scenario: Scenario, settings: RecordedModel) -> RecordedModel:
    """The settings a scenario's requests are made with: its own cap, if it sets one (on every
    turn: a forced-turn cap above it is dropped)."""
    if scenario.max_tokens is None:
        return settings
    cap = settings.tool_turn_max_tokens
    return dataclasses.replace(
        settings,
        max_tokens=scenario.max_tokens,
        # RecordedModel refuses a forced-turn cap above max_tokens, and the scenario's
        # cap would cut such a turn first anyway.
        tool_turn_max_tokens=cap if cap is not None and cap < scenario.max_tokens else None,
    )


def _runtime(scenario: Scenario, saver: CortexSaver, settings: RecordedModel, key: str) -> Runtime:
    wire = scenario.load_wire()
    clock = LogicalClock(parse_timestamp(scenario.clock_start, "clock_start"))
    services = {
        CHAT_MODEL: settings.chat_model(key),
        STRUCTURED_OUTPUT: settings.structured_output,
        TOOL_FORCE: settings.tool_force,
        TOOL_RESEND_INVALID: settings.resend_invalid,
        TOOL_TURN_MAX_TOKENS: settings.tool_turn_max_tokens,
    }
    return Runtime(wire, saver, clock=clock, services=services)


def run_recorded(
    scenario: Scenario,
    saver: CortexSaver,
    *,
    thread: str | None = None,
    folder: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Replay a scenario from its cassette, network blocked, into ``saver``.

    Raises:
        MissingCassette: the scenario has no cassette (a ``FileNotFoundError``).
    """
    folder = folder or bundled_path("cassettes")
    settings = recorded_model(scenario, folder)
    with replay(folder / f"{scenario.name}.yaml"):
        # Any key replays: the cassettes filter the auth header out of what they match on.
        return _runtime(scenario, saver, settings, "sk-replay").run(
            thread or scenario.thread, scenario.input, on_progress=on_progress
        )


def recorded_result(
    scenario: Scenario, saver: CortexSaver, thread: str, *, folder: Path | None = None
) -> RunResult | None:
    """What ``thread`` holds of a scenario's run, read back without replaying (``None``: no
    such thread). Nothing is sent anywhere: no model is called to read a result.

    Raises:
        InvalidArgument: the thread holds a run of another wire.
    """
    if saver.get_tuple(thread_config(thread)) is None:
        return None
    settings = recorded_model(scenario, folder)
    result = _runtime(scenario, saver, settings, "sk-replay").result(thread)
    declared = {s.id for s in scenario.load_wire().stages}
    # A subset, not equality: admitted rewrites add nodes the wire does not declare.
    if not declared <= set(result.state.nodes):
        raise InvalidArgument(
            "thread",
            f"holds a run that is not of scenario {scenario.name!r} (its stages: "
            f"{sorted(result.state.nodes)[:8]}); choose another thread",
            thread,
        )
    return result


def record_scenario(
    scenario: Scenario,
    saver: CortexSaver,
    settings: RecordedModel,
    *,
    folder: Path,
    api_key: str = "sk-local",
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run a scenario live against ``settings.base_url``, recording its cassette and settings.

    The settings written are those the requests were made with (the
    scenario's own ``max_tokens`` included), so replay rebuilds them as they were.
    """
    settings = _settings(scenario, settings)
    with record(folder / f"{scenario.name}.yaml"):
        result = _runtime(scenario, saver, settings, api_key).run(
            scenario.thread, scenario.input, on_progress=on_progress
        )
    meta = {
        "scenario": asdict(scenario),
        "model": asdict(settings),
        # The wall clock only reaches this metadata file, never a prompt: request
        # bodies stay byte-identical between recording and replay.
        "recorded_at": format_timestamp(datetime.now().astimezone()),
        "stages": {n.id: n.status for n in result.state.nodes.values()},
    }
    _meta_path(scenario, folder).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return result
