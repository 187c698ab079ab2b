"""Wires on LangGraph: frontiers in parallel, stage-entry snapshots, failures, clocks, resume."""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime

from cortex_agents.errors import RunFailed
from cortex_agents.memory import Topological
from cortex_agents.persistence import memory_saver, open_saver
from cortex_agents.runtime import (
    LogicalClock,
    Runtime,
    StageContext,
    TickingClock,
    WireBuilder,
    load_wire,
)
from cortex_agents.substrate import StageStarted, event_to_dict
from tests.support.helpers import T0

DEMO = "graphs/fanout_demo.py"


def clock() -> TickingClock:
    return TickingClock(T0, timedelta(milliseconds=10))


def test_fanout_demo_runs_and_its_reviewer_ranks_its_memory():
    wire = load_wire(DEMO)
    result = Runtime(wire, memory_saver(), clock=clock()).run("t", {"claim": "C"})
    assert result.complete and not result.failures
    review = result.outputs["reviewer"]
    # the reviewer preset recalls evidence (no planner, no merge); with no query text and
    # the analysts at one distance, the most recently settled comes first. The analysts run
    # in parallel, so which settles last (takes the later tick) is the scheduler's choice.
    settled = sorted(
        (result.state.node(a) for a in ("analyst-a", "analyst-b", "analyst-c")),
        key=lambda n: n.completed_at,
        reverse=True,
    )
    assert len({n.completed_at for n in settled}) == 3
    assert review["ranking"] == [n.id for n in settled]
    assert list(review["scores"]) == review["ranking"]


def test_a_frontier_runs_in_parallel_in_one_superstep():
    barrier = threading.Barrier(3, timeout=10)

    def meet(ctx: StageContext) -> dict:
        barrier.wait()  # only passes if all three analysts run at the same time
        return {"who": ctx.stage_id}

    wire = (
        WireBuilder("par")
        .kind("p", lambda ctx: {})
        .kind("a", meet)
        .stage("plan", "p")
        .stage("a1", "a", after=["plan"])
        .stage("a2", "a", after=["plan"])
        .stage("a3", "a", after=["plan"])
        .build()
    )
    result = Runtime(wire, memory_saver(), clock=clock()).run("t")
    assert result.complete
    starts = [e for e in result.log if isinstance(e, StageStarted) and e.node_id.startswith("a")]
    assert len({e.frontier for e in starts}) == 1  # one frontier, one superstep


def test_siblings_never_appear_in_a_stage_entry_snapshot():
    fast_returned = threading.Event()

    def settle(ctx: StageContext) -> dict:
        if ctx.stage_id == "slow":  # looks only once its sibling has finished
            assert fast_returned.wait(30), "`fast` never ran beside `slow`"
        seen = [m.node_id for m in ctx.memory.query()]
        visible_nodes = sorted(ctx.memory.snapshot.nodes)
        out = {
            "memory": seen,
            "settled": [n for n in visible_nodes if ctx.memory.snapshot.nodes[n].settled],
        }
        if ctx.stage_id == "fast":
            fast_returned.set()
        return out

    wire = (
        WireBuilder("iso")
        .kind("k", settle)
        .stage("root", "k")
        .stage("fast", "k", after=["root"])
        .stage("slow", "k", after=["root"])
        .stage("join", "k", after=["fast", "slow"], memory=Topological())
        .build()
    )
    out = Runtime(wire, memory_saver(), clock=clock()).run("t").outputs
    # `fast` settled while `slow` was still running: `slow` must not see it
    assert out["slow"]["settled"] == ["root"] and out["slow"]["memory"] == ["root"]
    assert out["fast"]["settled"] == ["root"]
    assert sorted(out["join"]["memory"]) == ["fast", "root", "slow"]


def test_the_injected_clock_makes_runs_replay_byte_for_byte():
    # a logical clock: a ticking one shared by parallel analysts hands out its ticks in
    # whatever order the threads run (that flaked under load)
    wire = load_wire(DEMO)
    first = Runtime(wire, memory_saver(), clock=LogicalClock(T0)).run("t", {"claim": "C"})
    second = Runtime(wire, memory_saver(), clock=LogicalClock(T0)).run("t", {"claim": "C"})
    assert [event_to_dict(e) for e in first.log] == [event_to_dict(e) for e in second.log]
    assert first.state.nodes["planner"].captured_at == T0


def flaky_wire(on_failure: str, attempts: dict[str, int]):
    def work(ctx: StageContext) -> dict:
        attempts[ctx.stage_id] = attempts.get(ctx.stage_id, 0) + 1
        if ctx.stage_id == "bad" and attempts["bad"] == 1:
            raise ValueError("the first attempt breaks")
        return {"ok": ctx.stage_id}

    return (
        WireBuilder("flaky")
        .kind("k", work)
        .stage("root", "k")
        .stage("bad", "k", after=["root"])
        .stage("good", "k", after=["root"])
        .stage("after-bad", "k", after=["bad"])
        .stage("after-good", "k", after=["good"])
        .on_failure(on_failure)
        .build()
    )


def test_a_failed_stage_stops_the_run_legibly_and_a_rerun_retries_it():
    attempts: dict[str, int] = {}
    runtime = Runtime(flaky_wire("stop", attempts), memory_saver(), clock=clock())
    with pytest.raises(RunFailed) as caught:
        runtime.run("t")
    ((stage, error),) = caught.value.failures
    assert stage == "bad" and error.startswith("ValueError: the first attempt breaks (at ")
    assert re.search(r"\(at test_runtime\.py:\d+ in work\)$", error)  # where the stage raised
    assert "stage failed" in str(caught.value) and "'bad'" in str(caught.value)
    state = runtime.result("t").state
    assert state.nodes["bad"].status == "failed" and state.nodes["after-bad"].status == "pending"
    assert state.nodes["after-good"].status == "pending"  # the run stopped before the next frontier
    result = runtime.run("t")  # resume: the failed stage is retried and the run completes
    assert result.complete and result.state.nodes["bad"].attempts == 2
    assert attempts == {"root": 1, "bad": 2, "good": 1, "after-bad": 1, "after-good": 1}


def test_continue_on_failure_runs_everything_that_does_not_depend_on_it():
    attempts: dict[str, int] = {}
    result = Runtime(flaky_wire("continue", attempts), memory_saver(), clock=clock()).run("t")
    nodes = result.state.nodes
    assert nodes["after-good"].status == "completed"
    assert nodes["after-bad"].status == "pending"
    ((stage, error),) = result.failures
    assert stage == "bad" and error.startswith("ValueError: the first attempt breaks (at ")


def test_outputs_must_be_json_and_pydantic_models_are_dumped():
    from pydantic import BaseModel

    class Finding(BaseModel):
        claim_ref: str
        score: float

    wire = (
        WireBuilder("json")
        .kind("model", lambda ctx: Finding(claim_ref="c1", score=0.5))
        .kind("bad", lambda ctx: {"when": object()})
        .stage("m", "model")
        .stage("b", "bad")
        .on_failure("continue")
        .build()
    )
    result = Runtime(wire, memory_saver(), clock=clock()).run("t")
    assert result.outputs["m"] == {"claim_ref": "c1", "score": 0.5}
    assert "not JSON-serialisable" in dict(result.failures)["b"]


def test_async_stage_functions_run():
    async def slow(ctx: StageContext) -> dict:
        await asyncio.sleep(0)  # suspends: the stage really is awaited, not called
        return {"done": ctx.stage_id}

    wire = WireBuilder("async").kind("k", slow).stage("x", "k").stage("y", "k", after=["x"]).build()
    result = Runtime(wire, memory_saver(), clock=clock()).run("t")
    assert result.outputs == {"x": {"done": "x"}, "y": {"done": "y"}}


def test_stream_shows_stage_progress_in_order():
    runtime = Runtime(load_wire(DEMO), memory_saver(), clock=clock())
    progress = [
        (p.node, type(p.event).__name__, getattr(p.event, "node_id", None))
        for p in runtime.stream("t")
    ]
    assert progress[0][:2] == ("scheduler", "NodeScheduled")
    done = [node for _, kind, node in progress if kind == "StageCompleted"]
    assert done[0] == "planner" and done[-2:] == ["merge", "reviewer"]
    assert sorted(done[1:4]) == ["analyst-a", "analyst-b", "analyst-c"]


def test_tools_get_the_stage_context_through_runtime_injection():
    @tool
    def peek(limit: int, runtime: ToolRuntime[StageContext, Any]) -> list[str]:
        """Return the ids memory ranks first."""
        return [m.node_id for m in runtime.context.memory.query()][:limit]

    def use_tool(ctx: StageContext) -> dict:
        tool_runtime = ToolRuntime(
            state={},
            context=ctx,
            config={},
            stream_writer=lambda _: None,
            tool_call_id="c1",
            store=None,
        )
        message = peek.invoke(
            {
                "type": "tool_call",
                "name": "peek",
                "id": "c1",
                "args": {"limit": 5, "runtime": tool_runtime},
            }
        )
        return {"seen": message.content}

    schema = peek.tool_call_schema.model_json_schema()
    assert list(schema["properties"]) == ["limit"]  # the model never sees or writes the runtime
    wire = (
        WireBuilder("tools")
        .kind("k", lambda ctx: {})
        .kind("t", use_tool)
        .stage("a", "k")
        .stage("b", "t", after=["a"])
        .build()
    )
    assert Runtime(wire, memory_saver(), clock=clock()).run("t").outputs["b"]["seen"] == ["a"]


def test_a_finished_thread_resumes_without_redoing_anything(tmp_path):
    path = tmp_path / "run.db"
    with open_saver(path) as saver:
        first = Runtime(load_wire(DEMO), saver, clock=clock()).run("t")
    with open_saver(path) as saver:
        again = Runtime(load_wire(DEMO), saver, clock=clock()).run("t")
        assert [event_to_dict(e) for e in again.log] == [event_to_dict(e) for e in first.log]


def test_a_logical_clock_gives_parallel_stages_the_same_times_in_every_run():
    from cortex_agents.runtime import LogicalClock

    # Each run finishes the three parallel stages in another order, forced by events: a
    # stage waits for the one before it in that order (the root, alone, waits for none).
    orders = [("a", "b", "c"), ("c", "b", "a"), ("b", "c", "a"), ("c", "a", "b")]
    run: dict[str, Any] = {}  # this run's order and one event per stage

    def in_order(ctx: StageContext) -> dict:
        order, finished = run["order"], run["finished"]
        if ctx.stage_id in order and (i := order.index(ctx.stage_id)) > 0:
            assert finished[order[i - 1]].wait(30), f"{order[i - 1]!r} never finished"
        finished[ctx.stage_id].set()
        return {"at": ctx.entry_time.isoformat()}

    wire = (
        WireBuilder("lc")
        .kind("k", in_order)
        .stage("root", "k")
        .stage("a", "k", after=["root"])
        .stage("b", "k", after=["root"])
        .stage("c", "k", after=["root"])
        .build()
    )
    runs = []
    for order in orders:
        run.update(order=order, finished={n: threading.Event() for n in ("root", "a", "b", "c")})
        runs.append(Runtime(wire, memory_saver(), clock=LogicalClock(T0)).run("t"))
    logs = [[event_to_dict(e) for e in r.log] for r in runs]
    assert all(log == logs[0] for log in logs)
    entries = {e.node_id: e.at for e in runs[0].log if isinstance(e, StageStarted)}
    assert entries["a"] < entries["b"] < entries["c"]  # position in the frontier, not thread order


def test_outputs_every_backend_can_store_or_a_legible_failure(tmp_path):
    wire = (
        WireBuilder("storable")
        .kind("big", lambda ctx: {"n": 2**64})
        .kind("surrogate", lambda ctx: {"t": "\ud800"})
        .kind("fine", lambda ctx: {"n": 2**63 - 1, "t": "é"})
        .stage("b", "big")
        .stage("s", "surrogate")
        .stage("f", "fine")
        .on_failure("continue")
        .build()
    )
    with open_saver(tmp_path / "s.db") as saver:
        result = Runtime(wire, saver, clock=clock()).run("t")
    failures = dict(result.failures)
    assert "64 bits" in failures["b"] and "not JSON-serialisable" in failures["s"]
    assert result.outputs["f"] == {"n": 2**63 - 1, "t": "é"}


def test_a_stage_mutating_its_inputs_config_or_run_input_changes_nothing_recorded():
    seen: dict[str, Any] = {}

    def source(ctx: StageContext) -> dict:
        return {"items": [1], "meta": {"v": 1}}

    vandalised = threading.Event()

    def vandal(ctx: StageContext) -> dict:
        ctx.inputs["src"]["items"].append("MUTATED")
        ctx.config["nested"]["n"] = "MUTATED"
        ctx.run_input["claim"] = "HIJACKED"
        vandalised.set()
        return {"ok": True}

    def reader(ctx: StageContext) -> dict:
        # runs beside the vandal, in the same frontier, and reads after its mutations
        assert vandalised.wait(30), "the vandal never ran beside the reader"
        seen["inputs"], seen["run_input"] = ctx.inputs["src"], ctx.run_input
        return {"ok": True}

    wire = (
        WireBuilder("mutation")
        .kind("source", source)
        .kind("vandal", vandal)
        .kind("reader", reader)
        .stage("src", "source")
        .stage("v", "vandal", after=["src"], config={"nested": {"n": 1}})
        .stage("r", "reader", after=["src"])
        .build()
    )
    caller_input = {"claim": "X"}
    result = Runtime(wire, memory_saver(), clock=clock()).run("t", caller_input)
    assert result.complete
    assert result.outputs["src"] == {"items": [1], "meta": {"v": 1}}
    assert result.state.nodes["v"].config == {"nested": {"n": 1}}
    assert seen == {"inputs": {"items": [1], "meta": {"v": 1}}, "run_input": {"claim": "X"}}
    assert caller_input == {"claim": "X"}


def test_an_event_a_stage_cannot_record_fails_that_stage_not_the_thread():
    from cortex_agents.substrate import EdgeAdded

    def forger(ctx: StageContext) -> dict:
        ctx.record(EdgeAdded(source=ctx.stage_id, target="ghost", at=ctx.clock()))
        return {"ok": True}

    wire = (
        WireBuilder("journal")
        .kind("forger", forger)
        .kind("fine", lambda ctx: {"ok": True})
        .stage("a", "forger")
        .stage("b", "fine")
        .on_failure("continue")
        .build()
    )
    runtime = Runtime(wire, memory_saver(), clock=clock())
    result = runtime.run("t")
    assert "journaled an event that cannot be recorded" in dict(result.failures)["a"]
    assert result.outputs["b"] == {"ok": True}
    assert runtime.result("t").state.nodes["a"].status == "failed"  # the thread stays readable


def test_a_cancelled_error_raised_by_a_stage_is_its_failure():
    async def cancels(ctx: StageContext) -> dict:
        raise asyncio.CancelledError("an inner task was cancelled")

    wire = WireBuilder("cancel").kind("k", cancels).stage("s", "k").on_failure("continue").build()
    result = Runtime(wire, memory_saver(), clock=clock()).run("t")
    assert "CancelledError" in dict(result.failures)["s"]


def test_a_thread_of_another_wire_is_refused_legibly_when_it_needs_a_kind_this_one_lacks():
    from cortex_agents.errors import InvalidWire

    def boom(ctx: StageContext) -> dict:
        raise ValueError("x")

    first = WireBuilder("first").kind("kf", boom).stage("f", "kf").on_failure("continue").build()
    second = WireBuilder("second").kind("kb", lambda ctx: {}).stage("x", "kb").build()
    saver = memory_saver()
    Runtime(first, saver, clock=clock()).run("t")
    with pytest.raises(InvalidWire, match="started by another wire"):
        Runtime(second, saver, clock=clock()).run("t")


def test_kind_names_langgraph_reserves_are_refused_before_running():
    from cortex_agents.errors import InvalidWire

    for name in ("__interrupt__", "__pregel_pull", "scheduler"):
        with pytest.raises(InvalidWire, match="reserved"):
            WireBuilder("w").kind(name, lambda ctx: {}).stage("s", name).build()


def test_run_returns_exactly_the_state_it_checkpointed(tmp_path):
    # Runtime.run builds its result from the state its invocation's stream ended with,
    # not by reading the thread back: both must be the same substrate, event for event.
    def boom(ctx: StageContext) -> dict:
        raise ValueError("no")

    def mixed(on_failure: str) -> Any:
        return (
            WireBuilder("mixed")
            .kind("ok", lambda ctx: {"at": ctx.stage_id})
            .kind("bad", boom)
            .stage("a", "ok")
            .stage("b", "ok", after=["a"])
            .stage("c", "bad", after=["a"])
            .stage("d", "ok", after=["b"])
            .on_failure(on_failure)
            .build()
        )

    with open_saver(tmp_path / "run.db") as saver:
        stops = Runtime(mixed("stop"), saver, clock=clock())
        with pytest.raises(RunFailed) as failed:
            stops.run("t", {"x": 1})
        assert failed.value.failures == stops.result("t").failures
        assert [stage for stage, _ in failed.value.failures] == ["c"]
        # the same thread again, going on past the failure (a retry, then d)
        ran = Runtime(mixed("continue"), saver, clock=clock()).run("t")
        back = stops.result("t")
    assert [event_to_dict(e) for e in ran.log] == [event_to_dict(e) for e in back.log]
    assert ran.log.digest == back.log.digest and ran.failures == back.failures
    assert {n.id: (n.status, n.attempts) for n in ran.state.nodes.values()} == {
        "a": ("completed", 1),
        "b": ("completed", 1),
        "c": ("failed", 2),
        "d": ("completed", 1),
    }


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_model_a_stage_calls_streams_its_tokens_as_the_kinds_node(mode):
    # The stage runs inside the context LangGraph opens for its task, so callbacks
    # (token streaming, tracing) reach a model it calls, sync or async alike.
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    def talk(ctx: StageContext) -> dict:
        return {"said": ctx.extras["chat_model"].invoke("hi").content}

    async def atalk(ctx: StageContext) -> dict:
        return {"said": (await ctx.extras["chat_model"].ainvoke("hi")).content}

    model = GenericFakeChatModel(messages=iter([AIMessage("tokens one by one")]))
    wire = WireBuilder("chat").kind("talk", talk if mode == "sync" else atalk).stage("s", "talk")
    runtime = Runtime(wire.build(), memory_saver(), clock=clock(), services={"chat_model": model})
    start = {"scanned": None, "retry": True}
    config = runtime.config("t")
    if mode == "sync":
        parts = list(runtime.graph.stream(start, config, stream_mode="messages"))
    else:

        async def collect() -> list[Any]:
            return [p async for p in runtime.graph.astream(start, config, stream_mode="messages")]

        parts = asyncio.run(collect())
    streamed = [(chunk.content, meta["langgraph_node"]) for chunk, meta in parts]
    assert "".join(text for text, _ in streamed) == "tokens one by one"
    assert len(streamed) >= 3 and {node for _, node in streamed} == {"talk"}
    assert runtime.result("t").outputs["s"] == {"said": "tokens one by one"}
