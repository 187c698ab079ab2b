"""Stages inside an existing LangGraph ``StateGraph``, without a wire.

Add a substrate key to your state and wrap the nodes you want recorded::

    class State(TypedDict, total=False):
        question: str
        answer: str
        substrate: Annotated[SubstrateLog, append_events]

    def research(state: State, ctx: StageContext) -> dict:
        ...  # ctx.inputs, ctx.memory (bound to the substrate as this node started)
        return {"answer": ...}

    graph.add_node("research", stage_node(research, kind="analyst", after=["plan"]))

Compile with a :class:`~cortex_agents.persistence.CortexSaver` so the
substrate is stored as rows — ``CortexSaver.wrap(saver)`` around any saver
LangGraph ships; under a plain saver the node fails at once with
:class:`~cortex_agents.errors.UnsupportedCheckpointer`, which says so. Each
call of the node schedules its stage (the graph node's name by default; ``name#2``, ``name#3`` when a loop runs it
again; ``name@0``, ``name@1``, ... for the tasks of a ``Send`` fan-out to it),
links it to the ``after`` stages, binds the memory snapshot, runs your
function and records its output — by default the JSON form of the update it
returns (``None`` counts as ``{}``), without the substrate key. Two graph
nodes must not be given the same explicit ``name``.

What the stage journals while it runs — the tool calls of
:func:`~cortex_agents.stages.converse` (give the node a chat model with
``model=``), or events it records with ``ctx.record`` — is written between
its ``stage_started`` and its outcome, as a wire's stages are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig

from cortex_agents.errors import InvalidArgument, InvalidEvent
from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory._strategy import Classic, MemoryStrategy
from cortex_agents.persistence._wrap import require_substrate_saver
from cortex_agents.runtime._clock import Clock, utc_clock
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._stage import bind_context, describe_error, to_json_output
from cortex_agents.substrate._events import (
    EdgeAdded,
    Event,
    NodeScheduled,
    StageCompleted,
    StageFailed,
    StageStarted,
    event_to_dict,
)
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState

__all__ = ["stage_node"]

StageNodeFunction = Callable[[Any, StageContext], dict[str, Any]]


def _base_id(name: str | None, fallback: str, config: RunnableConfig) -> str:
    """The stage id before repeats are numbered: unique among the tasks of one step."""
    metadata = config.get("metadata") or {}
    base = name or metadata.get("langgraph_node") or fallback
    path: Sequence[Any] = metadata.get("langgraph_path") or ()
    if len(path) > 1 and path[0] == "__pregel_push" and isinstance(path[1], int):
        base = f"{base}@{path[1]}"  # a Send: several tasks of this node run in one step
    return str(base)


def _stage_id(log: SubstrateLog, base: str) -> NodeId:
    nodes = log.state.nodes
    if base not in nodes:
        return NodeId(base)
    n = 2
    while f"{base}#{n}" in nodes:
        n += 1
    return NodeId(f"{base}#{n}")


def stage_node(
    fn: StageNodeFunction,
    *,
    kind: str,
    name: str | None = None,
    after: Sequence[str] | Callable[[Any], Sequence[str]] = (),
    memory: MemoryStrategy | None = None,
    presets: PresetRegistry = BUILTIN_PRESETS,
    output: str | Callable[[dict[str, Any]], Any] | None = None,
    on_error: Literal["raise", "record"] = "raise",
    clock: Clock = utc_clock,
    channel: str = "substrate",
    model: Any = None,
) -> Callable[..., Any]:
    """Wrap ``fn(state, ctx) -> update`` as a LangGraph node that records a stage.

    Args:
        fn: Your node body; it also receives the stage context. Sync or async.
        kind: The stage kind recorded.
        name: The stage id (default: the graph node's name, else the function's).
        after: Stage ids this stage consumes (edges are recorded from each;
            they must already be in the substrate), or a function of the state.
        memory: The memory strategy of the stage's handle.
        presets: The registry its presets resolve in.
        output: The update key to record as the stage output, or a function of
            the update; default: the whole update without the substrate key.
        on_error: ``raise`` (LangGraph's own semantics: the node fails and its
            writes are dropped) or ``record`` (a ``stage_failed`` event is
            written and the node returns without your update).
        clock: The source of recorded times.
        channel: The state key of the substrate.
        model: The chat model the stage's ``converse`` calls use (a LangChain
            ``BaseChatModel``); without one they read ``OPENAI_API_KEY`` /
            ``OPENAI_BASE_URL`` from the environment.
    """
    if on_error not in ("raise", "record"):
        raise InvalidArgument("on_error", "must be 'raise' or 'record'", on_error)
    fallback = getattr(fn, "__name__", kind)
    strategy = memory if memory is not None else Classic()
    # the keys stages.llm reads: its chat model, and how to give it one
    extras: dict[str, Any] = {"model_advice": "pass stage_node(..., model=...)"}
    if model is not None:
        extras["chat_model"] = model

    recorder = _StageRecorder(
        kind=kind,
        name=name,
        fallback=fallback,
        after=after,
        strategy=strategy,
        presets=presets,
        output=output,
        on_error=on_error,
        clock=clock,
        channel=channel,
        extras=extras,
    )
    return _node_function(fn, recorder)


@dataclass(frozen=True, slots=True)
class _StageRecorder:
    """One ``stage_node``'s settings and the steps each call of its node takes."""

    kind: str
    name: str | None
    fallback: str
    after: Sequence[str] | Callable[[Any], Sequence[str]]
    strategy: MemoryStrategy
    presets: PresetRegistry
    output: str | Callable[[dict[str, Any]], Any] | None
    on_error: Literal["raise", "record"]
    clock: Clock
    channel: str
    extras: dict[str, Any]

    def prepare(
        self, state: Any, config: RunnableConfig
    ) -> tuple[StageContext, list[Event], int, GraphState]:
        # a plain saver: one clear error, before any work
        require_substrate_saver(config, self.channel)
        log = state.get(self.channel) or SubstrateLog()
        stage = _stage_id(log, _base_id(self.name, self.fallback, config))
        upstream = list(self.after(state) if callable(self.after) else self.after)
        missing = [s for s in upstream if s not in log.state.nodes]
        if missing:
            known = sorted(log.state.nodes)
            raise InvalidArgument(
                "after",
                f"stages {missing} are not in the substrate yet (it holds {known[:20]}; a "
                "stage's id is its graph node's name unless stage_node(name=...) sets it)",
                upstream,
            )
        now = self.clock()
        scheduled: list[Event] = [NodeScheduled(node_id=stage, kind=self.kind, at=now)]
        scheduled += [EdgeAdded(source=NodeId(s), target=stage, at=now) for s in upstream]
        frontier = log.appended(scheduled)
        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        ctx = bind_context(
            frontier,
            stage,
            thread_id=thread_id,
            run_input=None,
            clock=self.clock,
            strategy=self.strategy,
            presets=self.presets,
            extras=dict(self.extras),
        )
        return ctx, scheduled, len(frontier), log.state

    def checked(self, events: list[Event], ctx: StageContext, before: GraphState) -> list[Event]:
        """``events`` if they can follow the substrate; else (``record``) the stage's failure."""
        # only journaled events can be invalid: the rest this module builds itself
        if not ctx.journal:
            return events
        try:
            fold(events, before)
        except InvalidEvent as exc:
            if self.on_error == "raise":
                raise
            error = f"InvalidEvent: the stage journaled an event that cannot be recorded ({exc})"
            started = [e for e in events if not isinstance(e, StageCompleted | StageFailed)]
            kept = [e for e in started if e not in ctx.journal]
            return [*kept, StageFailed(node_id=ctx.stage_id, at=self.clock(), error=error)]
        return events

    def finish(
        self, ctx: StageContext, scheduled: list[Event], seen: int, before: GraphState, update: Any
    ) -> dict[str, Any]:
        update = {} if update is None else update
        if not isinstance(update, dict):
            raise InvalidArgument(
                "update", "a stage node must return a dict (a state update)", type(update).__name__
            )
        output, channel = self.output, self.channel
        body = {k: v for k, v in update.items() if k != channel}
        recorded = body.get(output) if isinstance(output, str) else output(body) if output else body
        events = [
            *scheduled,
            StageStarted(node_id=ctx.stage_id, at=ctx.entry_time, frontier=seen),
            *ctx.journal,
            StageCompleted(
                node_id=ctx.stage_id,
                at=self.clock(),
                output=to_json_output(recorded, fallback=str),
            ),
        ]
        events = self.checked(events, ctx, before)
        # a failed stage's update is dropped: only its events are written
        if isinstance(events[-1], StageFailed):
            return {channel: [event_to_dict(e) for e in events]}
        return {**body, channel: [*update.get(channel, ()), *(event_to_dict(e) for e in events)]}

    def failed(
        self,
        ctx: StageContext,
        scheduled: list[Event],
        seen: int,
        before: GraphState,
        exc: Exception,
    ) -> dict[str, Any]:
        events = [
            *scheduled,
            StageStarted(node_id=ctx.stage_id, at=ctx.entry_time, frontier=seen),
            *ctx.journal,
            StageFailed(node_id=ctx.stage_id, at=self.clock(), error=describe_error(exc)),
        ]
        return {self.channel: [event_to_dict(e) for e in self.checked(events, ctx, before)]}


def _node_function(fn: StageNodeFunction, recorder: _StageRecorder) -> Callable[..., Any]:
    """The LangGraph node that runs ``fn`` as a stage: async if ``fn`` is."""
    if inspect.iscoroutinefunction(fn):

        async def anode(state: Any, config: RunnableConfig) -> dict[str, Any]:
            ctx, scheduled, seen, before = recorder.prepare(state, config)
            try:
                return recorder.finish(ctx, scheduled, seen, before, await fn(state, ctx))
            except Exception as exc:
                if recorder.on_error == "raise":
                    raise
                return recorder.failed(ctx, scheduled, seen, before, exc)

        anode.__name__ = recorder.name or recorder.fallback
        return anode

    def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        ctx, scheduled, seen, before = recorder.prepare(state, config)
        try:
            return recorder.finish(ctx, scheduled, seen, before, fn(state, ctx))
        except Exception as exc:
            if recorder.on_error == "raise":
                raise
            return recorder.failed(ctx, scheduled, seen, before, exc)

    node.__name__ = recorder.name or recorder.fallback
    return node
