"""The stage wrapper: run a stage function and record what happened as events.

A stage records two events, written together when its task ends:
``stage_started`` (its entry time, and how much of the substrate its memory
saw) and then ``stage_completed`` with its JSON output, or ``stage_failed``
with the error. A failure is recorded, not raised, so the substrate keeps it;
the scheduler then stops the run or goes on, as the wire says. If the process
dies mid-stage nothing is recorded and the stage runs again on resume: stage
bodies run at least once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from cortex_agents.memory.handle import MemoryHandle
from cortex_agents.memory.presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory.snapshot import MemorySnapshot
from cortex_agents.memory.strategy import Classic, MemoryStrategy
from cortex_agents.runtime.clock import Clock
from cortex_agents.runtime.context import StageContext
from cortex_agents.runtime.rewrites import RewriteSession
from cortex_agents.runtime.wire import StageFunction
from cortex_agents.substrate.events import Event, StageCompleted, StageFailed, StageStarted
from cortex_agents.substrate.log import SubstrateLog
from cortex_agents.substrate.records import NodeId

__all__ = ["bind_context", "execute_stage", "to_json_output"]


def to_json_output(output: Any) -> Any:
    """The JSON value of a stage's output (pydantic models and dataclasses are dumped).

    Raises:
        TypeError: the output cannot be represented as JSON.
    """
    try:
        value = to_jsonable_python(output)
        json.dumps(value, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise TypeError(f"stage output is not JSON-serialisable: {exc}") from None
    return value


def bind_context(
    frontier: SubstrateLog,
    stage_id: NodeId,
    *,
    thread_id: str,
    run_input: Any,
    clock: Clock,
    strategy: MemoryStrategy | None = None,
    presets: PresetRegistry = BUILTIN_PRESETS,
    extras: dict[str, Any] | None = None,
    scratch: Any = None,
    rewrites: Callable[[Callable[[Event], None]], RewriteSession] | None = None,
) -> StageContext:
    """The stage's context at entry: inputs and memory from the frontier, read now, once.

    ``rewrites``, for a rewrite-capable stage, builds its rewrite session
    given the function that journals a decision.
    """
    state = frontier.state
    node = state.node(stage_id)
    strategy = strategy if strategy is not None else Classic()
    entry_time = clock()
    snapshot = MemorySnapshot.from_state(state, entry_time, run_id=thread_id)
    journal: list[Event] = []
    return StageContext(
        stage_id=stage_id,
        kind=node.kind,
        thread_id=thread_id,
        config=node.config,
        inputs={pred: state.nodes[pred].output for pred in state.predecessors(stage_id)},
        memory=MemoryHandle(snapshot, stage_id, presets=presets, strategy=strategy),
        entry_time=entry_time,
        run_input=run_input,
        strategy=strategy,
        clock=clock,
        extras=extras or {},
        scratch=scratch,
        rewrites=rewrites(journal.append) if rewrites is not None else None,
        journal=journal,
    )


def _record(ctx: StageContext, frontier: int, outcome: Any, error: Exception | None) -> list[Event]:
    """Started, the stage's journal, then completed with the output or failed with the error."""
    started = StageStarted(node_id=ctx.stage_id, at=ctx.entry_time, frontier=frontier)
    if error is None:
        try:
            value = to_json_output(outcome)
        except TypeError as exc:
            error = exc
    if error is not None:
        failed = StageFailed(
            node_id=ctx.stage_id, at=ctx.clock(), error=f"{type(error).__name__}: {error}"
        )
        return [started, *ctx.journal, failed]
    return [
        started,
        *ctx.journal,
        StageCompleted(node_id=ctx.stage_id, at=ctx.clock(), output=value),
    ]


def execute_stage(fn: StageFunction, ctx: StageContext, frontier: int) -> list[Event]:
    """Run ``fn(ctx)`` (awaiting it if async) and return the events that record it."""
    try:
        output = fn(ctx)
        if inspect.isawaitable(output):
            output = asyncio.run(_await(output))
    except Exception as exc:  # the model of the run: a failure is recorded, not raised
        return _record(ctx, frontier, None, exc)
    return _record(ctx, frontier, output, None)


async def aexecute_stage(fn: StageFunction, ctx: StageContext, frontier: int) -> list[Event]:
    """:func:`execute_stage` inside an event loop (sync functions run in a worker thread)."""
    try:
        if inspect.iscoroutinefunction(fn):
            output = await fn(ctx)
        else:
            output = await asyncio.to_thread(fn, ctx)
            if inspect.isawaitable(output):
                output = await output
    except Exception as exc:
        return _record(ctx, frontier, None, exc)
    return _record(ctx, frontier, output, None)


async def _await(awaitable: Any) -> Any:
    return await awaitable
