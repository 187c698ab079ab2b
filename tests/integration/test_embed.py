"""Stages inside an existing StateGraph, without a wire."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import Topological
from cortex_agents.persistence import memory_saver
from cortex_agents.runtime import StageContext, TickingClock, stage_node
from cortex_agents.substrate import SubstrateLog, append_events
from tests.support.helpers import T0


class State(TypedDict, total=False):
    question: str
    notes: list[str]
    answer: str
    loops: int
    substrate: Annotated[SubstrateLog, append_events]


def config() -> dict[str, Any]:
    return {"configurable": {"thread_id": "embed"}}


def build(on_error: str = "raise") -> Any:
    clock = TickingClock(T0, timedelta(seconds=1))

    def plan(state: State, ctx: StageContext) -> dict:
        return {"notes": [f"look into {state['question']}"]}

    def research(state: State, ctx: StageContext) -> dict:
        if state.get("question") == "explode":
            raise RuntimeError("research failed")
        remembered = [m.node_id for m in ctx.memory.recall()]
        return {"answer": f"{ctx.stage_id} saw {remembered}", "loops": state.get("loops", 0) + 1}

    graph = StateGraph(State)
    graph.add_node("plan", stage_node(plan, kind="planner", clock=clock))
    graph.add_node(
        "research",
        stage_node(
            research,
            kind="analyst",
            after=["plan"],
            memory=Topological(),
            output="answer",
            on_error=on_error,
            clock=clock,
        ),
    )
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "research")
    graph.add_conditional_edges(
        "research", lambda s: "research" if s.get("loops", 0) < 2 else END, ["research", END]
    )
    return graph.compile(checkpointer=memory_saver())


def test_wrapped_nodes_record_stages_and_bind_memory():
    app = build()
    out = app.invoke({"question": "tests"}, config())
    nodes = out["substrate"].state.nodes
    assert list(nodes) == ["plan", "research", "research#2"]
    assert nodes["plan"].output == {"notes": ["look into tests"]}
    assert nodes["research"].output == "research saw ['plan']"
    # the loop's second pass is its own stage, and remembers the first
    assert (
        nodes["research#2"].output == "research#2 saw ['plan', 'research']"
        or "research" in nodes["research#2"].output
    )
    assert out["answer"].startswith("research#2 saw")
    assert [(e.source, e.target) for e in out["substrate"].state.edges] == [
        ("plan", "research"),
        ("plan", "research#2"),
    ]


def test_on_error_raise_keeps_langgraph_semantics():
    app = build("raise")
    with pytest.raises(RuntimeError, match="research failed"):
        app.invoke({"question": "explode"}, config())


def test_on_error_record_writes_the_failure():
    app = build("record")
    out = app.invoke({"question": "explode", "loops": 5}, config())
    node = out["substrate"].state.nodes["research"]
    assert node.status == "failed" and node.error.startswith("RuntimeError: research failed (at ")


def test_after_must_name_recorded_stages():
    graph = StateGraph(State)
    graph.add_node("r", stage_node(lambda s, c: {}, kind="analyst", name="r", after=["missing"]))
    graph.add_edge(START, "r")
    app = graph.compile(checkpointer=memory_saver())
    with pytest.raises(InvalidArgument, match="not in the substrate yet"):
        app.invoke({}, config())


def test_one_function_wrapped_twice_or_fanned_out_by_send_records_distinct_stages():
    from langgraph.types import Send

    clock = TickingClock(T0, timedelta(seconds=1))

    def analyse(state: State, ctx: StageContext) -> dict:
        return {"notes": [ctx.stage_id]}

    def fan(state: State) -> list:
        return [Send("work", {"question": str(i)}) for i in range(3)]

    class Notes(TypedDict, total=False):
        question: str
        notes: Annotated[list[str], lambda a, b: a + b]
        substrate: Annotated[SubstrateLog, append_events]

    graph = StateGraph(Notes)
    graph.add_node("a1", stage_node(analyse, kind="analyst", clock=clock))
    graph.add_node("a2", stage_node(analyse, kind="analyst", clock=clock))
    graph.add_node("work", stage_node(analyse, kind="analyst", clock=clock))
    graph.add_edge(START, "a1")
    graph.add_edge(START, "a2")
    graph.add_conditional_edges(START, fan, ["work"])
    app = graph.compile(checkpointer=memory_saver())
    out = app.invoke({"question": "q"}, config())
    assert sorted(out["notes"]) == ["a1", "a2", "work@0", "work@1", "work@2"]
    assert sorted(out["substrate"].state.nodes) == ["a1", "a2", "work@0", "work@1", "work@2"]
    assert app.get_state(config()).values["substrate"] == out["substrate"]  # the thread is sound


def test_record_mode_records_updates_a_store_cannot_hold_and_none_is_an_empty_update():
    clock = TickingClock(T0, timedelta(seconds=1))

    def nothing(state: State, ctx: StageContext) -> None:
        return None

    def not_a_number(state: State, ctx: StageContext) -> dict:
        return {"answer": float("nan")}

    graph = StateGraph(State)
    graph.add_node("quiet", stage_node(nothing, kind="k", clock=clock, on_error="record"))
    graph.add_node("nan", stage_node(not_a_number, kind="k", clock=clock, on_error="record"))
    graph.add_edge(START, "quiet")
    graph.add_edge("quiet", "nan")
    out = graph.compile(checkpointer=memory_saver()).invoke({"question": "q"}, config())
    nodes = out["substrate"].state.nodes
    assert (nodes["quiet"].status, nodes["quiet"].output) == ("completed", {})
    assert nodes["nan"].status == "failed" and "not JSON-serialisable" in nodes["nan"].error
    assert "answer" not in out  # a recorded failure drops the update


def research_graph(model: Any, on_error: str = "raise") -> Any:
    from cortex_agents.stages import converse

    clock = TickingClock(T0, timedelta(seconds=1))

    def plan(state: State, ctx: StageContext) -> dict:
        return {"notes": [f"cache hit rate for {state['question']}"]}

    def research(state: State, ctx: StageContext) -> dict:
        result = converse(ctx, system="You research.", user=state["question"])
        return {"answer": str(result.message.content)}

    graph = StateGraph(State)
    graph.add_node("plan", stage_node(plan, kind="planner", clock=clock))
    graph.add_node(
        "research",
        stage_node(
            research,
            kind="analyst",
            after=["plan"],
            memory=Topological(),
            clock=clock,
            model=model,
            on_error=on_error,
        ),
    )
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "research")
    graph.add_edge("research", END)
    return graph.compile(checkpointer=memory_saver())


def test_a_stage_node_given_a_model_records_its_tool_calls_between_start_and_outcome():
    from cortex_agents.substrate import StageCompleted, StageStarted, ToolCallMade
    from tests.support.chat import ScriptedChatModel, call, say

    chat = ScriptedChatModel(
        script={"You research": [call("cortex_memory_query", {"query_text": "cache"}), say("42")]}
    )
    out = research_graph(chat).invoke({"question": "caching"}, config())
    log = out["substrate"]
    assert out["answer"] == "42"
    own = [type(e).__name__ for e in log if getattr(e, "node_id", None) == "research"]
    assert own == ["NodeScheduled", "StageStarted", "ToolCallMade", "StageCompleted"]
    (made,) = [e for e in log if isinstance(e, ToolCallMade)]
    assert [m["node_id"] for m in made.result["matches"]] == ["plan"]
    assert isinstance(log[-1], StageCompleted) and isinstance(log[-3], StageStarted)


def test_a_stage_node_without_a_model_says_how_to_give_it_one(monkeypatch):
    from cortex_agents.stages import ModelUnavailable

    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ModelUnavailable, match=r"stage_node\(\.\.\., model=\.\.\.\)"):
        research_graph(None).invoke({"question": "caching"}, config())


def test_a_journaled_event_that_cannot_be_recorded_fails_the_stage_not_the_run():
    from cortex_agents.errors import InvalidEvent
    from cortex_agents.substrate import ToolCallMade

    def forge(state: State, ctx: StageContext) -> dict:
        ctx.record(ToolCallMade(node_id="ghost", tool="t", call_id="1", arguments={}, at=T0))
        return {"answer": "never recorded"}

    def build(on_error: str) -> Any:
        graph = StateGraph(State)
        graph.add_node("forge", stage_node(forge, kind="k", on_error=on_error))
        graph.add_edge(START, "forge")
        return graph.compile(checkpointer=memory_saver())

    out = build("record").invoke({"question": "q"}, config())
    node = out["substrate"].state.nodes["forge"]
    assert node.status == "failed" and "InvalidEvent" in node.error and "answer" not in out
    assert not [e for e in out["substrate"] if isinstance(e, ToolCallMade)]
    with pytest.raises(InvalidEvent, match="ghost"):
        build("raise").invoke({"question": "q"}, config())
