"""The two recorded rewrite scenarios, replayed with the network blocked: the rewriter's repair
branch admitted and run, and a repair branch rejected for budget. Structure, not wording."""

from __future__ import annotations

import json

import pytest
import yaml

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import SCENARIOS, run_recorded
from cortex_agents.persistence import open_saver
from cortex_agents.substrate import (
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteRejected,
    StageStarted,
    ToolCallMade,
)

WIRE_STAGES = ["planner", "analyst-a", "analyst-b", "analyst-c", "merge", "reviewer", "rewriter"]


def replay(name: str, tmp_path):
    with open_saver(tmp_path / f"{name}.db") as saver:
        result = run_recorded(SCENARIOS[name], saver)
        stored = saver.substrate({"configurable": {"thread_id": SCENARIOS[name].thread}})
    return result, stored


def propose_requests(name: str) -> list[dict]:
    interactions = yaml.safe_load(bundled_path("cassettes", f"{name}.yaml").read_text())
    bodies = [json.loads(i["request"]["body"]) for i in interactions["interactions"]]
    return [
        b
        for b in bodies
        if any(t["function"]["name"] == "propose_rewrite" for t in b.get("tools", []))
    ]


@pytest.fixture(scope="module")
def repair(tmp_path_factory):
    return replay("claim_review_repair", tmp_path_factory.mktemp("repair"))


@pytest.fixture(scope="module")
def over_budget(tmp_path_factory):
    return replay("claim_review_over_budget", tmp_path_factory.mktemp("over"))


def test_the_recorded_repair_is_admitted_materialized_and_run(repair):
    result, stored = repair
    assert result.complete and not result.failures
    (fact,) = result.state.rewrites
    assert (fact.decision, fact.rewrite_id, fact.proposer) == ("admitted", 1, "rewriter")
    added = [n["id"] for n in fact.diff["nodes"]]
    assert added and all(n.startswith("rewriter:") for n in added)
    assert list(result.state.nodes) == [*WIRE_STAGES, *added]
    # ran after the rewriter, in the same thread, and settled into memory
    starts = [e.node_id for e in result.log if isinstance(e, StageStarted)]
    assert set(starts[: len(WIRE_STAGES)]) == set(WIRE_STAGES)
    assert starts[-len(added) :] == added
    assert all(result.state.nodes[n].settled for n in added)
    assert result.state.predecessors(fact.diff["entry"][0]) == ("rewriter",)
    # cost and budget: recorded, and spent exactly
    assert fact.budget_before == SCENARIOS["claim_review_repair"].load_wire().budget.as_dict()
    assert fact.budget_after == {d: fact.budget_before[d] - fact.cost[d] for d in fact.cost}
    assert result.state.watermark == 1
    # what the database holds is what the run returned
    assert [type(e) for e in stored] == [type(e) for e in result.log]


def test_the_repair_decision_went_back_to_the_model(repair):
    result, _ = repair
    (made,) = [e for e in result.log if isinstance(e, ToolCallMade) and e.tool == "propose_rewrite"]
    assert made.node_id == "rewriter" and made.result["status"] == "success"
    answer = json.loads(made.result["content"])
    assert answer["decision"] == "admitted"
    assert answer["new_nodes"] == [n["id"] for n in result.state.rewrites[0].diff["nodes"]]
    (forced,) = propose_requests("claim_review_repair")[:1]
    # forced as the recording's tool_force says: the tool alone, required (llama-server)
    assert forced["tool_choice"] == "required"
    assert [t["function"]["name"] for t in forced["tools"]] == ["propose_rewrite"]
    shown = forced["tools"][-1]["function"]["parameters"]["properties"]
    assert shown["anchor"]["enum"] == ["rewriter"]
    # shown ids start with a letter: the recorded model wrote "}, {" and "." without it
    assert (
        shown["nodes"]["items"]["properties"]["id"]["pattern"] == "^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
    )
    assert all(n.split(":")[-1][0].isalpha() for n in answer["new_nodes"])


def test_the_recorded_over_budget_proposal_is_rejected_and_changes_nothing(over_budget):
    result, _ = over_budget
    assert result.complete
    (fact,) = result.state.rewrites
    assert (fact.decision, fact.code, fact.check) == (
        "rejected",
        "rewrite_budget_exceeded",
        "budget.nodes",
    )
    assert fact.budget_before["nodes"] == 0 and fact.cost["nodes"] >= 1
    assert fact.budget_after == fact.budget_before and fact.diff == {}
    assert "proposal by 'rewriter' failed budget.nodes" in fact.reason
    assert list(result.state.nodes) == WIRE_STAGES  # nothing added
    assert result.state.watermark == 0
    budget = next(e for e in result.log if isinstance(e, RewriteBudgetSet))
    assert budget.budget["nodes"] == 0
    assert not any(isinstance(e, RewriteAdmitted | RewriteApplied) for e in result.log)
    assert sum(isinstance(e, RewriteRejected) for e in result.log) == 1
    (made,) = [e for e in result.log if isinstance(e, ToolCallMade) and e.tool == "propose_rewrite"]
    assert made.result["status"] == "error"
    assert json.loads(made.result["content"])["error"]["code"] == "rewrite_budget_exceeded"
    assert result.outputs["rewriter"]["rewrites"][0]["code"] == "rewrite_budget_exceeded"
