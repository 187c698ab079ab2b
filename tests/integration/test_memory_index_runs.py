"""The branch's memory index in real runs: every stage's bound snapshot equals a rebuild.

A wire with parallel frontiers, a failure and its retry runs on a saver, then
is forked at many of its checkpoints. Every stage ranks its memory through the
snapshot it was bound to — a prefix view of its branch's incrementally kept
index — in several ways, and writes the rankings (ids and exact scores) into
its output. Each recorded ranking, on every line, is recomputed from a
snapshot built from scratch for the fold of that line's log up to the stage's
frontier, by both engines.

The plain-graph binding (a cortex tool in LangChain's ``create_agent``) binds
each call on the graph's log: its branch's index grows by each call's events
instead of being rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import langchain.agents as langchain_agents
from langchain_core.messages import AIMessage

from cortex_agents.memory import MemorySnapshot, Query, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._index import MemoryIndex
from cortex_agents.persistence import memory_saver
from cortex_agents.reference import query_reference
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.substrate import StageCompleted, StageStarted, SubstrateLog, fold
from cortex_agents.tools import SubstrateState, graph_memory_tools, substrate_from_snapshot
from tests.support.chat import ScriptedChatModel, say
from tests.support.helpers import T0

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
ASKS = [
    (WalkSpec(direction="ancestors", prior="influence"), Query(text="finding of c1")),
    (
        WalkSpec(direction="bidirectional", weights=Weights(graph=1, temporal=1, semantic=2)),
        Query(text="root"),
    ),
    (WalkSpec(direction="ancestors", scope="debug_all_statuses", prior="influence"), Query()),
]


def ranked(matches) -> list[list[Any]]:
    return [
        [m.node_id, m.status, m.hops, m.score, m.graph, m.temporal, m.semantic] for m in matches
    ]


def record(ctx: StageContext) -> dict[str, Any]:
    snapshot = ctx.memory.snapshot
    node = snapshot.nodes[ctx.stage_id]
    if ctx.stage_id == "b1" and node.attempts == 0 and ctx.run_input == "first":
        raise RuntimeError("b1 fails on its first attempt")
    asked = [ranked(ctx.memory.query(spec, query)) for spec, query in ASKS]
    return {"finding": f"finding of c{len(snapshot.nodes) % 3}", "asked": asked}


def wire():
    builder = WireBuilder("indexed").kind("rec", record).on_failure("continue")
    builder.stage("root", "rec")
    for layer in range(1, 4):
        previous = ["root"] if layer == 1 else [f"{'abc'[layer - 2]}{i}" for i in range(3)]
        for i in range(3):
            builder.stage(f"{'abc'[layer - 1]}{i}", "rec", after=previous)
    builder.stage("end", "rec", after=["c0", "c1", "c2"])
    return builder.build()


def check_line(log: SubstrateLog) -> int:
    """Recompute every recorded ranking from a from-scratch snapshot; return how many."""
    events = list(log)
    started: dict[str, StageStarted] = {}
    checked = 0
    for event in events:
        if isinstance(event, StageStarted):
            started[event.node_id] = event
        elif isinstance(event, StageCompleted):
            entry = started[event.node_id]
            rebuilt = MemorySnapshot.from_state(fold(events[: entry.frontier]), entry.at)
            for (spec, query), got in zip(ASKS, event.output["asked"], strict=True):
                assert got == ranked(query_vectorised(rebuilt, event.node_id, spec, query))
                assert got == ranked(query_reference(rebuilt, event.node_id, spec, query))
            checked += 1
    return checked


def test_every_stage_on_every_fork_binds_a_snapshot_equal_to_a_rebuild(open_db):
    with open_db() as saver:
        runtime = Runtime(wire(), saver, clock=TickingClock(T0))
        first = runtime.run("t", "first")
        assert [n for n, _ in first.failures] == ["b1"]
        second = runtime.run("t")  # retries b1, then the rest
        assert second.complete and second.state.node("b1").attempts == 2
        lines = [second.log]
        pending = [s for s in runtime.graph.get_state_history(runtime.config("t")) if s.next]
        assert len(pending) >= 12
        for i, checkpoint in enumerate(pending[::2]):  # forks all along the run
            start = {"input": f"fork{i}", "scanned": None, "retry": True}
            lines.append(runtime.graph.invoke(start, checkpoint.config)["substrate"])
        checked = sum(check_line(line) for line in lines)
    assert checked >= 13 + len(pending[::2])
    assert any(
        e.output["asked"][0] for e in second.log if isinstance(e, StageCompleted)
    )  # rankings were not all empty


class AgentState(langchain_agents.AgentState, SubstrateState):
    pass


def test_plain_graph_calls_grow_one_index_instead_of_rebuilding_it(monkeypatch):
    created: list[MemoryIndex] = []
    original = MemoryIndex.__init__

    def counting(self: MemoryIndex, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(MemoryIndex, "__init__", counting)
    turns = [
        AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "cortex_memory_query",
                    "args": {"query_text": f"bias {i}"},
                    "id": f"c{i}",
                    "type": "tool_call",
                }
            ],
        )
        for i in range(5)
    ]
    app = langchain_agents.create_agent(
        ScriptedChatModel(script={"": [*turns, say("done")]}),
        graph_memory_tools(),
        state_schema=AgentState,
        checkpointer=memory_saver(),
    )
    out = app.invoke(
        {
            "messages": [("user", "What did we find?")],
            "substrate": substrate_from_snapshot(EXAMPLE),
        },
        {"configurable": {"thread_id": "t"}},
    )
    log = out["substrate"]
    agents = [n for n in log.state.nodes.values() if n.kind == "agent"]
    assert [n.status for n in agents] == ["completed"] * 5
    assert len(created) == 1  # one index for the branch, extended by each call
    (index,) = created
    assert log.branch is not None and index.length <= len(log)
    assert index.length >= len(log) - 6  # it saw every call but the last one's closing events
