"""A run that proposes a rewrite, crashing (``os._exit``, no cleanup) where the test says.

    python rewrite_child.py DB MODE EXECUTIONS_LOG

MODE ``after_admission``: die when the scheduler is about to materialize the
admitted rewrite (the decision is committed, its nodes are not); the worker
shares its superstep with a sibling (``side``), so its superstep ends before
the scheduler's pass. MODE ``solo_admission``: the same crash point, but the
worker runs alone in its superstep and materializes its own rewrite there
(decision and materialization commit together, so nothing of it is
committed). MODE ``mid_stage``: the proposing stage dies right after its
proposal was admitted (nothing of the stage is committed). MODE ``none``: run
to the end. ``SIDE=1`` in the environment adds the sibling in every mode.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

import cortex_agents.runtime._graph as graph_module
from cortex_agents.persistence import open_saver
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import LogicalClock, Runtime, StageContext, WireBuilder

DB, MODE, EXECUTIONS = sys.argv[1], sys.argv[2], sys.argv[3]


def note(stage: str) -> None:
    with open(EXECUTIONS, "a", encoding="utf-8") as f:
        f.write(stage + "\n")


def step(ctx: StageContext) -> dict:
    note(ctx.stage_id)
    return {"inputs": sorted(ctx.inputs)}


def worker(ctx: StageContext) -> dict:
    note(ctx.stage_id)
    fact = ctx.propose_rewrite(
        {
            "op": "append_after",
            "anchor": "worker",
            "spec": {
                "nodes": [{"id": "follow", "kind": "step"}, {"id": "check", "kind": "step"}],
                "edges": [["follow", "check"]],
                "entry": ["follow"],
                "exit": ["check"],
            },
        }
    )
    if MODE == "mid_stage":
        os._exit(9)
    return {"decision": fact.decision, "key": fact.key}


real = graph_module.pending_materialization


def crashing(state, at):
    events = real(state, at)
    if events and MODE in ("after_admission", "solo_admission"):
        os._exit(9)
    return events


graph_module.pending_materialization = crashing

builder = (
    WireBuilder("crash_rewrite")
    .kind("step", step)
    .kind("worker", worker)
    .stage("root", "step")
    .stage("worker", "worker", after=["root"], rewrite=RewritePolicy())
    .stage("sink", "step", after=["worker"])
)
if MODE == "after_admission" or os.environ.get("SIDE") == "1":
    builder.stage("side", "step", after=["root"])  # runs in the worker's superstep
wire = builder.build()
with open_saver(DB) as saver:
    clock = LogicalClock(datetime(2026, 1, 1, tzinfo=UTC))
    # sync durability: each superstep is committed before the next starts, so the crash
    # lands exactly between the stage's commit (the decision) and the scheduler's
    result = Runtime(wire, saver, clock=clock, durability="sync").run("t")
print("complete" if result.complete else "incomplete")
