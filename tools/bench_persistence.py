#!/usr/bin/env python3
"""Benchmark substrate persistence against plain LangGraph, same run, same events.

N steps each settle one substrate event whose stored JSON is exactly B bytes
(a ``node_scheduled`` event padded in its config: every step also creates a
node row, so the integrity tables are counted too). The same event dicts go

* (a) through our path: ``CortexSaver`` over ``SqliteSaver``, state key
  ``Annotated[SubstrateLog, append_events]``, under the thread's writer lock
  as the runtime runs (so every commit is fenced: it checks the writer epoch;
  ``--unlocked`` leaves the lock out);
* (b) through plain LangGraph: ``Annotated[list, operator.add]`` + ``SqliteSaver``;
* (c) through LangGraph's beta ``DeltaChannel`` + ``SqliteSaver``.

Every run uses ``durability="sync"``, so a step's time includes its
checkpoint. ``db_bytes`` is the file size after ``PRAGMA
wal_checkpoint(TRUNCATE)``; ``substrate_bytes`` is our tables' (and their
indexes') pages, from SQLite's ``dbstat``; ``substrate_ratio`` is that over
N x B. Our path also runs at N/10 to check linear growth.

Step times: the first ``--warmup`` steps (default 2% of N, at least 20) are
reported apart (``step_ms_warmup``, imports, caches and SQLite pages settling);
of the steps after them, ``step_ms_first10pct`` / ``step_ms_last10pct`` are
the medians of the first and last 10%, and ``step_time_ratio`` is last over
first (does a step get slower as the run grows?). ``vs_delta`` compares the
median step after warm-up with LangGraph's ``DeltaChannel`` on the same
events; ``--repeats`` runs ours and the delta channel alternately and reports
the median of each figure.

    python tools/bench_persistence.py --stages 3000 --event-bytes 100 --json
"""

from __future__ import annotations

import argparse
import contextlib
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
TARGETS = {"substrate_ratio": 2.0, "growth_ratio": 1.1, "step_time_ratio": 1.2, "vs_delta": 1.2}


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


def run(
    kind: str,
    stages: int,
    size: int,
    workdir: Path,
    warmup: int,
    synchronous: str = "FULL",
    locked: bool = True,
) -> dict[str, Any]:
    path = workdir / f"{kind}-{stages}.db"
    path.unlink(missing_ok=True)
    ticks: list[float] = []
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": stages + 10}
    g = graph(kind, stages, size, ticks)
    if kind == "ours":
        with open_saver(path, synchronous=synchronous) as saver:  # type: ignore[arg-type]
            with saver.lock("bench") if locked else contextlib.nullcontext():
                g.compile(checkpointer=saver).invoke({"n": 0}, config, durability="sync")
            assert saver.store.counts()["events"] == stages
    else:
        with SqliteSaver.from_conn_string(str(path)) as saver:
            saver.setup()
            saver.conn.execute(f"PRAGMA synchronous={synchronous}")
            g.compile(checkpointer=saver).invoke({"n": 0}, config, durability="sync")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ours = conn.execute(
        "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN "
        "(SELECT name FROM sqlite_schema WHERE tbl_name LIKE 'cortex%')"
    ).fetchone()[0]
    conn.close()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    settled = gaps[warmup:]
    window = max(1, len(settled) // 10)
    return {
        "db_bytes": path.stat().st_size,
        "substrate_bytes": ours,
        "warmup": statistics.median(gaps[:warmup]) * 1e3,
        "first": statistics.median(settled[:window]) * 1e3,
        "last": statistics.median(settled[-window:]) * 1e3,
        "median": statistics.median(settled) * 1e3,
    }


def _median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=3000)
    parser.add_argument("--event-bytes", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=None, help="steps reported apart")
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs; medians")
    parser.add_argument(
        "--synchronous",
        choices=["FULL", "NORMAL"],
        default="FULL",
        help="SQLite's synchronous pragma for every run (FULL: an fsync per commit)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--skip-list", action="store_true", help="skip the quadratic list baseline")
    parser.add_argument(
        "--unlocked", action="store_true", help="run ours without the writer lock (unfenced)"
    )
    args = parser.parse_args(argv)
    if args.stages < 100:
        parser.error("--stages must be at least 100")
    warmup = args.warmup if args.warmup is not None else max(20, args.stages // 50)
    if not 0 < warmup < args.stages // 2:
        parser.error("--warmup must be between 1 and half of --stages")
    with tempfile.TemporaryDirectory(prefix="cortex-bench-") as tmp:
        workdir = Path(tmp)
        ours_runs, delta_runs = [], []
        sync, locked = args.synchronous, not args.unlocked
        for _ in range(args.repeats):  # alternating, so drift in machine load hits both alike
            ours_runs.append(
                run("ours", args.stages, args.event_bytes, workdir, warmup, sync, locked)
            )
            delta_runs.append(run("delta", args.stages, args.event_bytes, workdir, warmup, sync))
        small = run("ours", args.stages // 10, args.event_bytes, workdir, min(warmup, 10), sync)
        plain = (
            None
            if args.skip_list
            else run("list", args.stages, args.event_bytes, workdir, warmup, sync)
        )
    ours, delta = ours_runs[-1], delta_runs[-1]
    report = {
        "stages": args.stages,
        "event_bytes": args.event_bytes,
        "repeats": args.repeats,
        "synchronous": args.synchronous,
        "locked": not args.unlocked,
        "substrate_bytes": ours["substrate_bytes"],
        "substrate_ratio": round(ours["substrate_bytes"] / (args.stages * args.event_bytes), 3),
        "db_bytes": ours["db_bytes"],
        "db_bytes_per_stage": round(ours["db_bytes"] / args.stages, 1),
        "langgraph_list_db_bytes": plain and plain["db_bytes"],
        "langgraph_delta_db_bytes": delta["db_bytes"],
        "db_bytes_per_stage_at_tenth": round(small["db_bytes"] / (args.stages // 10), 1),
        "warmup_steps": warmup,
        "step_ms_warmup": round(_median_of(ours_runs, "warmup"), 3),
        "step_ms_first10pct": round(_median_of(ours_runs, "first"), 3),
        "step_ms_last10pct": round(_median_of(ours_runs, "last"), 3),
        "step_ms_median": round(_median_of(ours_runs, "median"), 3),
        "delta_step_ms_first10pct": round(_median_of(delta_runs, "first"), 3),
        "delta_step_ms_last10pct": round(_median_of(delta_runs, "last"), 3),
        "delta_step_ms_median": round(_median_of(delta_runs, "median"), 3),
        "langgraph_list_step_ms_last10pct": plain and round(plain["last"], 3),
    }
    report["growth_ratio"] = round(
        report["db_bytes_per_stage"] / report["db_bytes_per_stage_at_tenth"], 3
    )
    report["step_time_ratio"] = round(report["step_ms_last10pct"] / report["step_ms_first10pct"], 3)
    report["delta_step_time_ratio"] = round(
        report["delta_step_ms_last10pct"] / report["delta_step_ms_first10pct"], 3
    )
    report["vs_delta"] = round(report["step_ms_median"] / report["delta_step_ms_median"], 3)
    report["targets"] = TARGETS
    report["targets_met"] = bool(
        report["substrate_ratio"] <= TARGETS["substrate_ratio"]
        and report["db_bytes"] < report["langgraph_delta_db_bytes"]
        and abs(report["growth_ratio"] - 1) <= TARGETS["growth_ratio"] - 1
        and report["step_time_ratio"] <= TARGETS["step_time_ratio"]
        and report["vs_delta"] <= TARGETS["vs_delta"]
    )
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>32}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
