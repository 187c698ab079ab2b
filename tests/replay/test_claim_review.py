"""The recorded claim-review workflow, replayed from its cassette with the network blocked.

These check structure, not wording (the recording model is a 1.5B instruct
model, Qwen2.5-Coder-1.5B): which tools each stage was offered, which it called
with which arguments, what the memory tool returned, and the final substrate.
A live model decides whether its review finds a gap; when it does, the
rewriter (repair = on_gap) proposes a repair branch, and the tests follow what
was recorded: the wire's stages, then exactly the nodes admitted rewrites added.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from typer.testing import CliRunner

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import SCENARIOS, run_recorded
from cortex_agents.cli import app
from cortex_agents.memory import MemoryHandle, Topological
from cortex_agents.persistence import memory_saver, open_saver
from cortex_agents.persistence._transfer import export_as_seen_by
from cortex_agents.substrate import ToolCallMade, event_to_dict

SCENARIO = SCENARIOS["claim_review"]
CASSETTE = bundled_path("cassettes", "claim_review.yaml")
STAGE_PROMPTS = {
    "You are the planner": "planner",
    "You are an analyst": "analyst",
    "You merge": "merge",
    "You review": "reviewer",
    "You write the final report": "rewriter",
}


@pytest.fixture(scope="module")
def replayed():
    saver = memory_saver()
    result = run_recorded(SCENARIO, saver)
    return saver, result


def recorded_requests() -> list[dict]:
    interactions = yaml.safe_load(CASSETTE.read_text())["interactions"]
    return [json.loads(i["request"]["body"]) for i in interactions]


def kind_of(request: dict) -> str:
    system = request["messages"][0]["content"]
    return next(kind for prefix, kind in STAGE_PROMPTS.items() if system.startswith(prefix))


WIRE_STAGES = ["planner", "analyst-a", "analyst-b", "analyst-c", "merge", "reviewer", "rewriter"]


def repaired(result) -> bool:
    """Whether the recorded review found a gap, so the rewriter proposed a repair."""
    return result.outputs["reviewer"]["value"]["verdict"] == "gap"


def test_every_stage_completed_on_the_wire_topology(replayed):
    _, result = replayed
    assert result.complete and not result.failures
    state = result.state
    added = [n["id"] for fact in state.admitted_rewrites for n in fact.diff["nodes"]]
    assert bool(added) == repaired(result)  # on_gap: a repair exactly when the review found one
    assert list(state.nodes) == [*WIRE_STAGES, *added]
    assert {(e.source, e.target) for e in state.edges} >= {
        ("planner", "analyst-a"),
        ("planner", "analyst-b"),
        ("planner", "analyst-c"),
        ("analyst-a", "merge"),
        ("analyst-b", "merge"),
        ("analyst-c", "merge"),
        ("merge", "reviewer"),
        ("reviewer", "rewriter"),
    }
    outputs = result.outputs
    assert [outputs[a]["value"]["claim_ref"] for a in ("analyst-a", "analyst-b", "analyst-c")] == [
        "c1",
        "c2",
        "c3",
    ]
    assert [b["claim_ref"] for b in outputs["planner"]["value"]["branches"]] == ["c1", "c2", "c3"]
    assert outputs["reviewer"]["value"]["verdict"] in ("sound", "gap")
    assert outputs["rewriter"]["value"]["report"].strip()  # the final report is not empty


def test_only_the_topological_stages_were_offered_the_memory_tool(replayed):
    _, result = replayed
    offered: dict[str, set[str]] = {}
    choices: dict[str, set[str]] = {}
    for request in recorded_requests():
        names = {t["function"]["name"] for t in request.get("tools", [])}
        offered.setdefault(kind_of(request), set()).update(names)
        if names:
            choices.setdefault(kind_of(request), set()).add(json.dumps(request["tool_choice"]))
    # the rewriter's policy forces propose_rewrite when it repairs (a gap), else its memory tool
    rewriter_tool = "propose_rewrite" if repaired(result) else "cortex_memory_query"
    assert offered == {
        "planner": set(),
        "analyst": set(),
        "merge": set(),
        "reviewer": {"cortex_memory_query"},
        "rewriter": {rewriter_tool},
    }
    # each forced first turn offers its one tool as required (the recording's tool_force)
    assert choices == {"reviewer": {'"required"'}, "rewriter": {'"required"'}}
    prompts = {kind_of(r): r["messages"][0]["content"] for r in recorded_requests()}
    assert "cortex_memory_query" in prompts["reviewer"]  # the nudge
    assert (rewriter_tool in prompts["rewriter"]) and (
        "propose_rewrite" in prompts["rewriter"]
    ) == (repaired(result))
    assert all(
        "cortex_memory_query" not in p
        for k, p in prompts.items()
        if k not in ("reviewer", "rewriter")
    )


def test_the_reviewer_saw_the_analyst_branches_behind_the_merge(replayed):
    _, result = replayed
    review = result.outputs["reviewer"]
    assert sorted(review["memory"]["recalled"]) == ["analyst-a", "analyst-b", "analyst-c"]
    reviewer_prompt = next(r for r in recorded_requests() if kind_of(r) == "reviewer")
    branches = reviewer_prompt["messages"][1]["content"].split("<analyst_branches>")[1]
    assert "analyst-a" in branches and "merge (key" not in branches


def recomputed(saver, made: ToolCallMade) -> list[tuple]:
    """The ranking the call's recorded resolved query (preset, text, routing key, scorer,
    limit) gives on the snapshot its stage was bound to, cut to what was shown."""
    query = made.result["query"]
    seen = export_as_seen_by(saver, SCENARIO.thread, made.node_id).to_memory_snapshot()
    handle = MemoryHandle(seen, made.node_id, strategy=Topological(preset=query["preset"]))
    spec = handle.presets.spec(
        query["preset"],
        direction=query["direction"],
        max_distance=query["max_graph_distance"],
        limit=query["limit"],
    )
    asked = handle.presets.query(
        query["preset"],
        text=query["query_text"],
        routing_key=query["routing_key"],
        scorer=query["scorer"],
    )
    # `total` counts the candidates before the limit: the unlimited ranking's length
    assert made.result["total"] == len(handle.query(replace(spec, limit=None), asked))
    return [
        (m.node_id, m.score, m.graph, m.temporal, m.semantic)
        for m in handle.query(spec, asked)[: made.result["shown"]]
    ]


def test_each_memory_call_returned_exactly_what_its_recorded_query_ranks(replayed):
    saver, result = replayed
    made = [e for e in result.log if isinstance(e, ToolCallMade)]
    kinds = {n.id: n.kind for n in result.state.nodes.values()}
    queries = [c for c in made if c.tool == "cortex_memory_query"]
    # every reviewer (the wire's, and a repair's re-review) queried its memory, successfully
    assert [c.node_id for c in queries] == [n for n in result.state.nodes if kinds[n] == "reviewer"]
    assert all(c.result["status"] == "success" for c in made)
    for call in queries:
        assert call.result["query"]["scorer"] and call.result["query"]["limit"]
        assert [
            (m["node_id"], m["score"], m["graph"], m["temporal"], m["semantic"])
            for m in call.result["matches"]
        ] == recomputed(saver, call)
        assert 0 <= call.result["shown"] <= call.result["total"]
    # the reviewer's follow-up request carried that result back as a tool message
    follow_up = [r for r in recorded_requests() if kind_of(r) == "reviewer"][1]
    assert follow_up["messages"][-1]["role"] == "tool"
    assert follow_up["messages"][-1]["content"].startswith("<memory_results ")
    assert "tools" not in follow_up and "response_format" in follow_up


def test_replay_is_deterministic_and_writes_a_database_others_can_read(replayed, tmp_path):
    _, first = replayed
    again = run_recorded(SCENARIO, memory_saver())
    assert [event_to_dict(e) for e in again.log] == [event_to_dict(e) for e in first.log]
    db = tmp_path / "demo.db"
    result = CliRunner().invoke(app, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "reviewer called cortex_memory_query" in result.stdout
    if repaired(first):
        assert "rewriter called propose_rewrite" in result.stdout
    assert "final report by rewriter" in result.stdout and "(empty)" not in result.stdout
    with open_saver(db) as saver:
        stored = saver.substrate({"configurable": {"thread_id": SCENARIO.thread}})
        assert [event_to_dict(e) for e in stored] == [event_to_dict(e) for e in first.log]
