"""Recorded scenarios: workflows whose LLM exchanges ship as cassettes, replayable offline.

A scenario names a wire, an input, a thread and a clock start. Recording it
(:func:`record_scenario`, used by ``tools/record_cassettes.py``) runs it live
against an OpenAI-compatible endpoint and writes ``cassettes/<name>.yaml``
plus ``cassettes/<name>.json`` — the model settings the requests were made
with. Replaying it (:func:`run_recorded`, behind ``cortex-agents demo``)
rebuilds the same model and clock, so every request body is byte-identical
to a recorded one, and runs with the network blocked.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from cortex_agents.bundled import bundled_path
from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence.saver import CortexSaver
from cortex_agents.runtime import (
    LogicalClock,
    Progress,
    RewriteBudget,
    RunResult,
    Runtime,
    Wire,
    load_wire,
)
from cortex_agents.stages.llm import CHAT_MODEL, build_chat_model
from cortex_agents.testing import record, replay
from cortex_agents.timestamps import format_timestamp, parse_timestamp

__all__ = [
    "SCENARIOS",
    "RecordedModel",
    "Scenario",
    "record_scenario",
    "recorded_model",
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
            proposes; a recording that misses its point is not kept).
    """

    name: str
    wire: str
    input: dict[str, Any]
    thread: str
    clock_start: str
    description: str = ""
    stage_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    budget: Mapping[str, int] = field(default_factory=dict)
    expect: tuple[str, ...] = ()

    def outcomes(self, result: RunResult) -> tuple[str, ...]:
        """The rewrite outcomes of a run: ``admitted`` or the rejection code, in order."""
        return tuple(f.code or f.decision for f in result.state.rewrites)

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


_CLAIM_REVIEW: Final = Scenario(
    name="claim_review",
    wire="claim_review.py",
    input={"claim": "Remote work raises software developer productivity."},
    thread="demo",
    clock_start="2026-01-01T09:00:00Z",
    description="planner -> three analysts -> merge -> reviewer (topological) -> rewriter",
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
        ),
    )
}


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
    """

    base_url: str
    model: str
    seed: int = 7
    max_tokens: int = 256
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"

    def chat_model(self, api_key: str = "sk-replay") -> Any:
        """The ``ChatOpenAI`` whose requests match the recording."""
        return build_chat_model(
            model=self.model,
            base_url=self.base_url,
            api_key=api_key,
            seed=self.seed,
            max_tokens=self.max_tokens,
            max_tokens_field=self.max_tokens_field,
            max_retries=0,
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


def _runtime(scenario: Scenario, saver: CortexSaver, chat_model: Any) -> Runtime:
    wire = scenario.load_wire()
    clock = LogicalClock(parse_timestamp(scenario.clock_start, "clock_start"))
    return Runtime(wire, saver, clock=clock, services={CHAT_MODEL: chat_model})


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
        FileNotFoundError: the scenario has no cassette.
    """
    folder = folder or bundled_path("cassettes")
    model = recorded_model(scenario, folder).chat_model()
    with replay(folder / f"{scenario.name}.yaml"):
        return _runtime(scenario, saver, model).run(
            thread or scenario.thread, scenario.input, on_progress=on_progress
        )


def record_scenario(
    scenario: Scenario,
    saver: CortexSaver,
    settings: RecordedModel,
    *,
    folder: Path,
    api_key: str = "sk-local",
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run a scenario live against ``settings.base_url``, recording its cassette and settings."""
    model = settings.chat_model(api_key)
    with record(folder / f"{scenario.name}.yaml"):
        result = _runtime(scenario, saver, model).run(
            scenario.thread, scenario.input, on_progress=on_progress
        )
    meta = {
        "scenario": asdict(scenario),
        "model": asdict(settings),
        "recorded_at": format_timestamp(datetime.now().astimezone()),
        "stages": {n.id: n.status for n in result.state.nodes.values()},
    }
    _meta_path(scenario, folder).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return result
