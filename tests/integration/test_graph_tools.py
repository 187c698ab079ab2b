"""The cortex tools inside LangGraph's own agents, without a cortex runtime: ``create_agent``
(LangChain), ``create_react_agent`` and a hand-built ``ToolNode`` + ``tools_condition`` graph.

Each call binds the substrate from the graph state, records its caller as a stage, journals
itself through a ``Command``, and the thread stays storable by a CortexSaver."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import langchain.agents as langchain_agents
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.memory import InMemoryStore

from cortex_agents.errors import UnsupportedCheckpointer
from cortex_agents.memory import MemoryHandle, MemorySnapshot
from cortex_agents.persistence import memory_saver
from cortex_agents.runtime import StageContext, stage_node
from cortex_agents.substrate import StageStarted, ToolCallMade, event_to_dict
from cortex_agents.tools import (
    GraphBinding,
    SubstrateState,
    graph_memory_tools,
    substrate_from_snapshot,
)
from tests.support.chat import ScriptedChatModel, say

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
SERDE = JsonPlusSerializer()


class AgentState(langchain_agents.AgentState, SubstrateState):
    pass


def calls(*specs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(specs)
        ],
    )


def agent(replies: list, **options: Any) -> Any:
    chat = ScriptedChatModel(script={"": replies})
    return langchain_agents.create_agent(
        chat,
        graph_memory_tools(**options.pop("tools", {})),
        state_schema=AgentState,
        checkpointer=memory_saver(),
        **options,
    )


def start(thread: str = "t") -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        {
            "messages": [("user", "What did the analysts find?")],
            "substrate": substrate_from_snapshot(EXAMPLE),
        },
        {"configurable": {"thread_id": thread}},
    )


def seen_by(log: Any, stage: str) -> MemoryHandle:
    """The handle the stage was bound to, rebuilt from the recorded substrate."""
    (entry,) = [e for e in log if isinstance(e, StageStarted) and e.node_id == stage]
    state = log.prefix(entry.frontier).state
    return MemoryHandle(MemorySnapshot.from_state(state, entry.at), stage)


def test_create_agent_ranks_the_loaded_run_and_records_the_call_as_a_stage():
    app = agent(
        [calls(("cortex_memory_query", {"query_text": "selection bias", "limit": 3})), say("ok")],
        name="researcher",
    )
    out = app.invoke(*start())
    log = out["substrate"]
    reply = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert reply.status == "success" and reply.content.startswith("<memory_results ")
    node = log.state.nodes["researcher"]  # the agent's name is the caller's id
    assert (node.kind, node.status) == ("agent", "completed")
    assert log.state.predecessors("researcher") == ("merge",)  # after the latest settled work
    (made,) = [e for e in log if isinstance(e, ToolCallMade)]
    assert (made.node_id, made.call_id, dict(made.arguments)) == (
        "researcher",
        "c0",
        {"query_text": "selection bias", "limit": 3},
    )
    # the result is what the pipeline ranks on the snapshot the call was bound to
    query = made.result["query"]
    handle = seen_by(log, "researcher")
    spec = handle.presets.spec(query["preset"], limit=query["limit"])
    asked = handle.query_for(query["preset"], text=query["query_text"])
    expected = handle.query(spec, asked)
    assert query["scorer"] == handle.presets.resolve(query["preset"]).scorer
    assert [(m["node_id"], m["score"]) for m in made.result["matches"]] == [
        (m.node_id, m.score) for m in expected[: made.result["shown"]]
    ]
    # `total` counts the candidates before the limit: the unlimited ranking's length
    assert made.result["total"] == len(handle.query(replace(spec, limit=None), asked)) > 0
    unsettled = {"reviewer", "rewriter"}  # running and pending in the recorded run
    assert not unsettled & {m["node_id"] for m in made.result["matches"]}
    assert app.get_state(start()[1]).values["substrate"] == log  # the thread was stored


def test_parallel_calls_each_record_their_own_stage_and_later_turns_hang_off_the_work():
    app = agent(
        [
            calls(
                ("cortex_memory_query", {"query_text": "bias"}),
                ("cortex_memory_query", {"limit": True}),  # strictly parsed: refused, journaled
                ("cortex_memory_query", {"direction": "bidirectional"}),
            ),
            calls(("cortex_memory_query", {})),
            say("done"),
        ]
    )
    out = app.invoke(*start())
    log = out["substrate"]
    agents = [n for n in log.state.nodes.values() if n.kind == "agent"]
    assert [n.id for n in agents] == ["agent", "agent#2", "agent#3", "agent#4"]
    assert all(n.status == "completed" for n in agents)
    assert all(log.state.predecessors(n.id) == ("merge",) for n in agents)
    made = {e.node_id: e for e in log if isinstance(e, ToolCallMade)}
    assert {k: made[k].result["status"] for k in made} == {
        "agent": "success",
        "agent#2": "error",
        "agent#3": "success",
        "agent#4": "success",
    }
    assert "`limit`" in json.loads(made["agent#2"].result["content"])["error"]["message"]
    # an agent's own lookups are not its memory: settled work of the run only
    later, first = made["agent#4"].result, made["agent"].result
    assert later["total"] == first["total"] > 0  # earlier lookups did not join the candidates
    assert all(m["node_id"] != "agent" for m in later["matches"])
    for event in log:  # LangGraph's serializer stores every event as it is
        record = event_to_dict(event)
        assert SERDE.loads_typed(SERDE.dumps_typed(record)) == record


def test_forged_calls_are_refused_by_the_catalog_and_injected_identity_cannot_be_written():
    app = agent(
        [
            calls(
                ("propose_rewrite", {"anchor": "merge", "nodes": []}),
                ("memory", {"command": "read", "path": "/x"}),
                ("cortex_memory_query", {"runtime": {"context": {"stage_id": "merge"}}}),
                ("cortex_memory_query", {"scope": "debug_all_statuses"}),
            ),
            say("done"),
        ]
    )
    out = app.invoke(*start())
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in replies] == ["error", "error", "success", "error"]
    assert "propose_rewrite" in replies[0].content and "memory" in replies[1].content
    assert "`scope`" in replies[3].content  # models see settled work only
    log = out["substrate"]
    made = [e for e in log if isinstance(e, ToolCallMade)]
    # only the tools the agent holds ran and were recorded; the forged runtime was ignored
    assert [(e.node_id, e.tool) for e in made] == [
        ("agent", "cortex_memory_query"),
        ("agent#2", "cortex_memory_query"),
    ]
    assert made[0].result["status"] == "success"
    assert sorted(n for n in log.state.nodes if n.startswith("agent")) == ["agent", "agent#2"]


def test_a_graph_whose_state_has_no_substrate_gets_an_error_that_says_how_to_add_it():
    chat = ScriptedChatModel(script={"": [calls(("cortex_memory_query", {})), say("done")]})
    app = langchain_agents.create_agent(chat, graph_memory_tools())
    out = app.invoke({"messages": [("user", "hi")]})
    reply = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    error = json.loads(reply.content)["error"]
    assert reply.status == "error" and error["code"] == "memory_unavailable"
    assert "SubstrateState" in error["message"] and "CortexSaver" in error["message"]


def test_create_react_agent_v1_works_the_same():
    from langgraph.prebuilt import create_react_agent
    from langgraph.prebuilt.chat_agent_executor import AgentState as ReactState

    class State(ReactState, SubstrateState):
        pass

    chat = ScriptedChatModel(
        script={"": [calls(("cortex_memory_query", {"query_text": "bias"})), say("ok")]}
    )
    with warnings.catch_warnings():  # deprecated in LangGraph 1.0 in favour of create_agent
        warnings.simplefilter("ignore", DeprecationWarning)
        app = create_react_agent(
            chat,
            graph_memory_tools(),
            state_schema=State,
            checkpointer=memory_saver(),
            version="v1",
        )
    out = app.invoke(*start())
    (made,) = [e for e in out["substrate"] if isinstance(e, ToolCallMade)]
    assert made.node_id == "agent" and made.result["status"] == "success"
    assert made.result["total"] > 0 and out["substrate"].state.predecessors("agent") == ("merge",)


def test_create_react_agent_v2_is_refused_by_langgraph_itself():
    """v2 sends each tool call as a ``Send`` packet, which LangGraph's checkpoint serializer
    cannot store (the limit the README states); if this starts passing, say so there."""
    from langgraph.prebuilt import create_react_agent
    from langgraph.prebuilt.chat_agent_executor import AgentState as ReactState

    class State(ReactState, SubstrateState):
        pass

    chat = ScriptedChatModel(
        script={"": [calls(("cortex_memory_query", {"query_text": "bias"})), say("ok")]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        app = create_react_agent(
            chat, graph_memory_tools(), state_schema=State, checkpointer=memory_saver()
        )
    with pytest.raises(TypeError, match="not msgpack serializable: Send"):
        app.invoke(*start())


def test_a_plain_langgraph_saver_is_refused_at_the_first_call_naming_cortexsaver_wrap():
    chat = ScriptedChatModel(
        script={"": [calls(("cortex_memory_query", {"query_text": "bias"})), say("ok")]}
    )
    saver = InMemorySaver()
    app = langchain_agents.create_agent(
        chat, graph_memory_tools(), state_schema=AgentState, checkpointer=saver
    )
    config = {"configurable": {"thread_id": "plain"}}
    with pytest.raises(UnsupportedCheckpointer, match=r"CortexSaver\.wrap\(saver\)"):
        app.invoke({"messages": [("user", "What did the analysts find?")]}, config)
    # nothing of the call was stored: no checkpoint holds a substrate
    assert all(not t.checkpoint["channel_values"].get("substrate") for t in saver.list(config))


class ToolGraphState(MessagesState, SubstrateState):
    question: str


def test_tool_node_after_recorded_stages_with_scratch_memory_in_the_graphs_store():
    def plan(state: dict, ctx: StageContext) -> dict:
        return {"question": state["question"], "plan": "check the cache hit rate"}

    chat = ScriptedChatModel(
        script={
            "": [
                calls(
                    ("cortex_memory_query", {"query_text": "cache"}),
                    ("memory", {"command": "append", "path": "/notes/todo", "content": "c1"}),
                ),
                calls(("memory", {"command": "read", "path": "/notes/todo"})),
                say("done"),
            ]
        }
    )
    tools = graph_memory_tools(scratch=True, binding=GraphBinding(agent="helper"))

    def model_node(state: dict) -> dict:
        return {"messages": [chat.bind_tools(tools).invoke(state["messages"])]}

    graph = StateGraph(ToolGraphState)
    graph.add_node("plan", stage_node(plan, kind="planner"))
    graph.add_node("model", model_node)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    store = InMemoryStore()
    app = graph.compile(checkpointer=memory_saver(), store=store)
    out = app.invoke(
        {"question": "why slow?", "messages": [("user", "why slow?")]},
        {"configurable": {"thread_id": "tn"}},
    )
    log = out["substrate"]
    assert list(log.state.nodes) == ["plan", "helper", "helper#2", "helper#3"]
    assert all(log.state.predecessors(n) == ("plan",) for n in ("helper", "helper#2", "helper#3"))
    made = [e for e in log if isinstance(e, ToolCallMade)]
    assert made[0].result["matches"][0]["node_id"] == "plan"
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert replies[-1].content == "c1"  # the next turn read what the first wrote
    # one memory per agent and thread, in the graph's own store
    stored = [(item.namespace, item.key, item.value) for item in store.search((), limit=10)]
    assert [(ns, key) for ns, key, _ in stored] == [
        (("cortex_scratch", "helper", "per_thread", "tn"), "/notes/todo")
    ]


@pytest.mark.parametrize("kinds", [10, 20])  # the graph, and more kinds than a branch keeps
def test_a_graph_of_many_agent_kinds_each_with_its_own_tool_node_runs(kinds):
    """Issue 23: ten agents of ten kinds raised on derived structure #9 (one per kind)."""

    def agent_node(i: int) -> Any:
        def turn(state: dict) -> dict:
            ask = {"query_text": "selection bias", "limit": 2}
            call = {"name": "cortex_memory_query", "args": ask, "id": f"c{i}", "type": "tool_call"}
            return {"messages": [AIMessage(content="", tool_calls=[call], name=f"agent{i}")]}

        return turn

    graph = StateGraph(ToolGraphState)
    previous = START
    for i in range(kinds):
        binding = GraphBinding(kind=f"kind{i}", agent=f"agent{i}")
        graph.add_node(f"agent{i}", agent_node(i))
        graph.add_node(f"tools{i}", ToolNode(graph_memory_tools(binding=binding)))
        graph.add_edge(previous, f"agent{i}")
        graph.add_edge(f"agent{i}", f"tools{i}")
        previous = f"tools{i}"
    app = graph.compile(checkpointer=memory_saver())
    out = app.invoke(
        {
            "question": "q",
            "messages": [("user", "What did the analysts find?")],
            "substrate": substrate_from_snapshot(EXAMPLE),
        },
        {"configurable": {"thread_id": f"kinds{kinds}"}},
    )
    log = out["substrate"]
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == kinds and all(m.status == "success" for m in replies)
    state = log.state
    assert [state.nodes[f"agent{i}"].kind for i in range(kinds)] == [
        f"kind{i}" for i in range(kinds)
    ]
    # each turn hangs off the latest work of the other kinds: the turn before it
    assert state.predecessors("agent0") == ("merge",)
    assert all(state.predecessors(f"agent{i}") == (f"agent{i - 1}",) for i in range(1, kinds))
