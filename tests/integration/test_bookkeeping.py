"""Per-step bookkeeping: bounded caches, flat memory, one superstep per stage, storable journals."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest

from cortex_agents.errors import RunFailed
from cortex_agents.persistence import memory_saver, open_saver
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.runtime._graph import FRONTIER_CACHE
from cortex_agents.substrate import StageFailed, ToolCallMade
from cortex_agents.substrate._branch import STATE_CACHE
from tests.support.helpers import T0

STEPS = 2000
# The run's own events cost ~1 KB a step; one materialized state kept per step adds ~1.4 KB.
BYTES_PER_STEP = 1600


def chain(n: int, fn) -> Any:
    builder = WireBuilder("chain").kind("step", fn)
    for i in range(n):
        builder.stage(f"s{i:05d}", "step", after=[f"s{i - 1:05d}"] if i else [])
    return builder.build()


def test_thousands_of_steps_keep_every_cache_bounded_and_memory_flat(tmp_path):
    marks = {STEPS // 2: None, STEPS - 1: None}
    runtime: Runtime | None = None

    def step(ctx: StageContext) -> dict[str, Any]:
        i = int(ctx.stage_id[1:])
        if i in marks:
            gc.collect()
            frontier = next(reversed(runtime.wiring.frontiers._logs.values()))
            marks[i] = (
                tracemalloc.get_traced_memory()[0],
                {
                    **runtime.saver.cache_sizes(),
                    "frontiers": len(runtime.wiring.frontiers),
                    "states": len(frontier.branch.cached_states()),
                },
            )
        return {"i": i}

    with open_saver(tmp_path / "run.db", synchronous="NORMAL") as saver:
        runtime = Runtime(chain(STEPS, step), saver, clock=TickingClock(T0), durability="sync")
        tracemalloc.start()
        try:
            result = runtime.run("long")
        finally:
            tracemalloc.stop()
    assert result.complete and len(result.state.nodes) == STEPS
    (mid_bytes, mid), (end_bytes, end) = marks[STEPS // 2], marks[STEPS - 1]
    per_step = (end_bytes - mid_bytes) / (STEPS - 1 - STEPS // 2)
    assert per_step < BYTES_PER_STEP, f"{per_step:.0f} bytes retained per step"
    assert mid == end  # no cache grew over the second half of the run
    assert end["cursors"] <= 256 and end["frontiers"] <= FRONTIER_CACHE
    assert end["states"] <= STATE_CACHE and end["buffers"] <= 32 and end["locks"] <= 1


def test_the_per_thread_lock_map_forgets_threads_that_ended(tmp_path):
    wire = chain(2, lambda ctx: {})
    with open_saver(tmp_path / "many.db") as saver:
        runtime = Runtime(wire, saver, clock=TickingClock(T0))
        for i in range(50):
            runtime.run(f"thread-{i}")
        assert saver.locks.held() == 0
        with saver.lock("busy"):
            assert saver.locks.held() == 1
        assert saver.locks.held() == 0


def test_a_chain_takes_one_superstep_and_one_checkpoint_per_stage():
    n = 30
    runtime = Runtime(chain(n, lambda ctx: {"ok": True}), memory_saver(), clock=TickingClock(T0))
    result = runtime.run("t")
    assert result.complete
    checkpoints = list(runtime.graph.get_state_history(runtime.config("t")))
    # input, the first scheduler pass, then one per stage (it schedules its successor itself)
    assert len(checkpoints) <= n + 3
    assert all(entry.get("solo") for s in checkpoints for entry in s.values.get("frontier") or [])


def test_stages_sharing_a_superstep_still_go_back_to_one_scheduler_pass():
    seen: dict[str, list[str]] = {}

    def look(ctx: StageContext) -> dict[str, Any]:
        seen[ctx.stage_id] = sorted(n for n, r in ctx.memory.snapshot.nodes.items() if r.settled)
        return {}

    builder = WireBuilder("layers").kind("k", look).stage("root", "k")
    for i in range(3):
        builder.stage(f"a{i}", "k", after=["root"])
    builder.stage("end", "k", after=["a0", "a1", "a2"])
    runtime = Runtime(builder.build(), memory_saver(), clock=TickingClock(T0))
    assert runtime.run("t").complete
    assert seen["a0"] == seen["a1"] == seen["a2"] == ["root"]  # no sibling bleed
    assert seen["end"] == ["a0", "a1", "a2", "root"]
    nexts = [s.next for s in runtime.graph.get_state_history(runtime.config("t"))]
    assert ("scheduler",) in nexts  # the parallel layer returned to the scheduler
    assert len(nexts) <= 7  # input, pass, root (solo), layer, pass, end (solo), done


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "rule"),
    [({"n": 2**70}, "64 bits"), ({"deep": _nested(300)}, "levels deep")],
    ids=["huge-int", "deep"],
)
def test_a_journaled_event_no_backend_can_store_fails_the_stage_not_the_run(
    tmp_path, arguments, rule
):
    def chatty(ctx: StageContext) -> dict[str, Any]:
        ctx.record(
            ToolCallMade(
                node_id=ctx.stage_id, tool="t", call_id="1", arguments=arguments, at=ctx.clock()
            )
        )
        return {"done": True}

    wire = WireBuilder("w").kind("k", chatty).stage("a", "k").build()
    with open_saver(tmp_path / "j.db") as saver:
        runtime = Runtime(wire, saver, clock=TickingClock(T0))
        with pytest.raises(RunFailed):
            runtime.run("t")
        log = runtime.result("t").log
    failed = [e for e in log if isinstance(e, StageFailed)]
    assert len(failed) == 1 and "cannot be recorded" in failed[0].error
    assert rule in failed[0].error
    assert not any(isinstance(e, ToolCallMade) for e in log)


@pytest.mark.parametrize(("depth", "reason"), [(200, "levels deep"), (5000, "JSON-serialisable")])
def test_an_output_nested_too_deep_fails_the_stage_with_a_legible_reason(depth, reason):
    def deep(ctx: StageContext) -> Any:
        value: Any = "x"
        for _ in range(depth):
            value = {"v": value}
        return value

    wire = WireBuilder("w").kind("k", deep).stage("a", "k").on_failure("continue").build()
    runtime = Runtime(wire, memory_saver(), clock=TickingClock(T0))
    result = runtime.run("t")
    assert [n for n, _ in result.failures] == ["a"]
    assert reason in result.failures[0][1]
