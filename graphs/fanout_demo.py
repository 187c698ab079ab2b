"""A deterministic example wire, no LLM: planner -> three analysts -> merge -> reviewer.

Run it::

    cortex-agents run graphs/fanout_demo.py --db fanout.db --thread demo --input '{"claim": "..."}'

The reviewer recalls its memory (its declared strategy, preset ``reviewer``:
the evidence among its ancestors — planner, merge, reviewer and rewriter
outputs left out — text first, then recency and hop decay) through its handle
and records the ranked node ids as ``ranking``. ``cortex-agents export fanout.db --thread demo --as-seen-by
reviewer -o seen.json`` writes the snapshot it saw, and
``cortex-agents memory query seen.json --origin reviewer --preset reviewer --json``
reproduces that ranking exactly.
"""

from __future__ import annotations

from typing import Any

from cortex_agents.memory import Topological
from cortex_agents.runtime import StageContext, WireBuilder

QUESTIONS = {
    "analyst-a": ("c1", "What do controlled studies measure?"),
    "analyst-b": ("c2", "What do self-reported surveys say?"),
    "analyst-c": ("c3", "What confounders are known?"),
}


def plan(ctx: StageContext) -> dict[str, Any]:
    """Split the claim into one question per analyst."""
    claim = (ctx.run_input or {}).get("claim", "Remote work raises developer productivity.")
    branches = [{"claim_ref": ref, "question": q} for ref, q in QUESTIONS.values()]
    return {"contract": "plan", "value": {"claim": claim, "branches": branches}}


def analyse(ctx: StageContext) -> dict[str, Any]:
    """Answer this analyst's question (canned, so runs are reproducible)."""
    ref, question = QUESTIONS[ctx.stage_id]
    (plan_output,) = ctx.inputs.values()
    claim = plan_output["value"]["claim"]
    finding = f"On {claim!r}, asked {question.lower()} Evidence for {ref} is mixed."
    return {"contract": "analysis", "value": {"claim_ref": ref, "finding": finding}}


def merge(ctx: StageContext) -> dict[str, Any]:
    """Combine the analysts' findings in id order."""
    findings = [ctx.inputs[k]["value"]["finding"] for k in sorted(ctx.inputs)]
    return {"contract": "merged", "value": {"summary": " ".join(findings)}}


def review(ctx: StageContext) -> dict[str, Any]:
    """Recall memory with the stage's declared query (preset ``reviewer``) and record the ranking."""
    matches = ctx.memory.recall()
    return {
        "ranking": [m.node_id for m in matches],
        "scores": {m.node_id: m.score for m in matches},
        "verdict": f"reviewed {len(ctx.inputs)} input(s) and {len(matches)} memories",
    }


wire = (
    WireBuilder("fanout_demo")
    .kind("planner", plan, "split a claim into questions")
    .kind("analyst", analyse, "answer one question")
    .kind("merge", merge, "combine findings")
    .kind("reviewer", review, "rank memory and review")
    .stage("planner", "planner")
    .stage("analyst-a", "analyst", after=["planner"])
    .stage("analyst-b", "analyst", after=["planner"])
    .stage("analyst-c", "analyst", after=["planner"])
    .stage("merge", "merge", after=["analyst-a", "analyst-b", "analyst-c"])
    .stage("reviewer", "reviewer", after=["merge"], memory=Topological(preset="reviewer"))
    .build()
)
