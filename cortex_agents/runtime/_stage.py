"""The stage wrapper: run a stage function and record what happened as events.

A stage records two events, written together when its task ends:
``stage_started`` (its entry time, and how much of the substrate its memory
saw) and then ``stage_completed`` with its JSON output, or ``stage_failed``
with the error. A failure is recorded, not raised, so the substrate keeps it;
the scheduler then stops the run or goes on, as the wire says. If the process
dies mid-stage nothing is recorded and the stage runs again on resume: stage
bodies run at least once.

A stage gets copies of its inputs, config and run input, and its output is
recorded as a fresh JSON value: nothing a stage mutates reaches the
substrate, a sibling or the caller. Events a stage journals (``ctx.record``)
are checked against the graph before they are written; one that cannot be
recorded fails the stage (its journal dropped) instead of the run.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import os
import traceback
from collections.abc import Callable
from typing import Any, Final

from pydantic_core import PydanticSerializationError, to_jsonable_python

from cortex_agents.errors import InvalidArgument, InvalidEvent, InvalidOutput
from cortex_agents.memory._handle import MemoryHandle
from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._strategy import Classic, MemoryStrategy
from cortex_agents.runtime._clock import Clock
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._rewrites import RewriteSession
from cortex_agents.runtime._wire import StageFunction
from cortex_agents.substrate._events import (
    Event,
    StageCompleted,
    StageFailed,
    StageStarted,
    check_event,
    storable_json,
)
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState

MAX_ERROR_CHARS: Final = 4096
"""How much of a stage's error message is recorded."""

__all__ = ["MAX_ERROR_CHARS", "bind_context", "describe_error", "execute_stage", "to_json_output"]


def _holds_set(value: Any) -> bool:
    """Whether a set or frozenset sits in ``value``'s dicts, lists and tuples (iterative)."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, set | frozenset):
            return True
        if isinstance(item, dict | list | tuple) and id(item) not in seen:
            seen.add(id(item))  # (a cyclic value is left to pydantic, which refuses it)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False


def _order_key(item: Any, fallback: Callable[[Any], Any] | None) -> tuple[int, Any]:
    """Numbers by value, then strings by code point, then anything else by its JSON text."""
    if isinstance(item, int | float):
        return (0, item)
    if isinstance(item, str):
        return (1, item)
    try:
        text = json.dumps(to_jsonable_python(item, fallback=fallback), sort_keys=True)
        return (2, text)
    except (PydanticSerializationError, TypeError, ValueError, RecursionError):
        return (3, "")  # not JSON: the conversion that follows refuses it


def _sets_sorted(value: Any, fallback: Callable[[Any], Any] | None) -> Any:
    """``value`` with each set in its dicts, lists and tuples as a sorted list (see
    :func:`_order_key`): a set iterates in an order that differs between processes (string
    hashes are salted per process), and the output's JSON must not."""
    if isinstance(value, set | frozenset):
        items = [_sets_sorted(item, fallback) for item in value]
        return sorted(items, key=lambda item: _order_key(item, fallback))
    if isinstance(value, dict):
        return {key: _sets_sorted(item, fallback) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_sets_sorted(item, fallback) for item in value]
    return value


def to_json_output(output: Any, *, fallback: Callable[[Any], Any] | None = None) -> Any:
    """The JSON value of a stage's output (pydantic models and dataclasses are dumped).

    The value is new: later changes to ``output`` do not reach it. Every
    backend must be able to store it, so integers must fit in 64 bits,
    floats must be finite, strings must be valid Unicode (no lone surrogates)
    and it nests at most :data:`~cortex_agents.substrate._events.MAX_DEPTH` levels.
    A set (or frozenset) in the output's dicts, lists and tuples becomes a
    sorted list — numbers, then strings in code-point order, then other values
    by their JSON text — so the same output gives the same JSON in every
    process; a set inside a pydantic model or a dataclass keeps pydantic's
    iteration order (declare such a field as a list to fix its order).

    Args:
        output: What the stage returned.
        fallback: Converts a value pydantic cannot (default: none, such a value is refused).

    Raises:
        InvalidOutput: (a ``TypeError``) the output cannot be represented as storable JSON.
    """
    try:
        if _holds_set(output):
            output = _sets_sorted(output, fallback)
        value = to_jsonable_python(output, fallback=fallback)
    except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
        raise InvalidOutput(str(exc)) from None
    try:
        return storable_json(value, "output")
    except InvalidArgument as exc:
        raise InvalidOutput(str(exc)) from None


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
    # a prefix view of the index the frontier's branch keeps: O(events since the last bind)
    snapshot = MemorySnapshot.from_log(frontier, entry_time, run_id=thread_id)
    journal: list[Event] = []
    return StageContext(
        stage_id=stage_id,
        kind=node.kind,
        thread_id=thread_id,
        config=copy.deepcopy(node.config),  # the stage's own copies: its changes stay its own
        inputs={  # decoded from the records' JSON: new values, the stage's own
            pred: state.nodes[pred].output_copy() for pred in state.predecessors(stage_id)
        },
        memory=MemoryHandle(snapshot, stage_id, presets=presets, strategy=strategy),
        entry_time=entry_time,
        run_input=copy.deepcopy(run_input),
        strategy=strategy,
        clock=clock,
        extras=extras or {},
        scratch=scratch,
        rewrites=rewrites(journal.append) if rewrites is not None else None,
        journal=journal,
    )


def describe_error(error: BaseException) -> str:
    """``Type: message (at file.py:line in function)``: where the stage's code raised it."""
    try:
        message = str(error)
    except Exception:  # a broken __str__ must not hide the failure itself
        message = f"<unprintable {type(error).__name__}>"
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + "..."
    text = f"{type(error).__name__}: {message}"
    frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ else []
    if frames:
        where = frames[-1]
        text += f" (at {os.path.basename(where.filename)}:{where.lineno} in {where.name})"
    # storable whatever the message held (a lone surrogate cannot be written as UTF-8)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _record(
    ctx: StageContext, frontier: int, outcome: Any, error: BaseException | None
) -> list[Event]:
    """Started, the stage's journal, then completed with the output or failed with the error."""
    started = StageStarted(node_id=ctx.stage_id, at=ctx.entry_time, frontier=frontier)
    reason = None if error is None else describe_error(error)
    if error is None:
        try:
            value = to_json_output(outcome)
        except InvalidOutput as exc:
            reason = f"TypeError: {exc}"  # the output's fault, not a line of the stage's code
    if reason is not None:
        failed = StageFailed(node_id=ctx.stage_id, at=ctx.clock(), error=reason)
        return [started, *ctx.journal, failed]
    return [
        started,
        *ctx.journal,
        StageCompleted(node_id=ctx.stage_id, at=ctx.clock(), output=value),
    ]


def _checked(events: list[Event], ctx: StageContext, state: GraphState | None) -> list[Event]:
    """``events`` if they can be stored and follow ``state``; else the stage's failure,
    its journal dropped."""
    if not ctx.journal:
        return events
    try:
        for event in ctx.journal:
            check_event(event)
        if state is not None:
            fold(events, state)
    except (InvalidEvent, InvalidArgument) as exc:
        error = (
            f"{type(exc).__name__}: the stage journaled an event that cannot be recorded ({exc})"
        )
        return [events[0], StageFailed(node_id=ctx.stage_id, at=ctx.clock(), error=error)]
    return events


def execute_stage(
    fn: StageFunction, ctx: StageContext, frontier: int, *, state: GraphState | None = None
) -> list[Event]:
    """Run ``fn(ctx)`` (awaiting it if async) and return the events that record it.

    ``state``: the graph the stage's events will follow, to check its journal against.
    """
    try:
        output = fn(ctx)
        if inspect.isawaitable(output):
            output = asyncio.run(_await(output))
    except (Exception, asyncio.CancelledError) as exc:  # a failure is recorded, not raised
        return _checked(_record(ctx, frontier, None, exc), ctx, state)
    return _checked(_record(ctx, frontier, output, None), ctx, state)


async def aexecute_stage(
    fn: StageFunction, ctx: StageContext, frontier: int, *, state: GraphState | None = None
) -> list[Event]:
    """:func:`execute_stage` inside an event loop (sync functions run in a worker thread)."""
    try:
        if inspect.iscoroutinefunction(fn):
            output = await fn(ctx)
        else:
            output = await asyncio.to_thread(fn, ctx)
            if inspect.isawaitable(output):
                output = await output
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this task is being cancelled (a timeout, a shutdown): not the stage's failure
        return _checked(_record(ctx, frontier, None, exc), ctx, state)
    except Exception as exc:
        return _checked(_record(ctx, frontier, None, exc), ctx, state)
    return _checked(_record(ctx, frontier, output, None), ctx, state)


async def _await(awaitable: Any) -> Any:
    return await awaitable
