"""Identity by content: forks that look alike by length and last event stay apart.

Two forks of one thread with equal lengths and equal last events differ only
earlier in their logs. Each stage must get its own fork's snapshot, and the
saver must store a value that does not extend its parent as a new branch,
never splice it onto the parent's.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langgraph.constants import START
from langgraph.graph import StateGraph
from langgraph.types import Overwrite

from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.substrate import (
    EdgeAdded,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    ToolCallMade,
    append_events,
    event_to_dict,
)
from tests.support.helpers import T0, at


def dicts(*events) -> list[dict[str, Any]]:
    return [event_to_dict(e) for e in events]


def test_each_stage_binds_its_own_forks_snapshot_when_forks_collide_by_length_and_last_event(
    open_db,
):
    seen: list[Any] = []

    def note(ctx: StageContext) -> dict[str, Any]:
        seen.append(ctx.inputs.get("a"))
        snapshot = ctx.memory.snapshot
        return {"a_in_memory": snapshot.nodes["a"].output}

    wire = (
        WireBuilder("forks")
        .kind("note", note)
        .stage("a", "note")
        .stage("b", "note", after=["a"])
        .build()
    )
    with open_db() as saver:
        runtime = Runtime(wire, saver, clock=TickingClock(T0))
        # pause before every stage, so both forks are routed before either stage runs
        graph = runtime.wiring.build().compile(checkpointer=saver, interrupt_before=["note"])
        thread = {"configurable": {"thread_id": "forks"}}
        base = graph.update_state(
            thread,
            {
                "substrate": dicts(
                    NodeScheduled(node_id="a", kind="note", at=at(0)),
                    NodeScheduled(node_id="b", kind="note", at=at(0)),
                    EdgeAdded(source="a", target="b", at=at(0)),
                )
            },
            as_node=START,
        )
        last = ToolCallMade(node_id="a", tool="t", call_id="1", arguments={}, at=at(3))
        forks = {
            label: graph.update_state(
                base,
                {
                    "substrate": dicts(
                        StageStarted(node_id="a", at=at(1)),
                        StageCompleted(node_id="a", at=at(2), output=label),
                        last,
                    ),
                    "scanned": None,
                    "retry": False,
                },
                as_node=START,
            )
            for label in ("one", "two")
        }
        logs = {label: graph.get_state(c).values["substrate"] for label, c in forks.items()}
        assert len(logs["one"]) == len(logs["two"]) and logs["one"][-1] == logs["two"][-1]
        assert logs["one"].digest != logs["two"].digest

        paused = {}
        for label, config in forks.items():
            graph.invoke(None, config)  # the scheduler routes `b`, then the run pauses
            paused[label] = next(
                s.config
                for s in graph.get_state_history(thread)
                if s.next == ("note",) and s.values["substrate"].state.node("a").output == label
            )
        outputs = {}
        for label in ("one", "two"):
            final = graph.invoke(None, paused[label])["substrate"]
            outputs[label] = final.state.node("b").output
    assert seen == ["one", "two"]
    assert outputs == {"one": {"a_in_memory": "one"}, "two": {"a_in_memory": "two"}}


class _State(TypedDict, total=False):
    substrate: Annotated[SubstrateLog, append_events]
    replace: bool


def test_the_saver_stores_a_lookalike_value_as_a_new_branch_instead_of_splicing_it(open_db):
    common = ToolCallMade(node_id="a", tool="t", call_id="1", arguments={}, at=at(3))
    first = [NodeScheduled(node_id="a", kind="one", at=at(0)), StageStarted(node_id="a", at=at(1))]
    lookalike = SubstrateLog(  # same length, same last event, different history
        [
            NodeScheduled(node_id="a", kind="two", at=at(0)),
            StageStarted(node_id="a", at=at(1)),
            common,
        ]
    )

    def step(state: _State) -> dict[str, Any]:
        if state.get("replace"):  # a replaced value, as LangGraph's Overwrite makes one
            return {"substrate": Overwrite(lookalike)}
        return {"substrate": dicts(*first, common)}

    graph = StateGraph(_State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    with open_db() as saver:
        app = graph.compile(checkpointer=saver)
        thread = {"configurable": {"thread_id": "splice"}}
        app.invoke({}, thread, durability="exit")  # (Overwrite cannot be a stored pending write)
        assert app.get_state(thread).values["substrate"].state.node("a").kind == "one"
        app.invoke({"replace": True}, thread, durability="exit")
        stored = app.get_state(thread).values["substrate"]
        assert list(stored) == list(lookalike)  # not the first line's events under its tail
        assert stored.digest == lookalike.digest
        kinds = [
            s.values["substrate"].state.node("a").kind
            for s in app.get_state_history(thread)
            if s.values.get("substrate")
        ]
        assert kinds[0] == "two" and "one" in kinds


def test_a_runtime_fork_keeps_both_lines(open_db):
    """Time travel through the runtime: a fork's stages never read the other line."""

    def echo(ctx: StageContext) -> dict[str, Any]:
        return {"input": ctx.run_input, "from": sorted(ctx.inputs)}

    wire = (
        WireBuilder("line")
        .kind("echo", echo)
        .stage("a", "echo")
        .stage("b", "echo", after=["a"])
        .stage("c", "echo", after=["b"])
        .build()
    )
    with open_db() as saver:
        runtime = Runtime(wire, saver, clock=TickingClock(T0))
        done = runtime.run("t", "first")
        history = list(runtime.graph.get_state_history(runtime.config("t")))
        after_a = next(
            s
            for s in history
            if s.values.get("substrate") is not None
            and s.values["substrate"].state.nodes.get("a") is not None
            and s.values["substrate"].state.node("a").settled
            and not s.values["substrate"].state.node("b").settled
            and s.next
        )
        start = {"input": "second", "scanned": None, "retry": True}
        fork = runtime.graph.invoke(start, after_a.config)["substrate"]
        assert fork.state.node("c").output == {"input": "second", "from": ["b"]}
        assert fork.state.node("a").output == done.state.node("a").output
        assert fork.prefix(len(after_a.values["substrate"])).digest == (
            after_a.values["substrate"].digest
        )
        assert runtime.result("t").log.digest == fork.digest
        assert not fork.extends(done.log) and not done.log.extends(fork)
