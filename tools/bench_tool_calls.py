#!/usr/bin/env python3
"""Benchmark ``cortex_memory_query`` as a model's call reaches it, and what one call journals.

On a workflow DAG of ``--nodes`` nodes (the generator of ``bench_memory.py``),
from its last reviewer, with no ``limit`` (the model gave none, the preset
sets none):

* ``first_call_ms`` — the process's first call: it loads tiktoken's encoding
  (lazily, so that importing the library stays fast) and extracts the
  snapshot's body fields;
* ``tool_p50_ms`` / ``tool_p95_ms`` — the LangChain tool's ``invoke`` with a
  tool call after that, on a fresh handle each time (walk and influence
  computed; the snapshot index is built once, as a stage's is);
* ``tool_memoised_p95_ms`` — the same call again on the same handle;
* ``journal_bytes_per_call`` — the UTF-8 JSON size of the call's
  ``tool_call_made`` event; ``artifact_bytes`` — of the ``ToolMessage`` artifact;
* ``baseline_*`` — the same call as the tool answered before it was bounded
  (the whole ranked cone materialised, every match in the artifact and the
  journal), measured in the same run;
* ``graph_tool_p95_ms`` / ``graph_journal_bytes_per_call`` — the tool in a
  plain LangGraph graph (no stage), as a live graph calls it: it binds the
  substrate from the state and returns a ``Command`` whose events the
  channel's reducer appends before the next call, so the branch and the
  memory index it keeps grow in place (O(new events) per call);
* ``graph_tool_refork_p95_ms`` — the same call repeated on one unchanged
  state (a retried step): each call's events differ from those the branch
  already holds, so the branch forks and the index is copied (O(nodes)).

Targets (issue 12): ``tool_p95_ms`` <= 50 and ``journal_bytes_per_call`` <= 16,384 at 10,000 nodes.

    python tools/bench_tool_calls.py --nodes 10000 --json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.prebuilt import ToolRuntime

from cortex_agents.memory import MemoryHandle, Topological
from cortex_agents.substrate import (
    EdgeAdded,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    event_to_dict,
)
from cortex_agents.tools import graph_memory_tools, make_memory_query_tool
from cortex_agents.tools._journal import call_summary, tool_call_event

TARGETS = {"tool_p95_ms": 50.0, "journal_bytes_per_call": 16_384}


def _generator() -> Any:
    path = Path(__file__).with_name("bench_memory.py")
    spec = importlib.util.spec_from_file_location("bench_memory", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["bench_memory"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.workflow_dag


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def _runtime(context: Any, state: Any = None) -> ToolRuntime:
    return ToolRuntime(
        state=state if state is not None else {},
        context=context,
        config={"configurable": {"thread_id": "bench"}},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=None,
    )


class _Stage:
    """What a stage gives the tool: its handle, id and clock."""

    def __init__(self, handle: MemoryHandle, origin: str, clock: Any) -> None:
        self.memory, self.stage_id, self.clock = handle, origin, clock


def _call(tool: Any, runtime: ToolRuntime) -> Any:
    return tool.invoke(
        {"type": "tool_call", "name": tool.name, "id": "call-1", "args": {"runtime": runtime}}
    )


def _ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()

    snapshot, reviewers = _generator()(args.nodes, args.seed)
    origin = reviewers[-1]
    snapshot.index  # noqa: B018  (built once per snapshot, as a stage's is)
    clock = lambda: snapshot.captured_at  # noqa: E731
    strategy = Topological(preset="reviewer")
    tool = make_memory_query_tool()

    stage = _Stage(MemoryHandle(snapshot, origin, strategy=strategy), origin, clock)
    start = time.perf_counter()
    _call(tool, _runtime(stage))  # loads tiktoken's encoding and the index's body fields, once
    first_call = time.perf_counter() - start
    timings, memoised, journal, artifact = [], [], 0, 0
    for _ in range(args.calls):
        stage = _Stage(MemoryHandle(snapshot, origin, strategy=strategy), origin, clock)
        start = time.perf_counter()
        message = _call(tool, _runtime(stage))
        timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        _call(tool, _runtime(stage))
        memoised.append(time.perf_counter() - start)
        event = tool_call_event(
            node_id=origin,
            tool=tool.name,
            call_id="call-1",
            arguments={},
            summary=call_summary("success", str(message.content), message.artifact),
            at=clock(),
        )
        journal = _size(event_to_dict(event))
        artifact = _size(message.artifact)

    baseline, baseline_journal, baseline_artifact = [], 0, 0
    keep = ("node_id", "kind", "status", "hops", "score", "graph", "temporal", "semantic")
    for _ in range(max(5, args.calls // 3)):
        handle = MemoryHandle(snapshot, origin, strategy=strategy)
        start = time.perf_counter()
        matches = handle.query(handle.presets.spec("reviewer", limit=None))  # the whole cone
        full = [m.to_dict() for m in matches]
        baseline.append(time.perf_counter() - start)
        baseline_artifact = _size(full)
        baseline_journal = _size([{k: m[k] for k in keep} for m in full])

    log = _log(snapshot)
    message = AIMessage(
        content="",
        tool_calls=[{"name": tool.name, "args": {}, "id": "call-1", "type": "tool_call"}],
    )
    state = {"messages": [message], "substrate": log}
    (graph_tool,) = graph_memory_tools()
    graph_timings, graph_journal = [], 0
    command = _call(graph_tool, _runtime(None, state))  # warm-up, as above
    for _ in range(args.calls):
        # a live graph: the reducer appends each call's events before the next call
        state = {
            "messages": [message],
            "substrate": state["substrate"].appended(command.update["substrate"]),
        }
        start = time.perf_counter()
        command = _call(graph_tool, _runtime(None, state))
        graph_timings.append(time.perf_counter() - start)
        graph_journal = max(
            _size(e) for e in command.update["substrate"] if e["type"] == "tool_call_made"
        )
    refork_timings = []
    for _ in range(args.calls):  # the same state each time: every call forks
        start = time.perf_counter()
        _call(graph_tool, _runtime(None, state))
        refork_timings.append(time.perf_counter() - start)

    result = {
        "nodes": args.nodes,
        "first_call_ms": round(first_call * 1000, 3),
        "tool_p50_ms": round(statistics.median(timings) * 1000, 3),
        "tool_p95_ms": _ms(timings, 0.95),
        "tool_memoised_p95_ms": _ms(memoised, 0.95),
        "journal_bytes_per_call": journal,
        "artifact_bytes": artifact,
        "baseline_tool_p95_ms": _ms(baseline, 0.95),
        "baseline_journal_bytes_per_call": baseline_journal,
        "baseline_artifact_bytes": baseline_artifact,
        "graph_tool_p95_ms": _ms(graph_timings, 0.95),
        "graph_journal_bytes_per_call": graph_journal,
        "graph_tool_refork_p95_ms": _ms(refork_timings, 0.95),
        "targets": TARGETS,
    }
    if not args.json:
        for key, value in result.items():
            print(f"{key:34} {value}")
    print(json.dumps(result))
    return 0


def _log(snapshot: Any) -> SubstrateLog:
    """The snapshot's graph as a substrate log (nodes settle in the order they were added)."""
    incoming: dict[str, list[str]] = {}
    for edge in snapshot.edges:
        incoming.setdefault(edge.target, []).append(edge.source)
    events: list[Any] = []
    for node in snapshot.nodes.values():
        events.append(NodeScheduled(node_id=node.id, kind=node.kind, at=node.captured_at))
        events += [
            EdgeAdded(source=s, target=node.id, at=node.captured_at)
            for s in incoming.get(node.id, ())
        ]
        events.append(StageStarted(node_id=node.id, at=node.captured_at))
        events.append(StageCompleted(node_id=node.id, at=node.completed_at, output=node.output))
    return SubstrateLog(events)


if __name__ == "__main__":
    sys.exit(main())
