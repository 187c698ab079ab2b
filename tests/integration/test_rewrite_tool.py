"""``propose_rewrite`` in LLM stages (scripted model, offline): offered only where declared,
decisions returned to the model, bad arguments recorded and readable, repair branches run."""

from __future__ import annotations

import json
from dataclasses import replace

from cortex_agents.rewrite import RewritePolicy
from cortex_agents.substrate import RewriteAdmitted, RewriteRejected, ToolCallMade
from tests.integration.test_llm_stages import CLAIM_REVIEW, model, run
from tests.support.chat import call, say

GAP = say(json.dumps({"verdict": "gap", "gaps": ["c2 lacks a trial"], "notes": "n"}))
SOUND = say(json.dumps({"verdict": "sound"}))
REPAIR = {
    "operation": "append_after",
    "anchor": "rewriter",
    "nodes": [
        {
            "id": "followup",
            "kind": "analyst",
            "config": {"claim_ref": "c2", "question": "Any trial?"},
        },
        {"id": "recheck", "kind": "reviewer"},
    ],
    "rationale": "the review found a gap in c2",
}
REPORT = say(json.dumps({"report": "final", "addressed": ["c2 lacks a trial"]}))


def rewriter_requests(chat):
    return [r for r in chat.requests if r["system"].startswith("You write the final report")]


def test_a_gap_gets_the_rewriter_the_tool_and_its_admitted_repair_branch_runs():
    result, chat = run(
        CLAIM_REVIEW, model([GAP], [call("propose_rewrite", REPAIR, "rw-1"), REPORT])
    )
    assert result.complete
    first = rewriter_requests(chat)[0]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "cortex_memory_query",
        "propose_rewrite",
    ]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "propose_rewrite"}}
    assert "propose_rewrite" in first["system"]  # the nudge: the tool is in the catalog
    schema = first["tools"][1]["function"]["parameters"]
    assert schema["properties"]["anchor"]["enum"] == ["rewriter"]
    assert "mode" not in schema["properties"]  # the rewriter may only append_after
    # the decision went back to the model as the tool result
    answer = json.loads(rewriter_requests(chat)[1]["messages"][-1].content)
    assert answer["decision"] == "admitted"
    assert answer["new_nodes"] == ["rewriter:followup", "rewriter:recheck"]
    assert answer["budget_remaining"]["nodes"] == 14
    # the branch ran after the rewriter, in order, with the config the model gave
    followup = result.state.nodes["rewriter:followup"]
    assert followup.config == {"claim_ref": "c2", "question": "Any trial?"}
    assert result.outputs["rewriter:followup"]["value"]["claim_ref"] == "c2"
    assert result.state.predecessors("rewriter:recheck") == ("rewriter:followup",)
    analyst_prompt = next(r for r in chat.requests if "Any trial?" in r["messages"][1].content)
    assert "part c2" in analyst_prompt["system"]
    # the re-review inherits the wire reviewer's declaration: topological, forced memory call
    recheck = [r for r in chat.requests if r["system"].startswith("You review")][-1]
    assert recheck["tool_choice"]["function"]["name"] == "cortex_memory_query"
    assert result.outputs["rewriter"]["rewrites"][0]["decision"] == "admitted"


def test_a_sound_review_keeps_the_memory_tool_but_offers_and_mentions_no_rewrite():
    result, chat = run(CLAIM_REVIEW, model([SOUND], [REPORT]))
    (request,) = rewriter_requests(chat)
    # still a topological stage: its memory tool stays; only propose_rewrite leaves the catalog
    assert [t["function"]["name"] for t in request["tools"]] == ["cortex_memory_query"]
    # the forced propose_rewrite choice becomes a forced memory query (its memory tool is there)
    assert request["tool_choice"] == {
        "type": "function",
        "function": {"name": "cortex_memory_query"},
    }
    assert "propose_rewrite" not in request["system"]
    assert "cortex_memory_query" in request["system"]
    assert result.state.rewrites == () and result.outputs["rewriter"]["rewrites"] == []


def test_a_forged_propose_rewrite_after_a_sound_review_runs_nothing():
    forged = call("propose_rewrite", REPAIR, "rw-forged")
    result, chat = run(CLAIM_REVIEW, model([SOUND], [forged, REPORT]))
    assert result.complete and result.state.rewrites == ()
    assert len(result.state.nodes) == 7
    reply = json.loads(rewriter_requests(chat)[1]["messages"][-1].content)
    assert reply["error"]["code"] == "tool_not_available"


def test_bad_arguments_are_recorded_as_invalid_and_read_back_by_the_model():
    bad = {"operation": "append_after", "anchor": "rewriter", "nodes": []}
    result, chat = run(CLAIM_REVIEW, model([GAP], [call("propose_rewrite", bad, "rw-bad"), REPORT]))
    assert result.complete and len(result.state.nodes) == 7  # nothing added
    (fact,) = result.state.rewrites
    assert (fact.code, fact.check) == ("invalid_rewrite", "arguments.nodes")
    assert fact.proposal == bad and fact.key == "rewriter#1:rw-bad"
    reply = rewriter_requests(chat)[1]["messages"][-1]
    assert reply.status == "error"
    body = json.loads(reply.content)
    assert body["error"]["code"] == "invalid_rewrite" and "nodes" in body["error"]["message"]
    assert body["attempts_left"] == 1
    (made,) = [e for e in result.log if isinstance(e, ToolCallMade)][-1:]
    assert (made.tool, made.result["status"]) == ("propose_rewrite", "error")


def test_a_rejected_proposal_can_be_revised_within_the_attempts():
    stages = tuple(
        replace(
            s,
            config={
                **s.config,
                "tools": {"max_rounds": 3, "first": "propose_rewrite", "then": "propose_rewrite"},
            },
            rewrite=RewritePolicy(forms=("append_after",), attempts=2),
        )
        if s.id == "rewriter"
        else s
        for s in CLAIM_REVIEW.stages
    )
    wire = replace(CLAIM_REVIEW, stages=stages)
    oracle = {**REPAIR, "nodes": [{"id": "x", "kind": "oracle"}]}
    replies = [
        call("propose_rewrite", oracle, "rw-1"),
        call("propose_rewrite", REPAIR, "rw-2"),
        call("propose_rewrite", REPAIR, "rw-3"),  # beyond the attempts
        REPORT,
    ]
    result, _ = run(wire, model([GAP], replies))
    outcomes = [(f.code or f.decision, f.check) for f in result.state.rewrites]
    assert outcomes == [
        ("vocabulary_violation", "vocabulary.spec.nodes[0].kind"),
        ("admitted", None),
        ("policy_rejected", "policy.attempts"),
    ]
    assert result.complete and "rewriter:followup" in result.state.nodes
    kinds = [
        type(e).__name__ for e in result.log if isinstance(e, RewriteAdmitted | RewriteRejected)
    ]
    assert kinds == ["RewriteRejected", "RewriteAdmitted", "RewriteRejected"]


def test_a_replayed_call_id_is_answered_from_the_record():
    replies = [
        call("propose_rewrite", REPAIR, "same-id"),
        call("propose_rewrite", REPAIR, "same-id"),
        REPORT,
    ]
    stages = tuple(
        replace(
            s,
            config={
                **s.config,
                "tools": {"max_rounds": 2, "first": "propose_rewrite", "then": "propose_rewrite"},
            },
        )
        if s.id == "rewriter"
        else s
        for s in CLAIM_REVIEW.stages
    )
    result, chat = run(replace(CLAIM_REVIEW, stages=stages), model([GAP], replies))
    assert [f.rewrite_id for f in result.state.rewrites] == [1]  # admitted once
    answers = [json.loads(r["messages"][-1].content) for r in rewriter_requests(chat)[1:]]
    assert answers[0]["rewrite_id"] == answers[1]["rewrite_id"] == 1


def _rewriter_turns(turns: int):
    tools = {"max_rounds": turns, "first": "propose_rewrite", "then": "propose_rewrite"}
    stages = tuple(
        replace(s, config={**s.config, "tools": tools}) if s.id == "rewriter" else s
        for s in CLAIM_REVIEW.stages
    )
    return replace(CLAIM_REVIEW, stages=stages)


def test_a_reused_call_id_with_a_different_proposal_is_decided_on_its_own():
    oracle = {**REPAIR, "nodes": [{"id": "x", "kind": "oracle"}]}
    replies = [
        call("propose_rewrite", oracle, "same-id"),
        call("propose_rewrite", REPAIR, "same-id"),  # a revision, not a replay
        REPORT,
    ]
    result, chat = run(_rewriter_turns(2), model([GAP], replies))
    facts = [(f.key, f.code or f.decision) for f in result.state.rewrites]
    assert facts == [
        ("rewriter#1:same-id", "vocabulary_violation"),
        ("rewriter#1:same-id~2", "admitted"),
    ]
    assert result.complete and "rewriter:followup" in result.state.nodes
    answer = json.loads(rewriter_requests(chat)[2]["messages"][-1].content)
    assert answer["decision"] == "admitted"


def test_calls_without_an_id_are_each_decided():
    def no_id(args):
        message = call("propose_rewrite", args)
        return message.model_copy(update={"tool_calls": [{**message.tool_calls[0], "id": None}]})

    oracle = {**REPAIR, "nodes": [{"id": "x", "kind": "oracle"}]}
    result, _ = run(_rewriter_turns(2), model([GAP], [no_id(oracle), no_id(REPAIR), REPORT]))
    facts = [(f.key, f.code or f.decision) for f in result.state.rewrites]
    assert facts == [("rewriter#1:p1", "vocabulary_violation"), ("rewriter#1:p2", "admitted")]


def test_non_finite_numbers_in_arguments_are_refused_and_the_run_goes_on(tmp_path):
    from datetime import timedelta

    from cortex_agents.persistence import open_saver
    from cortex_agents.runtime import Runtime, TickingClock
    from tests.support.helpers import T0

    hostile = {
        **REPAIR,
        "nodes": [{"id": "f", "kind": "analyst", "config": {"x": float("inf"), "y": float("nan")}}],
    }
    chat = model([GAP], [call("propose_rewrite", hostile, "rw-inf"), REPORT])
    with open_saver(str(tmp_path / "run.db")) as saver:  # a real store encodes every event
        runtime = Runtime(
            CLAIM_REVIEW,
            saver,
            clock=TickingClock(T0, timedelta(seconds=1)),
            services={"chat_model": chat},
        )
        result = runtime.run("t", {"claim": "X"})
    assert result.complete and len(result.state.nodes) == 7
    (fact,) = result.state.rewrites
    assert fact.code == "invalid_rewrite"
    assert fact.check.startswith("arguments.nodes.0.config.x")
    (made,) = [e for e in result.log if isinstance(e, ToolCallMade) and e.tool == "propose_rewrite"]
    assert made.arguments["nodes"][0]["config"] == {"x": "inf", "y": "nan"}


def test_hostile_arguments_are_recorded_bounded_and_the_run_goes_on():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from cortex_agents.substrate import event_to_dict
    from tests.integration.test_llm_stages import deep

    hostile = {"operation": "append_after", "anchor": deep(12), "nodes": [2**70], "x": "\ud800"}
    result, _ = run(CLAIM_REVIEW, model([GAP], [call("propose_rewrite", hostile, "rw-x"), REPORT]))
    assert result.complete and len(result.state.nodes) == 7
    (fact,) = result.state.rewrites
    assert fact.code == "invalid_rewrite"
    assert fact.proposal["nodes"] == ["<an integer of about 21 digits>"]
    assert fact.proposal["x"] == "\ufffd"
    serde = JsonPlusSerializer()
    for event in result.log:
        record = event_to_dict(event)
        assert serde.loads_typed(serde.dumps_typed(record)) == record


def test_the_tool_is_only_built_for_a_context_with_a_rewrite_session():
    from types import SimpleNamespace

    import pytest

    from cortex_agents.errors import InvalidArgument
    from cortex_agents.runtime._rewrites import HasRewrites
    from cortex_agents.tools import make_propose_rewrite_tool

    context = SimpleNamespace(rewrites=None)  # a stage its wire does not make rewrite-capable
    assert isinstance(context, HasRewrites) and not isinstance(SimpleNamespace(), HasRewrites)
    with pytest.raises(InvalidArgument) as error:
        make_propose_rewrite_tool(context)
    assert error.value.field == "context.rewrites"
