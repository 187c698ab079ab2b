"""Rewrites in real runs: admitted nodes run in the same thread, in order, and become memory;
same-frontier proposals are admitted one at a time, deterministically; the budget is durable;
a stage that is not rewrite-capable cannot propose; the history shows in ``inspect``."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.errors import RunFailed
from cortex_agents.persistence import export_document, import_document, memory_saver, open_saver
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import LogicalClock, Runtime, StageContext, WireBuilder
from cortex_agents.snapshotfile import dump_snapshot, parse_snapshot
from cortex_agents.substrate import (
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    StageCompleted,
    StageStarted,
    event_to_dict,
)
from tests.support.helpers import T0


def work(ctx: StageContext) -> dict[str, Any]:
    """Propose what the config says; report the decisions, the inputs and the memory seen."""
    decisions = []
    for raw in ctx.config.get("propose", []):
        fact = ctx.propose_rewrite(raw)
        decisions.append(fact.code or fact.decision)
    return {
        "decisions": decisions,
        "inputs": sorted(ctx.inputs),
        "memory": sorted(m.node_id for m in ctx.memory.query()),
    }


def append(anchor: str, *nodes: str) -> dict[str, Any]:
    ids = list(nodes)
    return {
        "op": "append_after",
        "anchor": anchor,
        "spec": {
            "nodes": [{"id": n, "kind": "step", "config": {"made_by": anchor}} for n in ids],
            "edges": [[a, b] for a, b in pairwise(ids)],
            "entry": ids[:1],
            "exit": ids[-1:],
        },
    }


def chain_wire(*proposals: dict[str, Any], budget: dict[str, int] | None = None):
    """root -> worker (rewrite-capable, proposes) -> sink."""
    builder = (
        WireBuilder("rewrites")
        .kind("step", work)
        .stage("root", "step")
        .stage(
            "worker",
            "step",
            after=["root"],
            config={"propose": list(proposals)},
            rewrite=RewritePolicy(attempts=4),
        )
        .stage("sink", "step", after=["worker"])
    )
    if budget:
        builder.budget(**budget)
    return builder.build()


def started_order(log) -> list[str]:
    return [e.node_id for e in log if isinstance(e, StageStarted)]


def test_admitted_nodes_run_in_the_same_thread_in_order_and_become_memory(open_db):
    wire = chain_wire(append("worker", "follow", "check"))
    with open_db() as saver:
        result = Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
    assert result.complete
    assert started_order(result.log) == ["root", "worker", "worker:follow", "worker:check", "sink"]
    out = result.outputs
    assert out["worker"]["decisions"] == ["admitted"]
    assert out["worker:follow"]["inputs"] == ["worker"]
    assert out["sink"]["inputs"] == ["worker:check"]  # the exit set feeds the former successor
    assert out["sink"]["memory"] == ["root", "worker", "worker:check", "worker:follow"]
    state = result.state
    assert state.watermark == 1 and state.nodes["worker:follow"].config == {"made_by": "worker"}
    assert [(e.source, e.target) for e in state.edges] == [
        ("root", "worker"),
        ("worker", "worker:follow"),
        ("worker:follow", "worker:check"),
        ("worker:check", "sink"),
    ]


def test_admission_and_materialization_are_separate_durable_commits(tmp_path):
    """The decision is written with the stage; the scheduler applies it in its own commit."""
    wire = chain_wire(append("worker", "follow"))
    with open_saver(tmp_path / "r.db") as saver:
        result = Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
    events = list(result.log)
    admitted = next(i for i, e in enumerate(events) if isinstance(e, RewriteAdmitted))
    worker_done = next(
        i for i, e in enumerate(events) if isinstance(e, StageCompleted) and e.node_id == "worker"
    )
    applied = next(i for i, e in enumerate(events) if isinstance(e, RewriteApplied))
    scheduled = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, NodeScheduled) and e.node_id == "worker:follow"
    )
    assert admitted < worker_done < scheduled < applied
    assert isinstance(events[0], RewriteBudgetSet)


def test_a_rejected_proposal_leaves_the_runs_graph_as_if_never_made(tmp_path):
    """Byte identity of graph and budget at the decision is a unit test; here: a whole run.
    (Times differ: the logical clock counts substrate events, and the decision is one.)"""
    over = append("worker", "a", "b", "c")
    runs = {}
    for name, proposals in (("without", ()), ("rejected", (over,))):
        wire = chain_wire(*proposals, budget={"nodes": 2})
        with open_saver(tmp_path / f"{name}.db") as saver:
            Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
            runs[name] = json.loads(dump_snapshot(export_document(saver, "t")))
    rejected, without = runs["rejected"], runs["without"]
    assert [r["code"] for r in rejected["rewrites"]] == ["rewrite_budget_exceeded"]
    assert rejected["rewrites"][0]["budget_after"] == rejected["rewrites"][0]["budget_before"]
    for run in runs.values():
        for node in run["nodes"]:
            del node["captured_at"], node["completed_at"]
            if node["id"] == "worker":  # its config holds, and its output reports, the proposal
                node["config"]["propose"] = node["output"]["decisions"] = []
    assert rejected["nodes"] == without["nodes"] and rejected["edges"] == without["edges"]


def twin_wire():
    """root -> w1, w2: two rewrite-capable siblings, each asking for 3 of 4 nodes."""
    return (
        WireBuilder("twins")
        .kind("step", work)
        .stage("root", "step")
        .stage(
            "w2",
            "step",
            after=["root"],
            config={"propose": [append("w2", "x", "y", "z")]},
            rewrite=RewritePolicy(),
        )
        .stage(
            "w1",
            "step",
            after=["root"],
            config={"propose": [append("w1", "x", "y", "z")]},
            rewrite=RewritePolicy(),
        )
        .stage("plain", "step", after=["root"])
        .budget(nodes=4)
        .build()
    )


def test_same_frontier_proposals_are_admitted_one_at_a_time_in_a_deterministic_order():
    runs = [Runtime(twin_wire(), memory_saver(), clock=LogicalClock(T0)).run("t") for _ in range(3)]
    first = runs[0]
    decisions = [(f.proposer, f.rewrite_id, f.code) for f in first.state.rewrites]
    assert decisions == [("w1", 1, None), ("w2", None, "rewrite_budget_exceeded")]
    assert first.outputs["w2"]["decisions"] == ["rewrite_budget_exceeded"]
    # one rewrite-capable stage per superstep, the plain sibling alongside the first
    frontiers = {e.node_id: e.frontier for e in first.log if isinstance(e, StageStarted)}
    assert frontiers["w1"] == frontiers["plain"] == frontiers["w2"]  # w2 keeps its snapshot...
    starts = started_order(first.log)
    assert starts.index("w2") > starts.index("w1")  # ...but runs after w1's decisions
    # no frontier bleed: w1 settled before w2 ran, yet w2's memory does not hold it
    assert first.outputs["w2"]["memory"] == ["root"]
    for other in runs[1:]:
        assert [event_to_dict(e) for e in other.log] == [event_to_dict(e) for e in first.log]


def test_the_budget_is_fixed_for_the_run_when_it_starts(tmp_path):
    attempts = {"n": 0}

    def flaky(ctx: StageContext) -> dict[str, Any]:
        attempt = ctx.rewrites.attempt
        out = {"decision": ctx.propose_rewrite(append("worker", f"a{attempt}", f"b{attempt}")).code}
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise RuntimeError("first attempt fails after proposing")
        return out

    def build(nodes: int):
        return (
            WireBuilder("durable")
            .kind("step", work)
            .kind("flaky", flaky)
            .stage("root", "step")
            .stage(
                "worker",
                "flaky",
                after=["root"],
                rewrite=RewritePolicy(),
            )
            .budget(nodes=nodes)
            .build()
        )

    with open_saver(tmp_path / "b.db") as saver:
        with pytest.raises(RunFailed):
            Runtime(build(3), saver, clock=LogicalClock(T0)).run("t")
        # the wire now grants 100 nodes, but the run was granted 3 and spent 2
        result = Runtime(build(100), saver, clock=LogicalClock(T0)).run("t")
    facts = result.state.rewrites
    assert [f.code or f.decision for f in facts] == ["admitted", "rewrite_budget_exceeded"]
    assert facts[1].budget_before["nodes"] == 1 and result.state.budget["nodes"] == 3
    assert [f.key for f in facts] == ["worker#1:p1", "worker#2:p1"]


def test_a_stage_without_rewrite_capability_cannot_propose():
    wire = (
        WireBuilder("forged")
        .kind("step", work)
        .stage("root", "step")
        .stage("sneaky", "step", after=["root"], config={"propose": [append("sneaky", "x")]})
        .on_failure("continue")
        .build()
    )
    result = Runtime(wire, memory_saver(), clock=LogicalClock(T0)).run("t")
    assert result.failures and "RewriteUnavailable" in result.failures[0][1]
    assert result.state.rewrites == () and "sneaky:x" not in result.state.nodes
    assert result.state.budget is None  # the wire has no rewrite-capable stage


def test_inspect_shows_the_rewrite_history_with_budget_before_and_after(tmp_path):
    db = tmp_path / "i.db"
    wire = chain_wire(append("worker", "a"), append("worker:a", "b", "c"), budget={"nodes": 2})
    with open_saver(db) as saver:
        Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["inspect", str(db), "--thread", "t", "--json"]).stdout)
    rows = [
        (
            r["rewrite_id"],
            r["decision"],
            r["code"],
            r["budget_before"]["nodes"],
            r["budget_after"]["nodes"],
        )
        for r in data["rewrites"]
    ]
    assert rows == [
        (1, "admitted", None, 2, 1),
        (None, "rejected", "rewrite_budget_exceeded", 1, 1),
    ]
    assert data["rewrites"][0]["new_nodes"] == ["worker:a"] and data["watermark"] == 1
    text = runner.invoke(app, ["inspect", str(db), "--thread", "t"]).stdout
    history = text[text.index("rewrite history") :].splitlines()
    assert history[1].startswith("#1   admitted as rewrite 1 · by worker · append_after(worker)")
    assert history[2].strip() == "new nodes: worker:a"
    assert history[3].strip() == "cost n=1 e=2 d=1 b=0 ops=1"
    assert history[4].strip().startswith("budget n=2 ")
    assert history[4].endswith("-> n=1 e=30 d=5 b=4 ops=3")
    assert history[5].startswith("#2   rejected: rewrite_budget_exceeded (budget.nodes)")
    assert history[-1].strip().startswith("budget ") and history[-1].endswith("-> unchanged")


def test_export_and_import_keep_the_rewrite_history_and_retired_nodes(tmp_path):
    replace_merge = {
        "op": "expand_node",
        "mode": "replace",
        "anchor": "sink",
        "spec": {
            "nodes": [{"id": "left", "kind": "step"}, {"id": "right", "kind": "step"}],
            "edges": [],
            "entry": ["left", "right"],
            "exit": ["left", "right"],
        },
    }
    wire = chain_wire(replace_merge, {"op": "rename"})
    with open_saver(tmp_path / "e.db") as saver:
        result = Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
        assert result.complete and result.state.nodes["sink"].status == "retired"
        text = dump_snapshot(export_document(saver, "t"))
        import_document(saver, "copy", parse_snapshot(text))
        again = dump_snapshot(export_document(saver, "copy"))
        copy = saver.substrate({"configurable": {"thread_id": "copy"}}).state
    assert again == text  # byte-identical, the run's budget included
    assert json.loads(text)["rewrite_budget"] == dict(sorted(result.state.budget.items()))
    assert copy.watermark == 1 and copy.nodes["sink"].status == "retired"
    assert copy.budget == result.state.budget
    assert copy.budget_spent() == result.state.budget_spent()


def test_every_moment_of_a_rewriting_run_can_be_looked_at_as_of_its_time(tmp_path):
    from cortex_agents.persistence import open_view
    from cortex_agents.snapshotfile import parse_snapshot
    from cortex_agents.substrate import NodeScheduled

    wire = chain_wire(append("worker", "follow", "check"))
    with open_saver(tmp_path / "m.db") as saver:
        result = Runtime(wire, saver, clock=LogicalClock(T0)).run("t")
        admitted = next(e.at for e in result.log if isinstance(e, RewriteAdmitted))
        scheduled = {e.node_id: e.at for e in result.log if isinstance(e, NodeScheduled)}
        # what the scheduler records follows what it depends on, even on a logical clock
        assert scheduled["worker:follow"] >= admitted
        import_document(saver, "copy", parse_snapshot(dump_snapshot(export_document(saver, "t"))))
        for thread in ("t", "copy"):
            view = open_view(saver, thread)
            times = sorted({event.at for event in view.log})
            for moment in times:
                snapshot = view.snapshot(as_of=moment)  # every cut folds
                assert snapshot.captured_at == moment
            final = view.snapshot(as_of=times[-1])
            assert {"worker:follow", "worker:check"} <= set(final.nodes)
