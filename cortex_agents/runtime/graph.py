"""A wire compiled to a LangGraph ``StateGraph``: a scheduler node plus one node per stage kind.

::

    START -> scheduler -(Send per ready stage)-> <kind nodes> -> scheduler -> ... -> END

The scheduler folds the substrate, puts the wire's stages into it on the
first pass, finds the ready stages and sends each to its kind's node with
the frontier's length; all ready stages run in parallel as tasks of one
superstep, and their events are merged into the substrate when it ends. A
stage's memory snapshot is the substrate as of that frontier: siblings
settling in the same superstep are never in it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from cortex_agents.errors import StorageError
from cortex_agents.persistence.saver import CortexSaver
from cortex_agents.runtime.clock import Clock
from cortex_agents.runtime.context import StageContext
from cortex_agents.runtime.scheduler import next_frontier, wire_events
from cortex_agents.runtime.stage import aexecute_stage, bind_context, execute_stage
from cortex_agents.runtime.wire import StageKind, Wire
from cortex_agents.substrate.events import event_to_dict
from cortex_agents.substrate.log import SubstrateLog, append_events
from cortex_agents.substrate.records import NodeId

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
        frontier: The stages the last pass found ready.
    """

    substrate: Annotated[SubstrateLog, append_events]
    input: Any
    scanned: int | None
    retry: bool
    frontier: list[str]


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

    def scheduler(state: RunState) -> dict[str, Any]:
        log = state.get("substrate") or SubstrateLog()
        scanned = state.get("scanned")
        events = wire_events(wire, log.state, clock()) if scanned is None else []
        now = log.appended(events)
        frontier = next_frontier(now, since=scanned, retry_failed=state.get("retry", False))
        ready = [] if frontier.failed and wire.on_failure == "stop" else list(frontier.ready)
        return {
            "substrate": [event_to_dict(e) for e in events],
            "scanned": len(now),
            "retry": False,
            "frontier": ready,
        }

    def route(state: RunState, config: RunnableConfig) -> list[Send] | str:
        ready = state.get("frontier") or []
        if not ready:
            return END
        log = state["substrate"]
        key = (config["configurable"]["thread_id"], len(log), frontier_tag(log))
        frontiers.put(key, log)
        nodes = log.state.nodes
        payload = {"frontier": len(log), "tag": key[2], "input": state.get("input")}
        return [
            Send(nodes[NodeId(stage)].kind, {"stage": stage, "position": i, **payload})
            for i, stage in enumerate(ready)
        ]

    def frontier_log(payload: dict[str, Any], config: RunnableConfig) -> SubstrateLog:
        thread_id = config["configurable"]["thread_id"]
        key = (thread_id, payload["frontier"], payload["tag"])
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
                raise StorageError(
                    "integrity", f"cannot rebuild the frontier of stage {payload['stage']!r}"
                )
            log = stored.prefix(key[1])
            frontiers.put(key, log)
        return log

    def stage_node(kind: StageKind) -> RunnableLambda:
        def context(payload: dict[str, Any], config: RunnableConfig) -> StageContext:
            stage_id = NodeId(payload["stage"])
            spec = next((s for s in wire.stages if s.id == stage_id), None)
            per_stage = getattr(clock, "for_stage", None)
            stage_clock = (
                per_stage(payload["frontier"], payload.get("position", 0)) if per_stage else clock
            )
            thread_id = config["configurable"]["thread_id"]
            memory = None
            if spec is not None and spec.scratch is not None:
                memory = scratch.bind(stage_id, scope=spec.scratch, thread_id=thread_id)
            return bind_context(
                frontier_log(payload, config),
                stage_id,
                thread_id=thread_id,
                run_input=payload.get("input"),
                clock=stage_clock,
                strategy=spec.memory if spec is not None else None,
                presets=wire.presets,
                extras=services,
                scratch=memory,
            )

        def run(payload: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            events = execute_stage(kind.fn, context(payload, config), payload["frontier"])
            return {"substrate": [event_to_dict(e) for e in events]}

        async def arun(payload: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            events = await aexecute_stage(kind.fn, context(payload, config), payload["frontier"])
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
