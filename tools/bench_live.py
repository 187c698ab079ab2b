#!/usr/bin/env python3
"""A live run at scale: N stages on SQLite, every 10th recalling memory through the real tool.

The wire is a chain of N no-LLM stages (stage i depends on stage i-1), run by
:class:`~cortex_agents.runtime.Runtime` over ``open_saver``. Every 10th stage
is topological: a scripted chat model (no LLM, no network) asks for
``cortex_memory_query`` with a question and no ``limit``, and the call goes
through the real tool loop (``run_tool_loop`` → ``execute_call`` →
``make_memory_query_tool``), journaled into the substrate like a model's call.
The other stages settle a short finding.

Per stage it records:

* ``stage_ms``: wall time from one stage's entry to the next one's (the
  stage, its scheduling pass and its checkpoint);
* ``bind_ms`` (topological stages): binding the stage's context at entry
  plus taking its snapshot's index view — the branch's memory index
  extended by the events since the last bind (O(new events), not O(V));
* ``tool_ms``: one ``execute_call`` of the tool;
* ``journal_bytes``: the stored JSON of the journaled ``tool_call_made``;
* ``rss_mb``: the process's resident memory at stage entry.

The last line of ``--json`` is one object: ``stages``, medians over the first
and last 10% of stages (of topological stages for ``bind``) of stage time,
bind time and RSS, ``tool_p95_ms`` and ``journal_bytes_per_call``.

    python tools/bench_live.py --stages 1000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from array import array
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import cortex_agents.runtime._graph as graph_module
import cortex_agents.tools._loop as loop_module
from cortex_agents._timestamps import EPOCH
from cortex_agents.memory import BUILTIN_PRESETS, Topological
from cortex_agents.persistence import open_saver
from cortex_agents.persistence._store import encode_event
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.substrate import ToolCallMade
from cortex_agents.tools import make_memory_query_tool, run_tool_loop

WORDS = [
    "bias",
    "trial",
    "gain",
    "survey",
    "focus",
    "remote",
    "claim",
    "risk",
    "cohort",
    "dose",
    "effect",
    "placebo",
]
TARGETS = {"ratio": 1.3, "tool_p95_ms": 50.0, "journal_bytes_per_call": 16384}
PAGE = os.sysconf("SC_PAGE_SIZE")


class ScriptedModel(BaseChatModel):
    """Asks for one memory query, then answers: a model's call without a model."""

    question: str = "bias in the trial"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        if any(isinstance(m, ToolMessage) for m in messages):
            message = AIMessage(content="noted")
        else:
            call = {
                "name": "cortex_memory_query",
                "args": {"query_text": self.question},  # no limit: as the presets ship
                "id": "call-1",
                "type": "tool_call",
            }
            message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


class Recorder:
    """What each stage measured, by stage index (NaN: not measured).

    Arrays allocated once, before the run: the recorder's own bookkeeping
    must not show up as growth of the process it measures (dicts of floats
    would add about 250 bytes per stage).
    """

    def __init__(self, stages: int) -> None:
        self.entry = np.full(stages, np.nan)
        self.rss = np.full(stages, np.nan)
        self.bind = np.full(stages, np.nan)  # seconds binding the stage's context
        self.index = np.full(stages, np.nan)
        self.tool = array("d")
        self.journal = array("q")
        self.progress = 0  # report every `progress` stages on stderr (0: never)
        self.started = time.perf_counter()


def build(stages: int, recorder: Recorder, seed: int) -> Any:
    rng = random.Random(seed)
    tool = make_memory_query_tool(BUILTIN_PRESETS)
    model = ScriptedModel()

    def enter(ctx: StageContext) -> int:
        i = int(ctx.stage_id[1:])
        recorder.entry[i] = time.perf_counter()
        recorder.rss[i] = rss_mb()
        if recorder.progress and i % recorder.progress == 0:
            elapsed = recorder.entry[i] - recorder.started
            print(f"stage {i}: {elapsed:.0f} s, {recorder.rss[i]:.0f} MB", file=sys.stderr)
        return i

    def work(ctx: StageContext) -> dict[str, Any]:
        enter(ctx)
        return {"finding": " ".join(rng.sample(WORDS, 4)), "claim_ref": f"c{rng.randrange(5)}"}

    def recall(ctx: StageContext) -> dict[str, Any]:
        i = enter(ctx)
        started = time.perf_counter()
        ctx.memory.snapshot.index  # noqa: B018  (the branch index's view, extended on first use)
        recorder.index[i] = time.perf_counter() - started
        result = run_tool_loop(
            model,
            [HumanMessage(content="What do we know about bias?")],
            tools=[tool],
            context=ctx,
            journal=ctx.record,
        )
        for event in ctx.journal:
            if isinstance(event, ToolCallMade):
                recorder.journal.append(len(encode_event(event).encode("utf-8")))
        return {"answer": result.message.content, "calls": len(result.calls)}

    builder = WireBuilder("live").kind("work", work).kind("recall", recall)
    for i in range(stages):
        after = [f"s{i - 1:06d}"] if i else []
        if i % 10 == 9:
            builder.stage(f"s{i:06d}", "recall", after=after, memory=Topological())
        else:
            builder.stage(f"s{i:06d}", "work", after=after)
    return builder.build()


def instrument(recorder: Recorder) -> None:
    """Time context binding and tool calls where the runtime and the tool loop make them."""
    bind = graph_module.bind_context

    def timed_bind(frontier: Any, stage_id: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        ctx = bind(frontier, stage_id, **kwargs)
        recorder.bind[int(stage_id[1:])] = time.perf_counter() - started
        return ctx

    graph_module.bind_context = timed_bind  # type: ignore[assignment]
    execute = loop_module.execute_call

    def timed_execute(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        out = execute(*args, **kwargs)
        recorder.tool.append(time.perf_counter() - started)
        return out

    loop_module.execute_call = timed_execute  # type: ignore[assignment]


def windows(values: list[float]) -> tuple[float, float]:
    """Medians of the first and last 10% of ``values``."""
    k = max(1, len(values) // 10)
    return statistics.median(values[:k]), statistics.median(values[-k:])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=1000)
    parser.add_argument(
        "--durability", choices=["sync", "async", "exit"], default="sync", help="LangGraph's"
    )
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temp file)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    parser.add_argument(
        "--progress", type=int, default=0, metavar="K", help="report every K stages on stderr"
    )
    args = parser.parse_args(argv)
    if args.stages < 100:
        parser.error("--stages must be at least 100")
    recorder = Recorder(args.stages)
    recorder.progress = max(args.progress, 0)
    instrument(recorder)
    wire = build(args.stages, recorder, args.seed)
    with tempfile.TemporaryDirectory(prefix="cortex-live-") as tmp:
        db = args.db or Path(tmp) / "live.db"
        started = time.perf_counter()
        with open_saver(db) as saver:
            runtime = Runtime(wire, saver, clock=TickingClock(EPOCH), durability=args.durability)
            result = runtime.run("live")
        total = time.perf_counter() - started
    if not result.complete:
        raise SystemExit(f"the run did not complete: {result.failures[:3]}")
    order = np.flatnonzero(~np.isnan(recorder.entry)).tolist()
    stage_ms = [(recorder.entry[b] - recorder.entry[a]) * 1e3 for a, b in pairwise(order)]
    topo = [i for i in order if i % 10 == 9]
    bind_ms = [(recorder.bind[i] + recorder.index[i]) * 1e3 for i in topo]
    rss = [float(recorder.rss[i]) for i in order]
    (stage_first, stage_last), (bind_first, bind_last) = windows(stage_ms), windows(bind_ms)
    rss_first, rss_last = windows(rss)
    report = {
        "stages": args.stages,
        "stage_ms_first10pct": round(stage_first, 3),
        "stage_ms_last10pct": round(stage_last, 3),
        "bind_ms_first10pct": round(bind_first, 3),
        "bind_ms_last10pct": round(bind_last, 3),
        "tool_p95_ms": round(percentile([t * 1e3 for t in recorder.tool], 0.95), 3),
        "journal_bytes_per_call": round(statistics.mean(recorder.journal)),
        "rss_mb_first10pct": round(rss_first, 1),
        "rss_mb_last10pct": round(rss_last, 1),
    }
    extra = {
        "durability": args.durability,
        "total_s": round(total, 1),
        "tool_calls": len(recorder.tool),
        "tool_p50_ms": round(percentile([t * 1e3 for t in recorder.tool], 0.5), 3),
        "stage_ratio": round(stage_last / stage_first, 3),
        "bind_ratio": round(bind_last / bind_first, 3) if bind_first else None,
        "rss_ratio": round(rss_last / rss_first, 3),
        "targets": TARGETS,
    }
    if args.json:
        print(json.dumps(extra))
        print(json.dumps(report))
    else:
        for key, value in {**report, **extra}.items():
            print(f"{key:>24}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
