"""A wire compiled to a LangGraph ``StateGraph``: a scheduler node plus one node per stage kind.

::

    START -> scheduler -(Send per ready stage)-> <kind nodes> -> scheduler -> ... -> END

The scheduler folds the substrate, puts the wire's stages into it on the
first pass, materializes admitted rewrites beyond the watermark, finds the
ready stages and sends each to its kind's node with the frontier's length;
the ready stages run in parallel as tasks of one superstep, and their events
are merged into the substrate when it ends. A stage's memory snapshot is the
substrate as of that frontier: siblings settling in the same superstep are
never in it.

Rewrite-capable stages are the exception to "all in parallel": they run one
per superstep, in the order they became ready (then by id), so proposals of
one frontier are admitted one at a time, deterministically, each against the
budget and graph its predecessors left. A deferred stage keeps the memory
snapshot of the frontier where it became ready; only its admission sees
the later graph.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from cortex_agents.errors import InvalidWire, Problem, StorageError
from cortex_agents.persistence.saver import CortexSaver
from cortex_agents.rewrite.materialize import pending_materialization
from cortex_agents.runtime.clock import Clock
from cortex_agents.runtime.context import StageContext
from cortex_agents.runtime.rewrites import RewriteSession
from cortex_agents.runtime.scheduler import is_ready, next_frontier, wire_events
from cortex_agents.runtime.stage import aexecute_stage, bind_context, execute_stage
from cortex_agents.runtime.wire import StageKind, Wire
from cortex_agents.substrate.events import event_to_dict
from cortex_agents.substrate.log import SubstrateLog, append_events
from cortex_agents.substrate.records import NodeId
from cortex_agents.substrate.state import GraphState

__all__ = ["RunState", "build_graph", "frontier_tag"]

SCHEDULER = "scheduler"


class RunState(TypedDict, total=False):
    """The LangGraph state of a run.

    Attributes:
        substrate: The run's event log (stored as rows by :class:`CortexSaver`).
        input: The run's input, given to every stage.
        scanned: The substrate length at the scheduler's last pass (``None``:
            scan everything, as a new invocation does).
        retry: Whether the next full pass retries failed stages.
        frontier: The stages the last pass sends, each ``{"stage", "frontier",
            "tag", "position"}`` (the frontier its memory snapshot is bound to).
        waiting: Ready rewrite-capable stages queued to run one at a time.
    """

    substrate: Annotated[SubstrateLog, append_events]
    input: Any
    scanned: int | None
    retry: bool
    frontier: list[dict[str, Any]]
    waiting: list[dict[str, Any]]


def frontier_tag(log: SubstrateLog) -> str:
    """A short digest of a log's identity at its length (its last event)."""
    if not len(log):
        return "empty"
    last = repr(event_to_dict(log[-1])).encode()
    return hashlib.blake2b(last, digest_size=8).hexdigest()


class _Frontiers:
    """The logs stages start from, by ``(thread, length, tag)``; bounded."""

    def __init__(self, size: int = 256) -> None:
        self._logs: OrderedDict[tuple[str, int, str], SubstrateLog] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def put(self, key: tuple[str, int, str], log: SubstrateLog) -> None:
        with self._lock:
            self._logs[key] = log
            self._logs.move_to_end(key)
            while len(self._logs) > self._size:
                self._logs.popitem(last=False)

    def get(self, key: tuple[str, int, str]) -> SubstrateLog | None:
        with self._lock:
            return self._logs.get(key)


def build_graph(
    wire: Wire,
    saver: CortexSaver,
    clock: Clock,
    services: Mapping[str, Any] | None = None,
    scratch: Any = None,
) -> StateGraph:
    """The uncompiled graph of a wire (compile it with ``checkpointer=saver``).

    ``services`` (e.g. a ``chat_model``) reach every stage as ``ctx.extras``;
    ``scratch`` (a :class:`~cortex_agents.scratch.ScratchBackend`) gives the
    stages the wire declares scratch memory for their bound memory.
    """
    services = dict(services or {})
    frontiers = _Frontiers()
    vocabulary = wire.vocabulary()

    def capable(state: Any, stage: NodeId) -> bool:
        return wire.spec_for(stage, state.nodes[stage].kind).rewrite is not None

    def stamp(log: SubstrateLog) -> datetime:
        """The scheduler's time: the clock's, never before the substrate's newest event.

        (A logical clock gives each stage its own time line, so its own reads may lag
        the stages'; what the scheduler records follows everything it depends on.)
        """
        now = clock()
        latest = max((event.at for event in log), default=now)
        return max(now, latest)

    def scheduler(state: RunState) -> dict[str, Any]:
        log = state.get("substrate") or SubstrateLog()
        scanned = state.get("scanned")
        events = wire_events(wire, log.state, stamp(log)) if scanned is None else []
        staged = log.appended(events)
        materialized = (  # admitted in the last superstep, or before a crash
            pending_materialization(staged.state, stamp(staged))
            if staged.state.unapplied_rewrites
            else []
        )
        now = staged.appended(materialized)
        events += materialized
        frontier = next_frontier(now, since=scanned, retry_failed=state.get("retry", False))
        current = {"frontier": len(now), "tag": frontier_tag(now)}
        graph = now.state
        retry = state.get("retry", False)
        waiting = [
            w
            for w in state.get("waiting") or []
            if is_ready(graph, NodeId(w["stage"]), retry=retry)
        ]
        queued = {w["stage"] for w in waiting}
        sends = []
        for position, stage in enumerate(frontier.ready):
            entry = {"stage": stage, "position": position, **current}
            if not capable(graph, stage):
                sends.append(entry)
            elif stage not in queued:
                waiting.append(entry)
                queued.add(stage)
        if frontier.failed and wire.on_failure == "stop":
            sends = []
        elif waiting:  # one rewrite-capable stage per superstep, in the order they became ready
            sends.append(waiting.pop(0))
        return {
            "substrate": [event_to_dict(e) for e in events],
            "scanned": len(now),
            "retry": False,
            "frontier": sends,
            "waiting": waiting,
        }

    def route(state: RunState, config: RunnableConfig) -> list[Send] | str:
        sends = state.get("frontier") or []
        if not sends:
            return END
        log = state["substrate"]
        thread_id = config["configurable"]["thread_id"]
        graph = [len(log), frontier_tag(log)]
        frontiers.put((thread_id, *graph), log)  # type: ignore[arg-type]
        nodes = log.state.nodes
        out = []
        for entry in sends:
            if entry["frontier"] != len(log):  # a deferred stage: its snapshot is a prefix
                prefix = log.prefix(entry["frontier"])
                if frontier_tag(prefix) == entry["tag"]:
                    frontiers.put((thread_id, entry["frontier"], entry["tag"]), prefix)
            stage = NodeId(entry["stage"])
            kind = nodes[stage].kind
            if kind not in wire.kinds:
                raise InvalidWire(
                    [
                        Problem(
                            f"thread {thread_id!r}",
                            f"holds stage {stage!r} of kind {kind!r}, which wire {wire.name!r} "
                            "does not register: was the thread started by another wire?",
                        )
                    ]
                )
            payload = {**entry, "graph": graph, "input": state.get("input")}
            out.append(Send(kind, payload))
        return out

    def frontier_log(stage: str, length: int, tag: str, config: RunnableConfig) -> SubstrateLog:
        thread_id = config["configurable"]["thread_id"]
        key = (thread_id, length, tag)
        log = frontiers.get(key)
        if log is None:  # a task resumed in another process: read the checkpoint it started from
            checkpoint_id = config["configurable"].get("checkpoint_map", {}).get("")
            stored = saver.substrate(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": "",
                        "checkpoint_id": checkpoint_id,
                    }
                }
            )
            if (
                stored is None
                or len(stored) < key[1]
                or frontier_tag(stored.prefix(key[1])) != key[2]
            ):
                raise StorageError("integrity", f"cannot rebuild the frontier of stage {stage!r}")
            log = stored.prefix(key[1])
            frontiers.put(key, log)
        return log

    def stage_node(kind: StageKind) -> RunnableLambda:
        def context(
            payload: dict[str, Any], config: RunnableConfig
        ) -> tuple[StageContext, GraphState]:
            """The stage's context, and the graph its events will follow."""
            stage_id = NodeId(payload["stage"])
            seen = frontier_log(stage_id, payload["frontier"], payload["tag"], config)
            spec = wire.spec_for(stage_id, seen.state.node(stage_id).kind)
            per_stage = getattr(clock, "for_stage", None)
            stage_clock = (
                per_stage(payload["frontier"], payload.get("position", 0)) if per_stage else clock
            )
            thread_id = config["configurable"]["thread_id"]
            memory = None
            if spec.scratch is not None:
                memory = scratch.bind(stage_id, scope=spec.scratch, thread_id=thread_id)
            session = None
            follows = seen.state
            if spec.rewrite is not None:
                length, tag = payload.get("graph") or (payload["frontier"], payload["tag"])
                graph = frontier_log(stage_id, length, tag, config).state
                follows = graph
                policy = spec.rewrite

                def session(record: Any) -> RewriteSession:
                    return RewriteSession(
                        proposer=stage_id,
                        state=graph,
                        policy=policy,
                        vocabulary=vocabulary,
                        granted=graph.budget or wire.budget.as_dict(),
                        attempt=graph.node(stage_id).attempts + 1,
                        clock=stage_clock,
                        record=record,
                    )

            ctx = bind_context(
                seen,
                stage_id,
                thread_id=thread_id,
                run_input=payload.get("input"),
                clock=stage_clock,
                strategy=spec.memory,
                presets=wire.presets,
                extras=services,
                scratch=memory,
                rewrites=session,
            )
            return ctx, follows

        def run(payload: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            ctx, follows = context(payload, config)
            events = execute_stage(kind.fn, ctx, payload["frontier"], state=follows)
            return {"substrate": [event_to_dict(e) for e in events]}

        async def arun(payload: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            ctx, follows = context(payload, config)
            events = await aexecute_stage(kind.fn, ctx, payload["frontier"], state=follows)
            return {"substrate": [event_to_dict(e) for e in events]}

        return RunnableLambda(run, afunc=arun, name=kind.name)

    graph = StateGraph(RunState)
    graph.add_node(SCHEDULER, scheduler)
    for kind in wire.kinds.values():
        graph.add_node(kind.name, stage_node(kind))
        graph.add_edge(kind.name, SCHEDULER)
    graph.add_edge(START, SCHEDULER)
    graph.add_conditional_edges(SCHEDULER, route, [*wire.kinds, END])
    return graph
