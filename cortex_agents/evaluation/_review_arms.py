"""The four reviewers compared, each running one labelled case through a real runtime.

Every arm runs the same wire shape — planner -> ``analyst-a``/``-b``/``-c`` ->
merge -> reviewer — in which only the reviewer calls a model: the planner,
the analysts and the merge are plain stage functions whose outputs are the
case's data (:mod:`cortex_agents.evaluation._reviews`), in the shapes the LLM
stages store (:mod:`cortex_agents.stages._outputs`), so memory extracts and
ranks them as it would a live run's. The reviewer is the shipped ``reviewer``
stage kind, with the eval's prompts (``prompts/eval_reviews/``: the shipped
ones plus the five flaw kinds and a gap shape that names the part's key),
the same in every arm. The arms differ only in what the reviewer sees:

``classic``
    its direct input, the merge (no tool, one call);
``topological``
    the shipped reviewer's memory (``graphs/claim_review.py``: preset
    ``reviewer``, analysts upstream) — the analysts it recalls in its prompt,
    and ``cortex_memory_query``, forced on its first turn;
``seed``
    the same, with the seed's ranking as its preset: influence prior,
    weights 1.5/1/1, token Jaccard, every kind, no limit (:data:`SEED_PRESET`);
``oracle``
    classic, with the flawed analyst's output as a second direct input (a
    control's: one analyst, chosen by the id's hash): the ceiling.

The topological arms take the shipped reviewer's tool policy: one round, the
tool offering only ``query_text`` (:data:`MEMORY_TOOL_ARGUMENTS`), one call
per turn (asked for with ``parallel_tool_calls: false``, which the model may
ignore; further calls are refused), the memory query forced first (by ``tool_choice: "required"`` with that tool
alone when the settings' ``tool_force`` says so: llama.cpp's server ignores a
named choice), and ``" "`` as the content of a tool-call turn (llama.cpp
refuses ``null``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import RecordedModel
from cortex_agents._timestamps import parse_timestamp
from cortex_agents.errors import RunFailed
from cortex_agents.evaluation._reviews import ANALYSTS, ReviewCase
from cortex_agents.memory._presets import Preset, PresetRegistry
from cortex_agents.memory._spec import WalkSpec, Weights
from cortex_agents.memory._strategy import Classic, MemoryStrategy, Topological
from cortex_agents.runtime import LogicalClock, Progress, RunResult, Runtime, Wire, WireBuilder
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._wire_file import load_wire
from cortex_agents.stages import KINDS
from cortex_agents.stages._llm import CHAT_MODEL, TOOL_FORCE, TOOL_RESEND_INVALID
from cortex_agents.stages._outputs import Analysis, Branch, ClaimFinding, Merged, Plan
from cortex_agents.stages._structured import STRUCTURED_OUTPUT
from cortex_agents.stages._tool_turn_cap import TOOL_TURN_MAX_TOKENS

__all__ = [
    "ARMS",
    "CLOCK_START",
    "MEMORY_TOOL_ARGUMENTS",
    "SEED_PRESET",
    "Arm",
    "ReviewRun",
    "oracle_analyst",
    "review_wire",
    "run_case",
    "run_review",
]

Arm = Literal["classic", "topological", "seed", "oracle"]
ARMS: Final[tuple[Arm, ...]] = ("classic", "topological", "seed", "oracle")
CLOCK_START: Final = "2026-01-01T09:00:00Z"
MEMORY_TOOL_ARGUMENTS: Final = ("query_text",)
SEED_PRESET: Final = Preset(
    name="seed-reviewer",
    spec=WalkSpec(weights=Weights(graph=1.5)),
    scorer="jaccard",
    description="the seed's reviewer: influence, weights 1.5/1/1, token Jaccard, every kind",
)


def _envelope(contract: str, value: Any) -> dict[str, Any]:
    return {"contract": contract, "value": value.model_dump(mode="json")}


def _case(ctx: StageContext) -> ReviewCase:
    return ReviewCase.from_json(ctx.run_input["case"])


def _planner(ctx: StageContext) -> dict[str, Any]:
    case = _case(ctx)
    branches = [Branch(claim_ref=b.claim_ref, question=b.question) for b in case.branches]
    return _envelope("plan", Plan(claim=case.claim, branches=branches))


def _analyst(ctx: StageContext) -> dict[str, Any]:
    branch = _case(ctx).branch(str(ctx.config["claim_ref"]))
    analysis = Analysis(
        claim_ref=branch.claim_ref, finding=branch.finding, evidence=list(branch.evidence)
    )
    return _envelope("analysis", analysis)


def _merge(ctx: StageContext) -> dict[str, Any]:
    case = _case(ctx)
    # attributed like the LLM merge's, but compressed: the part's figure rose, no detail
    claims = [
        ClaimFinding(claim_ref=b.claim_ref, finding=f"{b.metric} rose in {case.year}")
        for b in case.branches
    ]
    return _envelope("merged", Merged(summary=case.summary, claims=claims))


def oracle_analyst(case: ReviewCase) -> str:
    """The analyst whose output the oracle reviewer reads: the flawed one, or (a control) one
    chosen by the id's SHA-256."""
    if case.flawed is not None:
        return case.flawed
    digest = hashlib.sha256(case.id.encode("utf-8")).digest()
    return ANALYSTS[digest[1] % len(ANALYSTS)][0]


def _shipped_reviewer() -> tuple[MemoryStrategy, dict[str, Any], PresetRegistry]:
    """The shipped claim-review wire's reviewer: its memory, its tool policy, the presets."""
    wire = load_wire(bundled_path("graphs", "claim_review.py"))
    stage = wire.stage("reviewer")
    config: dict[str, Any] = {"tools": dict(stage.config.get("tools", {}))}
    # the tool offers only query_text (as the shipped wire does): offered every argument, the
    # 1.5B model filled them all (direction "descendants", a routing key, limit 1: no match)
    config["memory_tool_arguments"] = list(MEMORY_TOOL_ARGUMENTS)
    # and runs one call per turn (the rest are refused): the model ignores a one-call request
    config["tools"]["max_calls_per_turn"] = 1
    return stage.memory, config, wire.presets


def review_wire(arm: Arm, case: ReviewCase) -> Wire:
    """The wire of one arm for one case (only the oracle's depends on the case)."""
    shipped, tools, presets = _shipped_reviewer()
    # only the seed arm knows the seed preset: the tool's schema lists the presets it may name
    presets = presets.with_presets(SEED_PRESET) if arm == "seed" else presets
    builder = WireBuilder(f"eval_reviews_{arm}", presets=presets)
    for kind, fn in (("planner", _planner), ("analyst", _analyst), ("merge", _merge)):
        builder.kind(kind, fn)
    builder.kind("reviewer", KINDS["reviewer"])
    builder.stage("planner", "planner")
    for analyst, ref in ANALYSTS:
        builder.stage(analyst, "analyst", after=["planner"], config={"claim_ref": ref})
    builder.stage("merge", "merge", after=[a for a, _ in ANALYSTS])
    memory: MemoryStrategy = Classic()
    config: dict[str, Any] = {}
    after = ["merge"]
    if arm == "topological":
        memory, config = shipped, tools
    elif arm == "seed":
        upstream = shipped.upstream_of_kind if isinstance(shipped, Topological) else "analyst"
        memory = Topological(preset=SEED_PRESET.name, upstream_of_kind=upstream)
        config = tools
    elif arm == "oracle":
        after.append(oracle_analyst(case))
    return builder.stage("reviewer", "reviewer", after=after, memory=memory, config=config).build()


class UsageCounter(BaseCallbackHandler):
    """Collects ``(prompt, completion)`` tokens of every model response (its ``usage``)."""

    def __init__(self) -> None:
        self.usage: list[tuple[int, int]] = []

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Reads the usage of one response."""
        for generations in response.generations:
            for generation in generations:
                meta = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                self.usage.append(
                    (int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0)))
                )


@dataclass(frozen=True, slots=True)
class ReviewRun:
    """What one reviewer did on one case.

    Attributes:
        case: The case id.
        arm: The arm.
        review: The reviewer's output value (``None``: the stage did not complete).
        tool_calls: The tools it called, in order.
        usage: ``(prompt, completion)`` tokens of each model response.
        failures: Stages that failed, with their errors.
    """

    case: str
    arm: str
    review: dict[str, Any] | None
    tool_calls: tuple[str, ...] = ()
    usage: tuple[tuple[int, int], ...] = ()
    failures: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def run_case(
    case: ReviewCase,
    arm: Arm,
    settings: RecordedModel,
    *,
    saver: BaseCheckpointSaver[Any] | None = None,
    thread: str | None = None,
    api_key: str = "sk-replay",
    on_progress: Callable[[Progress], None] | None = None,
    callbacks: Sequence[BaseCallbackHandler] = (),
) -> RunResult:
    """Run one case through one arm's wire with the model ``settings`` describe (live, or
    replayed by the caller's cassette), into ``saver`` (default: in memory) on ``thread``
    (default: the case id). A stage that failed is in the result's ``failures`` (the wire
    stops there), not raised.

    The clock is fixed per run and neither the saver nor the thread reaches a request, so
    the requests are byte-identical every time: what lets a recording replay.
    """
    chat_model = settings.chat_model(api_key)
    chat_model.callbacks = list(callbacks)
    if arm in ("topological", "seed"):
        # asks for one memory call per turn: free to, the 1.5B model writes a dozen calls in
        # one turn until max_tokens cuts one mid-arguments (the recording's llama-server did
        # not always honour the request; the calls past the first are refused)
        chat_model.model_kwargs = {**chat_model.model_kwargs, "parallel_tool_calls": False}
    services = {
        CHAT_MODEL: chat_model,
        STRUCTURED_OUTPUT: settings.structured_output,
        TOOL_FORCE: settings.tool_force,
        TOOL_RESEND_INVALID: settings.resend_invalid,
        # the forced memory turn capped (when set): one call, not a dozen refused unread
        TOOL_TURN_MAX_TOKENS: settings.tool_turn_max_tokens,
        "prompts_dir": bundled_path("prompts", "eval_reviews"),
    }
    clock = LogicalClock(parse_timestamp(CLOCK_START, "clock_start"))
    runtime = Runtime(
        review_wire(arm, case), saver or InMemorySaver(), clock=clock, services=services
    )
    thread = thread or case.id
    try:
        return runtime.run(
            thread, {"claim": case.claim, "case": case.to_json()}, on_progress=on_progress
        )
    except RunFailed:  # the substrate recorded which stage failed and why: the result says so
        return runtime.result(thread)


def run_review(
    case: ReviewCase, arm: Arm, settings: RecordedModel, api_key: str = "sk-replay"
) -> ReviewRun:
    """What one arm's reviewer did on ``case`` (:func:`run_case` in memory), with the tokens
    of every model response; a failed run is a review of ``None``, never an error."""
    counter = UsageCounter()
    result = run_case(case, arm, settings, api_key=api_key, callbacks=[counter])
    # a reviewer that failed, or never ran (the wire stops on failure), has no output
    output = result.outputs.get("reviewer")
    value = output.get("value") if isinstance(output, dict) else None
    calls = output.get("memory", {}).get("tool_calls", []) if isinstance(output, dict) else []
    return ReviewRun(
        case=case.id,
        arm=arm,
        review=value if isinstance(value, dict) else None,
        tool_calls=tuple(calls),
        usage=tuple(counter.usage),
        failures=tuple(result.failures),
    )
