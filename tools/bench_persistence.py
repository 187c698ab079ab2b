#!/usr/bin/env python3
"""Benchmark substrate persistence against plain LangGraph, same run, same events.

N steps each settle one substrate event whose stored JSON is exactly B bytes
(a ``node_scheduled`` event padded in its config: every step also creates a
node row, so the integrity tables are counted too). The same event dicts go

* (a) through our path: ``CortexSaver`` over ``SqliteSaver``, state key
  ``Annotated[SubstrateLog, append_events]``;
* (b) through plain LangGraph: ``Annotated[list, operator.add]`` + ``SqliteSaver``;
* (c) through LangGraph's beta ``DeltaChannel`` + ``SqliteSaver``.

Every run uses ``durability="sync"``, so a step's time includes its
checkpoint. ``db_bytes`` is the file size after ``PRAGMA
wal_checkpoint(TRUNCATE)``; ``substrate_bytes`` is our tables' (and their
indexes') pages, from SQLite's ``dbstat``; ``substrate_ratio`` is that over
N x B. ``step_ms_first10`` / ``step_ms_last10`` are medians of the first and
last ten step intervals. Our path also runs at N/10 to check linear growth.

    python tools/bench_persistence.py --stages 3000 --event-bytes 100 --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import operator
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from cortex_agents.persistence import open_saver
from cortex_agents.substrate import NodeScheduled, SubstrateLog, append_events, event_to_dict

AT = datetime(2026, 1, 1, tzinfo=UTC)
TARGETS = {"substrate_ratio": 2.0, "growth_ratio": 1.1, "step_time_ratio": 1.2}


def event(i: int, size: int) -> dict[str, Any]:
    """The i-th event, padded so that its compact JSON is exactly ``size`` bytes."""
    bare = event_to_dict(NodeScheduled(node_id=f"n{i}", kind="s", at=AT, config={"p": ""}))
    short = len(json.dumps(bare, separators=(",", ":")))
    if size < short:
        raise SystemExit(f"--event-bytes must be at least {short} (the smallest event here)")
    bare["config"]["p"] = os.urandom(size).hex()[: size - short]  # incompressible padding
    return bare


def _concat(state: list, batches: list[list]) -> list:
    out = list(state)
    for batch in batches:
        out.extend(batch)
    return out


def graph(kind: str, stages: int, size: int, ticks: list[float]) -> StateGraph:
    if kind == "ours":
        channel: Any = Annotated[SubstrateLog, append_events]
    elif kind == "list":
        channel = Annotated[list, operator.add]
    else:
        channel = Annotated[list, DeltaChannel(_concat)]

    State = TypedDict("State", {"substrate": channel, "n": int})  # noqa: UP013  (the type is built here)

    def step(state: State) -> dict[str, Any]:
        ticks.append(time.perf_counter())
        return {"substrate": [event(state["n"], size)], "n": state["n"] + 1}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= stages else "step", ["step", END])
    return g


def run(kind: str, stages: int, size: int, workdir: Path) -> dict[str, Any]:
    path = workdir / f"{kind}-{stages}.db"
    ticks: list[float] = []
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": stages + 10}
    g = graph(kind, stages, size, ticks)
    if kind == "ours":
        with open_saver(path) as saver:
            g.compile(checkpointer=saver).invoke({"n": 0}, config, durability="sync")
            assert saver.store.counts()["events"] == stages
    else:
        with SqliteSaver.from_conn_string(str(path)) as saver:
            g.compile(checkpointer=saver).invoke({"n": 0}, config, durability="sync")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ours = conn.execute(
        "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN "
        "(SELECT name FROM sqlite_schema WHERE tbl_name LIKE 'cortex%')"
    ).fetchone()[0]
    conn.close()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    return {
        "db_bytes": path.stat().st_size,
        "substrate_bytes": ours,
        "first10": statistics.median(gaps[:10]) * 1e3,
        "last10": statistics.median(gaps[-10:]) * 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=3000)
    parser.add_argument("--event-bytes", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--skip-list", action="store_true", help="skip the quadratic list baseline")
    args = parser.parse_args(argv)
    if args.stages < 100:
        parser.error("--stages must be at least 100")
    with tempfile.TemporaryDirectory(prefix="cortex-bench-") as tmp:
        workdir = Path(tmp)
        ours = run("ours", args.stages, args.event_bytes, workdir)
        small = run("ours", args.stages // 10, args.event_bytes, workdir)
        delta = run("delta", args.stages, args.event_bytes, workdir)
        plain = None if args.skip_list else run("list", args.stages, args.event_bytes, workdir)
    report = {
        "stages": args.stages,
        "event_bytes": args.event_bytes,
        "substrate_bytes": ours["substrate_bytes"],
        "substrate_ratio": round(ours["substrate_bytes"] / (args.stages * args.event_bytes), 3),
        "db_bytes": ours["db_bytes"],
        "db_bytes_per_stage": round(ours["db_bytes"] / args.stages, 1),
        "langgraph_list_db_bytes": plain and plain["db_bytes"],
        "langgraph_delta_db_bytes": delta["db_bytes"],
        "step_ms_first10": round(ours["first10"], 3),
        "step_ms_last10": round(ours["last10"], 3),
        "db_bytes_per_stage_at_tenth": round(small["db_bytes"] / (args.stages // 10), 1),
        "langgraph_list_step_ms_last10": plain and round(plain["last10"], 3),
        "langgraph_delta_step_ms_last10": round(delta["last10"], 3),
    }
    report["growth_ratio"] = round(
        report["db_bytes_per_stage"] / report["db_bytes_per_stage_at_tenth"], 3
    )
    report["step_time_ratio"] = round(report["step_ms_last10"] / report["step_ms_first10"], 3)
    report["targets"] = TARGETS
    report["targets_met"] = bool(
        report["substrate_ratio"] <= TARGETS["substrate_ratio"]
        and report["db_bytes"] < report["langgraph_delta_db_bytes"]
        and abs(report["growth_ratio"] - 1) <= TARGETS["growth_ratio"] - 1
        and report["step_time_ratio"] <= TARGETS["step_time_ratio"]
    )
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>32}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
