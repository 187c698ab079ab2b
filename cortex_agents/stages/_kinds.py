"""The LLM stage kinds: planner, analyst, merge, reviewer, rewriter.

Each is a stage function (``fn(ctx) -> output``) on any LangChain chat
model (``ctx.extras["chat_model"]``). Outputs are the pydantic models of
:mod:`cortex_agents.stages._outputs`, wrapped in a ``{"contract", "value"}``
envelope the memory extractor peels. What the wire knows is never left to the
model: an analyst's ``claim_ref`` (its routing key) comes from its config,
the merge's attribution from its inputs.

The rewriter is where rewrites show (seed 002): declared rewrite-capable, it
gets ``propose_rewrite`` — by default only when the review it reads found a
gap (config ``repair``: ``on_gap``, ``always`` or ``never``) — and may
append a repair branch, e.g. a follow-up analyst and a re-review, which the
runtime admits or rejects against the run's budget.

The reviewer and rewriter are where memory strategy shows (seed 001, F4):
under topological memory their prompt also carries the analyst branches
*behind* their merge node — their own declared query, e.g.
``Topological(preset="reviewer", upstream_of_kind="analyst")``, ranked
against their focus (:func:`review_focus`: the config's ``focus``, else the
gaps of the review they read, else the claim) — and their model may call
``cortex_memory_query``; under classic they see their direct inputs only,
single-shot.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Literal

from pydantic import BaseModel

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._strategy import Topological
from cortex_agents.runtime._context import StageContext
from cortex_agents.stages._llm import (
    converse,
    render_inputs,
    render_matches_block,
    stage_prompt,
    stage_tools,
    tool_policy,
)
from cortex_agents.stages._outputs import (
    Analysis,
    AnalysisAnswer,
    Branch,
    ClaimFinding,
    Merged,
    MergedAnswer,
    Plan,
    PlanAnswer,
    Report,
    ReportAnswer,
    Review,
    ReviewAnswer,
)
from cortex_agents.stages._structured import AnswerFormat
from cortex_agents.tools._delimit import escape_text
from cortex_agents.tools._memory_query import MEMORY_QUERY_TOOL
from cortex_agents.tools._propose_rewrite import PROPOSE_REWRITE_TOOL

__all__ = ["KINDS", "analyst", "merge", "planner", "review_focus", "reviewer", "rewriter"]

DEFAULT_REFS = ("c1", "c2", "c3")

PLAN = AnswerFormat("plan", PlanAnswer)
ANALYSIS = AnswerFormat("analysis", AnalysisAnswer)
MERGED = AnswerFormat("merged", MergedAnswer)
REVIEW = AnswerFormat("review", ReviewAnswer)
REPORT = AnswerFormat("report", ReportAnswer)


def _envelope(contract: str, value: BaseModel) -> dict[str, Any]:
    return {"contract": contract, "value": value.model_dump(mode="json")}


def _value(output: Any) -> dict[str, Any]:
    return output.get("value", output) if isinstance(output, dict) else {}


def _claim(ctx: StageContext) -> str:
    run_input = ctx.run_input if isinstance(ctx.run_input, dict) else {}
    return str(run_input.get("claim") or ctx.config.get("claim") or "")


def planner(ctx: StageContext) -> dict[str, Any]:
    """Split the run's claim into one question per analyst."""
    refs = list(ctx.config.get("claim_refs", DEFAULT_REFS))
    claim = _claim(ctx)
    # exactly one branch per configured claim part, each naming one of them
    answer = PLAN.narrowed(
        ["properties", "branches"], minItems=len(refs), maxItems=len(refs)
    ).narrowed(["properties", "branches", "items", "properties", "claim_ref"], enum=refs)
    result = converse(
        ctx,
        system=stage_prompt(ctx, branch_count=len(refs), claim_refs=", ".join(refs)),
        user=f"<claim>\n{escape_text(claim)}\n</claim>",
        answer=answer,
    )
    plan = answer.parse(str(result.message.content))
    asked = {b.claim_ref: b.question for b in plan.branches} if plan else {}
    parsed = plan is not None and sorted(asked) == sorted(refs) and len(plan.branches) == len(refs)
    if not parsed:
        asked = {ref: f"What evidence bears on part {ref} of the claim?" for ref in refs}
    branches = [Branch(claim_ref=ref, question=asked[ref]) for ref in refs]
    return _envelope("plan", Plan(claim=claim, branches=branches, parsed=parsed))


def analyst(ctx: StageContext) -> dict[str, Any]:
    """Answer this analyst's question; its routing key is its configured ``claim_ref``."""
    ref = str(ctx.config.get("claim_ref", ctx.stage_id))
    question = next(
        (
            b.get("question", "")
            for out in ctx.inputs.values()
            for b in _value(out).get("branches", [])
            if b.get("claim_ref") == ref
        ),
        "",
    )  # a follow-up analyst a rewrite added has no plan upstream: its config asks
    question = question or str(ctx.config.get("question") or f"What more bears on {ref}?")
    result = converse(
        ctx,
        system=stage_prompt(ctx, claim_ref=escape_text(ref)),
        user=f"<question>\n{escape_text(question)}\n</question>\n{render_inputs(ctx.inputs)}",
        answer=ANALYSIS,
    )
    text = str(result.message.content)
    found = ANALYSIS.parse(text)
    analysis = (
        Analysis(claim_ref=ref, finding=found.finding, evidence=found.evidence)
        if found
        else Analysis(claim_ref=ref, finding=text.strip()[:600], parsed=False)
    )
    return _envelope("analysis", analysis)


def merge(ctx: StageContext) -> dict[str, Any]:
    """Merge the analysts' findings; attribution comes from the inputs, the summary from the model."""
    claims = [
        ClaimFinding(
            claim_ref=_value(out).get("claim_ref", stage), finding=_value(out).get("finding", "")
        )
        for stage, out in sorted(ctx.inputs.items())
    ]
    result = converse(ctx, system=stage_prompt(ctx), user=render_inputs(ctx.inputs), answer=MERGED)
    text = str(result.message.content)
    found = MERGED.parse(text)
    summary = found.summary if found else " ".join(c.finding for c in claims)
    return _envelope("merged", Merged(summary=summary, claims=claims, parsed=found is not None))


def review_focus(ctx: StageContext) -> str:
    """What a reviewing stage's own recall ranks against: the config's ``focus``, else the
    gaps and notes of the reviews among its inputs (a rewriter's case), else the claim."""
    focus = ctx.config.get("focus")
    if isinstance(focus, str) and focus.strip():
        return focus.strip()
    gaps = []
    for out in ctx.inputs.values():
        value = _value(out)
        if value.get("verdict") == "gap":
            gaps += [g for g in value.get("gaps", []) if isinstance(g, str)]
            if isinstance(value.get("notes"), str):
                gaps.append(value["notes"])
    return " ".join(gaps).strip() or _claim(ctx)


def _with_branches(ctx: StageContext) -> tuple[str, dict[str, Any]]:
    """The user message of a reviewing stage (inputs, plus the branches its own query
    recalls) and what to record of that recall: the ids, in rank order, and — for a
    topological stage — the focus they were ranked against."""
    # classic: nothing; topological: e.g. the analysts upstream, ranked against the focus
    focus = review_focus(ctx)
    recalled = ctx.memory.recall(text=focus or None)
    block = render_matches_block("analyst_branches", recalled)
    memory: dict[str, Any] = {"recalled": [m.node_id for m in recalled]}
    if isinstance(ctx.strategy, Topological):
        memory["focus"] = focus
    return "\n".join(part for part in (render_inputs(ctx.inputs), block) if part), memory


def _verdict_in(text: str) -> Literal["sound", "gap"]:
    """The verdict a review's unparsable text states: its ``"verdict"`` value if it wrote one,
    else ``gap`` when the word appears (``gaps``, the key, does not count), else ``sound``."""
    stated = re.search(r'"verdict"\s*:\s*"(sound|gap)"', text)
    if stated:
        return "gap" if stated.group(1) == "gap" else "sound"
    return "gap" if re.search(r"\bgap\b", text, re.IGNORECASE) else "sound"


def reviewer(ctx: StageContext) -> dict[str, Any]:
    """Review the merged result for gaps."""
    user, memory = _with_branches(ctx)
    result = converse(ctx, system=stage_prompt(ctx), user=user, answer=REVIEW)
    text = str(result.message.content)
    found = REVIEW.parse(text)
    review = (
        Review(**found.model_dump())
        if found
        else Review(
            verdict=_verdict_in(text),
            notes=text.strip()[:600],
            parsed=False,
        )
    )
    output = _envelope("review", review)
    output["memory"] = {**memory, "tool_calls": [c.name for c in result.calls]}
    return output


REPAIR_MODES = ("on_gap", "always", "never")


def _repairs(ctx: StageContext) -> bool:
    """Whether this rewriter is offered ``propose_rewrite`` (config ``repair``)."""
    mode = ctx.config.get("repair", "on_gap")
    if mode not in REPAIR_MODES:
        raise InvalidArgument("config.repair", f"must be one of {list(REPAIR_MODES)}", mode)
    if ctx.rewrites is None or mode == "never":
        return False
    verdicts = [_value(out).get("verdict") for out in ctx.inputs.values()]
    return mode == "always" or "gap" in verdicts


def rewriter(ctx: StageContext) -> dict[str, Any]:
    """Write the final report, addressing the review's gaps; may propose a repair branch."""
    user, memory = _with_branches(ctx)
    policy, propose = tool_policy(ctx), True
    if not _repairs(ctx):
        # No repair this time, or no rewrite policy at all (a rewriter a repair appended):
        # propose_rewrite leaves the catalog (and the prompt); the stage's memory tools stay,
        # and a first turn that forced the proposal forces the memory query instead (small
        # models ignore tools otherwise), else relaxes to auto.
        propose = False
        names = {t.name for t in stage_tools(ctx, policy, propose=False)}
        first = MEMORY_QUERY_TOOL if MEMORY_QUERY_TOOL in names else "auto"
        policy = dataclasses.replace(
            policy,
            first=first if policy.first == PROPOSE_REWRITE_TOOL else policy.first,
            then="auto" if policy.then == PROPOSE_REWRITE_TOOL else policy.then,
        )
    result = converse(
        ctx, system=stage_prompt(ctx), user=user, policy=policy, propose=propose, answer=REPORT
    )
    text = str(result.message.content)
    found = REPORT.parse(text)
    report = (
        Report(**found.model_dump()) if found else Report(report=text.strip()[:1200], parsed=False)
    )
    output = _envelope("report", report)
    output["memory"] = {**memory, "tool_calls": [c.name for c in result.calls]}
    if ctx.rewrites is not None:
        output["rewrites"] = [
            {
                "decision": fact.decision,
                "rewrite_id": fact.rewrite_id,
                "code": fact.code,
                "new_nodes": [n["id"] for n in fact.diff.get("nodes", ())],
            }
            for fact in ctx.rewrites.decisions
        ]
    return output


KINDS = {
    "planner": planner,
    "analyst": analyst,
    "merge": merge,
    "reviewer": reviewer,
    "rewriter": rewriter,
}
