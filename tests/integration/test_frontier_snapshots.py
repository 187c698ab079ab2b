"""Every stage's bound snapshot is exactly the substrate at its frontier, on every fork.

A run with parallel frontiers, a failure and its retry is forked at every
checkpoint that has work pending; each stage writes into its output what its
memory snapshot held, and every such record, on every line, is compared with
a from-scratch fold of that line's log up to the stage's recorded frontier.
"""

from __future__ import annotations

from typing import Any

from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.substrate import StageCompleted, StageStarted, SubstrateLog, fold
from tests.support.helpers import T0


def seen_by(snapshot_nodes, snapshot_edges) -> dict[str, Any]:
    return {
        "nodes": sorted(
            [n.id, n.status, n.attempts, n.output if n.settled else None]
            for n in snapshot_nodes.values()
        ),
        "edges": [[e.source, e.target] for e in snapshot_edges],
    }


def record(ctx: StageContext) -> dict[str, Any]:
    snapshot = ctx.memory.snapshot
    node = snapshot.nodes[ctx.stage_id]
    if ctx.stage_id == "b1" and node.attempts == 0 and ctx.run_input == "first":
        raise RuntimeError("b1 fails on its first attempt")
    return {"input": ctx.run_input, "seen": seen_by(snapshot.nodes, snapshot.edges)}


def wire():
    builder = WireBuilder("snapshots").kind("rec", record).on_failure("continue")
    builder.stage("root", "rec")
    for layer in range(1, 4):
        previous = ["root"] if layer == 1 else [f"{'abc'[layer - 2]}{i}" for i in range(3)]
        for i in range(3):
            builder.stage(f"{'abc'[layer - 1]}{i}", "rec", after=previous)
    builder.stage("end", "rec", after=["c0", "c1", "c2"])
    return builder.build()


def check_line(log: SubstrateLog) -> int:
    """Compare every recorded snapshot of one line with a fresh fold; return how many."""
    events = list(log)
    started: dict[str, int] = {}
    checked = 0
    for event in events:
        if isinstance(event, StageStarted):
            started[event.node_id] = event.frontier
        elif isinstance(event, StageCompleted):
            expected = fold(events[: started[event.node_id]])
            assert event.output["seen"] == seen_by(expected.nodes, expected.edges), event.node_id
            checked += 1
    return checked


def test_forks_at_every_pending_checkpoint_bind_exact_snapshots(open_db):
    with open_db() as saver:
        runtime = Runtime(wire(), saver, clock=TickingClock(T0))
        first = runtime.run("t", "first")
        assert [n for n, _ in first.failures] == ["b1"]
        second = runtime.run("t")  # retries b1, then the rest
        assert second.complete and second.state.node("b1").attempts == 2
        lines = [second.log]
        pending = [s for s in runtime.graph.get_state_history(runtime.config("t")) if s.next]
        assert len(pending) >= 12
        pending = pending[::3]  # forks early, mid-run, around the failure and its retry
        for i, checkpoint in enumerate(pending):
            start = {"input": f"fork{i}", "scanned": None, "retry": True}
            lines.append(runtime.graph.invoke(start, checkpoint.config)["substrate"])
        checked = sum(check_line(line) for line in lines)
        digests = {line.digest for line in lines}
    assert checked >= 13 + len(pending)  # every stage of the run, and the forks' own
    assert len(digests) == len(lines)  # every line is its own log
