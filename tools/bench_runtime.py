#!/usr/bin/env python3
"""Runtime overhead: N no-LLM stages through cortex-agents vs N trivial nodes in bare LangGraph.

Both run the same topology on a SQLite file with the same saver class
(LangGraph's ``SqliteSaver``; ours wrapped in ``CortexSaver``), same
durability, in the same process run:

* ``chain``: stage i depends on stage i-1 (every frontier has one stage,
  which schedules its successor itself: one superstep per stage, like bare
  LangGraph);
* ``layers``: layers of 10 stages, each depending on the whole previous layer
  (our frontiers run in parallel, then one scheduler superstep merges them;
  bare LangGraph runs each layer's nodes in one superstep too, via edges from
  every node of the previous layer).

Stage bodies do nothing. Prints ``{"stages", "ours_ms_per_stage",
"bare_ms_per_stage", "overhead_ms_per_stage"}`` (plus the shape and the
target). Target: overhead <= 2 ms per stage at N = 1,000.

    python tools/bench_runtime.py --stages 1000 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from cortex_agents.persistence import open_saver
from cortex_agents.runtime import Runtime, StageContext, WireBuilder

TARGET_MS = 2.0
WIDTH = 10


def topology(shape: str, n: int) -> list[tuple[str, list[str]]]:
    """``(stage, predecessors)`` in a topological order."""
    if shape == "chain":
        return [(f"s{i:05d}", [f"s{i - 1:05d}"] if i else []) for i in range(n)]
    stages = []
    for i in range(n):
        layer = i // WIDTH
        previous = [f"s{j:05d}" for j in range((layer - 1) * WIDTH, layer * WIDTH)] if layer else []
        stages.append((f"s{i:05d}", previous))
    return stages


def nothing(ctx: StageContext) -> dict[str, Any]:
    return {}


def ours(stages: list[tuple[str, list[str]]], path: Path) -> float:
    builder = WireBuilder("bench").kind("step", nothing)
    for stage, after in stages:
        builder.stage(stage, "step", after=after)
    wire = builder.build()
    with open_saver(path) as saver:
        runtime = Runtime(wire, saver)
        started = time.perf_counter()
        result = runtime.run("bench")
        elapsed = time.perf_counter() - started
        assert result.complete and len(result.state.nodes) == len(stages)
    return elapsed


class _Bare(TypedDict, total=False):
    done: int


def bare(stages: list[tuple[str, list[str]]], path: Path) -> float:
    graph = StateGraph(_Bare)
    for stage, _ in stages:
        graph.add_node(stage, lambda state: {})
    for stage, after in stages:
        if not after:
            graph.add_edge(START, stage)
        elif len(after) == 1:
            graph.add_edge(after[0], stage)
        else:
            graph.add_edge(after, stage)  # waits for every predecessor, like our scheduler
    sinks = {s for s, _ in stages} - {p for _, after in stages for p in after}
    for sink in sinks:
        graph.add_edge(sink, END)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        app = graph.compile(checkpointer=saver)
        started = time.perf_counter()
        app.invoke(
            {}, {"configurable": {"thread_id": "bench"}, "recursion_limit": 4 * len(stages) + 10}
        )
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=1000)
    parser.add_argument("--shape", choices=["chain", "layers"], default="chain")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each; the median is reported"
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    stages = topology(args.shape, args.stages)
    ours_times, bare_times = [], []
    with tempfile.TemporaryDirectory(prefix="cortex-bench-") as tmp:
        for i in range(args.repeats):  # interleaved, so drift in machine load hits both alike
            ours_times.append(ours(stages, Path(tmp) / f"ours-{i}.db"))
            bare_times.append(bare(stages, Path(tmp) / f"bare-{i}.db"))
    ours_ms = statistics.median(ours_times) / args.stages * 1e3
    bare_ms = statistics.median(bare_times) / args.stages * 1e3
    report = {
        "stages": args.stages,
        "shape": args.shape,
        "ours_ms_per_stage": round(ours_ms, 3),
        "bare_ms_per_stage": round(bare_ms, 3),
        "overhead_ms_per_stage": round(ours_ms - bare_ms, 3),
        "target_overhead_ms_per_stage": TARGET_MS,
        "target_met": ours_ms - bare_ms <= TARGET_MS,
    }
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>30}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
