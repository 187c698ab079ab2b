"""A wire compiled to a LangGraph ``StateGraph``: a scheduler node plus one node per stage kind.

::

    START -> scheduler -(Send per ready stage)-> <kind nodes> -> scheduler -> ... -> END
                                                   |    ^
                                                   +----+  a stage that ran alone schedules itself

A scheduling *pass* folds the substrate, puts the wire's stages into it on
the first pass, materializes admitted rewrites beyond the watermark, finds
the ready stages and sends each to its kind's node with the frontier: the
length and chain hash of the substrate it starts from. The ready stages run
in parallel as tasks of one superstep, and their events are merged into the
substrate when it ends. A stage's memory snapshot is the substrate as of that
frontier: siblings settling in the same superstep are never in it.

One superstep per stage where it is exact: when a pass sends a single stage
and queues nothing, that stage is alone in its superstep, so the substrate
the next superstep starts from is exactly its frontier plus its own events.
Such a *solo* stage runs the pass itself and sends its successors with
``Command(goto=[Send, ...])`` — no scheduler superstep and no extra
checkpoint. Stages that share a superstep return to the scheduler node,
which runs the pass once on their merged events. (The events a solo stage's
pass adds — materialized rewrites — stream as that stage's updates.) Under
the writer lock, a solo stage's pending writes are stored in the transaction
of the checkpoint that follows it: one commit per stage
(:mod:`cortex_agents.persistence._solo`).

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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Protocol, TypedDict

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command, Send

from cortex_agents.errors import InvalidWire, Problem, StorageError
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.rewrite._materialize import pending_materialization
from cortex_agents.runtime._clock import Clock
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._rewrites import RewriteSession
from cortex_agents.runtime._scheduler import is_ready, next_frontier, wire_events
from cortex_agents.runtime._stage import aexecute_stage, bind_context, execute_stage
from cortex_agents.runtime._wire import StageKind, Wire
from cortex_agents.substrate._events import Event, event_to_dict
from cortex_agents.substrate._log import SubstrateLog, append_events
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState

__all__ = ["RunState", "WireGraph", "build_graph", "frontier_tag"]

SCHEDULER = "scheduler"
# Where LangGraph keeps an invocation's ``durability`` in a task's config (absent: "async").
# It has no public name. Were it moved, an "exit" run would register solo tasks whose writes
# never come: harmless (registrations end with the lock) but for one that resumed a superstep,
# whose final checkpoint would wait EXPECT_TIMEOUT for them.
_DURABILITY = "__pregel_durability"
FRONTIER_CACHE = 64
"""Frontier logs kept per compiled wire (a stage whose frontier was evicted reads its checkpoint)."""


class SubstrateReader(Protocol):
    """What a wire graph reads a resumed stage's frontier from (a :class:`CortexSaver`, or the server's reader)."""

    def substrate(self, config: RunnableConfig) -> SubstrateLog | None:
        """The substrate of the checkpoint ``config`` names (``None``: no such checkpoint)."""
        ...


class RunState(TypedDict, total=False):
    """The LangGraph state of a run.

    Attributes:
        substrate: The run's event log (stored as rows by :class:`CortexSaver`).
        input: The run's input, given to every stage.
        scanned: The substrate length at the last pass (``None``: scan
            everything, as a new invocation does).
        retry: Whether the next full pass retries failed stages.
        frontier: The stages the scheduler node's last pass sends, each
            ``{"stage", "frontier", "tag", "position"}`` (the frontier its
            memory snapshot is bound to), plus ``"solo": True`` for a stage
            alone in its superstep (whose own pass sends its successors
            directly, by ``Command``, without writing this key).
        waiting: Ready rewrite-capable stages queued to run one at a time.
    """

    substrate: Annotated[SubstrateLog, append_events]
    input: Any
    scanned: int | None
    retry: bool
    frontier: list[dict[str, Any]]
    waiting: list[dict[str, Any]]


def frontier_tag(log: SubstrateLog) -> str:
    """A log's identity: the hex chain hash of its events (O(events not hashed yet))."""
    return log.digest.hex()


def _legacy_tag(log: SubstrateLog) -> str:
    """The tag checkpoints written before chain hashes carry (a digest of the last event)."""
    if not len(log):
        return "empty"
    last = repr(event_to_dict(log[-1])).encode()
    return hashlib.blake2b(last, digest_size=8).hexdigest()


def _tag_matches(log: SubstrateLog, tag: str) -> bool:
    return frontier_tag(log) == tag or (len(tag) != 32 and _legacy_tag(log) == tag)


class _Frontiers:
    """The logs stages start from, by ``(thread, length, tag)``; bounded, least recently used out."""

    def __init__(self, size: int = FRONTIER_CACHE) -> None:
        self._logs: OrderedDict[tuple[str, int, str], SubstrateLog] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def __len__(self) -> int:
        return len(self._logs)

    def put(self, key: tuple[str, int, str], log: SubstrateLog) -> None:
        with self._lock:
            self._logs[key] = log
            self._logs.move_to_end(key)
            while len(self._logs) > self._size:
                self._logs.popitem(last=False)

    def get(self, key: tuple[str, int, str]) -> SubstrateLog | None:
        with self._lock:
            log = self._logs.get(key)
            if log is not None:
                self._logs.move_to_end(key)
            return log


@dataclass(frozen=True, slots=True)
class Pass:
    """The outcome of one scheduling pass.

    Attributes:
        log: The substrate after the pass's own events.
        events: What the pass adds (the wire's stages, materialized rewrites).
        sends: Entries of the stages to run now.
        waiting: Ready rewrite-capable stages still queued.
    """

    log: SubstrateLog
    events: list[Event]
    sends: list[dict[str, Any]]
    waiting: list[dict[str, Any]]


class WireGraph:
    """A wire's LangGraph nodes: the scheduling pass, routing, and one node per stage kind.

    Args:
        wire: The workflow.
        saver: The checkpointer (frontiers of resumed tasks are read back from it).
        clock: Source of every timestamp the runtime records.
        services: Shared services every stage gets as ``ctx.extras``.
        scratch: The scratch backend, for stages the wire gives scratch memory.
    """

    def __init__(
        self,
        wire: Wire,
        saver: SubstrateReader,
        clock: Clock,
        services: Mapping[str, Any] | None = None,
        scratch: Any = None,
    ) -> None:
        self.wire = wire
        self.saver = saver
        self.clock = clock
        self.services = dict(services or {})
        self.scratch = scratch
        self.vocabulary = wire.vocabulary()
        self.frontiers = _Frontiers()

    def build(self) -> StateGraph[RunState, None, RunState, RunState]:
        """The uncompiled graph (compile it with ``checkpointer=saver``)."""
        graph = StateGraph(RunState)
        graph.add_node(SCHEDULER, self.scheduler)
        destinations = (SCHEDULER, *self.wire.kinds)
        for kind in self.wire.kinds.values():
            graph.add_node(kind.name, self.stage_node(kind), destinations=destinations)
        graph.add_edge(START, SCHEDULER)
        graph.add_conditional_edges(SCHEDULER, self.route, [*self.wire.kinds, END])
        return graph

    # -- the scheduling pass -------------------------------------------------------------
    def stamp(self, log: SubstrateLog) -> datetime:
        """The scheduler's time: the clock's, never before the substrate's newest event (O(1)).

        (A logical clock gives each stage its own time line, so its own reads may lag
        the stages'; what the scheduler records follows everything it depends on.)
        """
        now = self.clock()
        latest = log.latest
        return now if latest is None else max(now, latest)

    def capable(self, state: GraphState, stage: NodeId) -> bool:
        """Whether the stage may propose rewrites (such stages run one per superstep)."""
        return self.wire.spec_for(stage, state.nodes[stage].kind).rewrite is not None

    def plan(
        self,
        log: SubstrateLog,
        *,
        scanned: int | None,
        retry: bool,
        waiting: list[dict[str, Any]],
    ) -> Pass:
        """One pass over ``log``: O(new events since ``scanned``; everything when ``None``)."""
        events = wire_events(self.wire, log.state, self.stamp(log)) if scanned is None else []
        staged = log.appended(events)
        materialized = (  # admitted in the last superstep, or before a crash
            pending_materialization(staged.state, self.stamp(staged))
            if staged.state.unapplied_rewrites
            else []
        )
        now = staged.appended(materialized)
        events += materialized
        frontier = next_frontier(now, since=scanned, retry_failed=retry)
        current = {"frontier": len(now), "tag": frontier_tag(now)}
        graph = now.state
        waiting = [w for w in waiting if is_ready(graph, NodeId(w["stage"]), retry=retry)]
        queued = {w["stage"] for w in waiting}
        sends: list[dict[str, Any]] = []
        for position, stage in enumerate(frontier.ready):
            entry = {"stage": stage, "position": position, **current}
            if not self.capable(graph, stage):
                sends.append(entry)
            elif stage not in queued:
                waiting.append(entry)
                queued.add(stage)
        if frontier.failed and self.wire.on_failure == "stop":
            sends = []
        elif waiting:  # one rewrite-capable stage per superstep, in the order they became ready
            sends.append(waiting.pop(0))
        if len(sends) == 1 and not waiting and sends[0]["frontier"] == len(now):
            sends[0] = {**sends[0], "solo": True}  # alone in its superstep: it schedules itself
        return Pass(now, events, sends, waiting)

    def scheduler(self, state: RunState) -> dict[str, Any]:
        """The scheduler node: a pass over the merged substrate."""
        log = state.get("substrate") or SubstrateLog()
        result = self.plan(
            log,
            scanned=state.get("scanned"),
            retry=state.get("retry", False),
            waiting=list(state.get("waiting") or []),
        )
        return {
            "substrate": result.log.event_dicts(len(log)),  # result.events, as dicts
            "scanned": len(result.log),
            "retry": False,
            "frontier": result.sends,
            "waiting": result.waiting,
        }

    def route(self, state: RunState, config: RunnableConfig) -> list[Send] | str:
        """The scheduler's outgoing edge: one ``Send`` per stage of the pass, or the end."""
        sends = self.sends(
            state["substrate"],
            state.get("frontier") or [],
            config["configurable"]["thread_id"],
            state.get("input"),
        )
        return sends or END

    def sends(
        self, log: SubstrateLog, entries: list[dict[str, Any]], thread_id: str, run_input: Any
    ) -> list[Send]:
        """The ``Send`` of each entry; their frontier logs are remembered for the stages."""
        if not entries:
            return []
        length, tag = len(log), frontier_tag(log)
        graph = [length, tag]
        self.frontiers.put((thread_id, length, tag), log)
        nodes = log.state.nodes
        out = []
        for entry in entries:
            if entry["frontier"] != len(log):  # a deferred stage: its snapshot is a prefix
                prefix = log.prefix(entry["frontier"])
                if frontier_tag(prefix) == entry["tag"]:
                    self.frontiers.put((thread_id, entry["frontier"], entry["tag"]), prefix)
            stage = NodeId(entry["stage"])
            kind = nodes[stage].kind
            if kind not in self.wire.kinds:
                raise InvalidWire(
                    [
                        Problem(
                            f"thread {thread_id!r}",
                            f"holds stage {stage!r} of kind {kind!r}, which wire "
                            f"{self.wire.name!r} does not register: was the thread started "
                            "by another wire?",
                        )
                    ]
                )
            out.append(Send(kind, {**entry, "graph": graph, "input": run_input}))
        return out

    # -- stages --------------------------------------------------------------------------
    def frontier_log(
        self, stage: str, length: int, tag: str, config: RunnableConfig
    ) -> SubstrateLog:
        """The log a stage starts from: remembered, or read from the checkpoint its task started at.

        Raises:
            StorageError: the checkpoint holds no log with that length and chain hash.
        """
        thread_id = config["configurable"]["thread_id"]
        key = (thread_id, length, tag)
        log = self.frontiers.get(key)
        if log is None:  # a task resumed in another process: read the checkpoint it started from
            checkpoint_id = config["configurable"].get("checkpoint_map", {}).get("")
            stored = self.saver.substrate(
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
                or len(stored) < length
                or not _tag_matches(stored.prefix(length), tag)
            ):
                raise StorageError("integrity", f"cannot rebuild the frontier of stage {stage!r}")
            log = stored.prefix(length)
            self.frontiers.put(key, log)
        return log

    def context(
        self, payload: dict[str, Any], config: RunnableConfig
    ) -> tuple[StageContext, SubstrateLog, GraphState]:
        """The stage's context, the log it saw, and the graph its events will follow."""
        wire, clock = self.wire, self.clock
        stage_id = NodeId(payload["stage"])
        seen = self.frontier_log(stage_id, payload["frontier"], payload["tag"], config)
        spec = wire.spec_for(stage_id, seen.state.node(stage_id).kind)
        per_stage = getattr(clock, "for_stage", None)
        stage_clock = (
            per_stage(payload["frontier"], payload.get("position", 0)) if per_stage else clock
        )
        thread_id = config["configurable"]["thread_id"]
        memory = None
        if spec.scratch is not None:
            memory = self.scratch.bind(stage_id, scope=spec.scratch, thread_id=thread_id)
        session = None
        follows = seen.state
        if spec.rewrite is not None:
            length, tag = payload.get("graph") or (payload["frontier"], payload["tag"])
            graph = self.frontier_log(stage_id, length, tag, config).state
            follows = graph
            session = self._session(stage_id, graph, spec.rewrite, stage_clock)
        ctx = bind_context(
            seen,
            stage_id,
            thread_id=thread_id,
            run_input=payload.get("input"),
            clock=stage_clock,
            strategy=spec.memory,
            presets=wire.presets,
            extras=self.services,
            scratch=memory,
            rewrites=session,
        )
        return ctx, seen, follows

    def _session(self, stage_id: NodeId, graph: GraphState, policy: Any, clock: Clock) -> Any:
        """The factory of a rewrite-capable stage's session, given its journal."""
        vocabulary, budget = self.vocabulary, self.wire.budget

        def session(record: Any) -> RewriteSession:
            return RewriteSession(
                proposer=stage_id,
                state=graph,
                policy=policy,
                vocabulary=vocabulary,
                granted=graph.budget or budget.as_dict(),
                attempt=graph.node(stage_id).attempts + 1,
                clock=clock,
                record=record,
            )

        return session

    def finish(
        self,
        payload: dict[str, Any],
        config: RunnableConfig,
        seen: SubstrateLog,
        events: list[Event],
    ) -> Command[str]:
        """What a stage's task writes, and where the run goes next.

        A stage that shares its superstep goes back to the scheduler. A solo
        stage runs the pass on its frontier plus its own events — exactly the
        substrate the next superstep starts from — and sends what is ready.
        """
        if not payload.get("solo"):
            return Command(update={"substrate": [event_to_dict(e) for e in events]}, goto=SCHEDULER)
        now = seen.appended(events)
        # the dicts made checking the events: the channel's reducer adopts these very
        # objects, and the chain hash and the stored rows reuse them
        writes = now.event_dicts(len(seen))
        result = self.plan(now, scanned=len(seen), retry=False, waiting=[])
        thread_id = config["configurable"]["thread_id"]
        # Only what changes: each channel written is a pending-write row and a checkpoint
        # blob to serialise and store, per stage. ``frontier`` is read only by ``route``,
        # right after the scheduler node writes it; ``waiting`` was empty when this stage
        # was sent alone (``plan`` marks a stage solo only then), so empty it stays as is.
        update: dict[str, Any] = {
            "substrate": writes + [event_to_dict(e) for e in result.events],
            "scanned": len(result.log),
        }
        if result.waiting:
            update["waiting"] = result.waiting
        goto = self.sends(result.log, result.sends, thread_id, payload.get("input"))
        return Command(update=update, goto=goto)

    def expect_solo(self, payload: dict[str, Any], config: RunnableConfig) -> None:
        """Tell the saver a solo stage's task ends: it may store the task's writes with the
        next checkpoint, in one transaction (see :mod:`cortex_agents.persistence._solo`).

        Not under ``durability="exit"``: LangGraph then stores no writes of finished
        supersteps at all.
        """
        expect = getattr(self.saver, "expect_solo_writes", None)
        if not payload.get("solo") or expect is None:
            return
        configurable = config["configurable"]
        if configurable.get(_DURABILITY) == "exit":
            return
        info = get_runtime().execution_info
        if info is not None:
            expect(configurable["thread_id"], info.checkpoint_id, info.task_id)

    def stage_node(self, kind: StageKind) -> _StageNode:
        """The LangGraph node that runs stages of one kind (sync and async).

        Its input is a ``Send``'s payload (``stage``, ``frontier``, ``tag``, ...), not
        the run's state, which a LangGraph node's type cannot say: hence ``Any``.
        """

        # A writer whose lock went away stops here, before the body: WriterFenced fails
        # the task, so the invocation ends within this superstep (see persistence/fencing.py).
        check = getattr(self.saver, "check_writer", None)
        acheck = getattr(self.saver, "acheck_writer", None)

        def run(payload: dict[str, Any], config: RunnableConfig) -> Command[str]:
            if check is not None:
                check(config["configurable"]["thread_id"])
            ctx, seen, follows = self.context(payload, config)
            events = execute_stage(kind.fn, ctx, payload["frontier"], state=follows)
            command = self.finish(payload, config, seen, events)
            self.expect_solo(payload, config)
            return command

        async def arun(payload: dict[str, Any], config: RunnableConfig) -> Command[str]:
            if acheck is not None:
                await acheck(config["configurable"]["thread_id"])
            ctx, seen, follows = self.context(payload, config)
            events = await aexecute_stage(kind.fn, ctx, payload["frontier"], state=follows)
            command = self.finish(payload, config, seen, events)
            self.expect_solo(payload, config)
            return command

        return _StageNode(kind.name, run, arun)


class _StageNode(Runnable[Any, Command[str]]):
    """A stage kind's node: calls ``run`` (or ``arun``) with the task's payload and config.

    Not a ``RunnableLambda``: that one inspects its function's signature and
    opens a callback run of its own on every call, nested inside the run
    LangGraph already opens for the task (whose context, callbacks included,
    the stage body and any model it calls run in). Per stage that was about a
    sixth of the runtime's CPU time, which bounds how many workers share a
    machine (``tools/bench_scale.py``). Plain function nodes get the same
    treatment from LangGraph itself (no tracing of their own).
    """

    def __init__(
        self,
        name: str,
        run: Callable[[dict[str, Any], RunnableConfig], Command[str]],
        arun: Callable[[dict[str, Any], RunnableConfig], Awaitable[Command[str]]],
    ) -> None:
        self.name = name
        self._run = run
        self._arun = arun

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Command[str]:
        """Run the stage the payload names."""
        return self._run(input, ensure_config(config))

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Command[str]:
        """Run the stage the payload names, inside the event loop."""
        return await self._arun(input, ensure_config(config))


def build_graph(
    wire: Wire,
    saver: CortexSaver,
    clock: Clock,
    services: Mapping[str, Any] | None = None,
    scratch: Any = None,
) -> StateGraph[RunState, None, RunState, RunState]:
    """The uncompiled graph of a wire (compile it with ``checkpointer=saver``).

    ``services`` (e.g. a ``chat_model``) reach every stage as ``ctx.extras``;
    ``scratch`` (a :class:`~cortex_agents.scratch.ScratchBackend`) gives the
    stages the wire declares scratch memory for their bound memory.
    """
    return WireGraph(wire, saver, clock, services, scratch).build()
