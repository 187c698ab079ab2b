"""The bounded tool loop of an LLM stage, with its catalog enforced.

The catalog decides both what the model sees and what may execute: tools are
bound from the catalog, and a call naming anything else (a model can emit any
name) gets an error result and runs nothing — unlike LangGraph's ``ToolNode``,
which runs any tool it holds whatever the model was offered. Each tool gets a
``ToolRuntime`` whose context is the stage's context, so identity and memory
come from the runtime, never from arguments the model writes; model-written
values for injected parameters are dropped.

Every call is journaled as a ``tool_call_made`` event (arguments and a
compact result), so the substrate records what each stage asked and got.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolRuntime

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._events import ToolCallMade
from cortex_agents.tools._journal import JournalContext, call_summary, tool_call_event
from cortex_agents.tools._results import MAX_DEPTH, deeper_than, safe_repr, tool_error

__all__ = ["LoopModel", "ToolCall", "ToolLoopResult", "ToolPolicy", "run_tool_loop"]

ToolChoice = Literal["auto", "required", "none"] | str


class _Invocable(Protocol):
    def invoke(self, input: Sequence[BaseMessage], /) -> BaseMessage: ...


class LoopModel(Protocol):
    """What the loop calls on its model: a LangChain ``BaseChatModel`` is one.

    ``bind_tools(tools, tool_choice=...)`` for the tool turns, ``invoke`` for
    the answer turn (a wrapper such as
    :class:`~cortex_agents.stages._structured.AnsweringModel` may add to either).
    """

    def bind_tools(self, tools: Sequence[BaseTool], /, *, tool_choice: Any = ...) -> _Invocable:
        """The model with ``tools`` bound."""
        ...

    def invoke(self, input: Sequence[BaseMessage], /) -> BaseMessage:
        """The model's reply to ``input``."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """How a stage's model uses its tools.

    Attributes:
        max_rounds: Model turns that may call tools; one more turn, without
            tools, produces the answer.
        first: ``tool_choice`` of the first turn: ``auto``, ``required``, or a
            tool's name to force it (small local models ignore tools otherwise).
        then: ``tool_choice`` of later tool turns.
        empty_content: Text put in an assistant message that has tool calls
            but no text; some servers reject ``content: null`` (``None``: leave it).
        max_calls_per_turn: Calls run per model turn; further calls of that
            turn get a ``too_many_calls`` error and run nothing, so one turn
            cannot multiply the stage's work or its transcript.
        force: How a turn whose choice names a tool forces it. ``named``
            offers the whole catalog with OpenAI's
            ``{"type": "function", "function": {"name": ...}}``; ``required``
            offers that one tool alone with ``tool_choice="required"``, which
            means the same to the model and is what servers that ignore a
            named choice honour (llama.cpp's ``llama-server``).
        resend_invalid: How a call whose arguments were not a JSON object goes
            back to the model in the transcript of later turns. ``verbatim``
            sends the text it wrote; ``wrapped`` sends
            ``{"unparsed_arguments": "<that text>"}``, because a server that
            renders history with its chat template parses every call's
            arguments and refuses the whole request (HTTP 500) otherwise
            (``llama-server``). The journal keeps the text either way.

    Raises:
        InvalidArgument: ``max_rounds`` is not an integer in [0, 16],
            ``max_calls_per_turn`` not one in [1, 64], or ``force`` neither
            ``named`` nor ``required``.
    """

    max_rounds: int = 2
    first: ToolChoice = "auto"
    then: ToolChoice = "auto"
    empty_content: str | None = None
    max_calls_per_turn: int = 8
    force: Literal["named", "required"] = "named"
    resend_invalid: Literal["verbatim", "wrapped"] = "verbatim"

    def __post_init__(self) -> None:
        if self.force not in ("named", "required"):
            raise InvalidArgument("force", "must be 'named' or 'required'", self.force)
        if self.resend_invalid not in ("verbatim", "wrapped"):
            raise InvalidArgument(
                "resend_invalid", "must be 'verbatim' or 'wrapped'", self.resend_invalid
            )
        for name, low, high in (("max_rounds", 0, 16), ("max_calls_per_turn", 1, 64)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidArgument(name, f"must be an integer from {low} to {high}", value)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made and what it got back."""

    name: str
    call_id: str
    arguments: dict[str, Any]
    status: Literal["success", "error"]
    content: str
    artifact: Any = None


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """The final answer and everything that led to it."""

    message: AIMessage
    messages: list[BaseMessage] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)


def _offer(
    choice: ToolChoice, catalog: dict[str, BaseTool], force: str
) -> tuple[list[BaseTool], Any]:
    """The tools a turn offers and the ``tool_choice`` it sends."""
    if choice in ("auto", "required", "none"):
        return list(catalog.values()), choice
    if choice not in catalog:
        raise InvalidArgument(
            "tool_choice",
            f"must be auto, required, none or a tool of the catalog {sorted(catalog)}",
            choice,
        )
    if force == "required":
        return [catalog[choice]], "required"
    return list(catalog.values()), {"type": "function", "function": {"name": choice}}


def _resent(answer: AIMessage, how: str) -> AIMessage:
    """The model's answer as later turns send it back (see ``ToolPolicy.resend_invalid``)."""
    if how == "verbatim" or not answer.invalid_tool_calls:
        return answer
    wrapped = [
        {**call, "args": json.dumps({"unparsed_arguments": call.get("args") or ""})}
        for call in answer.invalid_tool_calls
    ]
    return answer.model_copy(update={"invalid_tool_calls": wrapped})


def execute_call(
    call: Mapping[str, Any],
    catalog: dict[str, BaseTool],
    context: JournalContext | None,
    config: RunnableConfig | None = None,
) -> tuple[ToolMessage, ToolCall]:
    """Run one call from the model, or refuse it when its tool is not in the catalog."""
    name, call_id = call.get("name") or "", call.get("id") or ""
    args = dict(call.get("args") or {})
    tool = catalog.get(name)
    if tool is None:
        available = ", ".join(sorted(catalog)) or "none"
        return _refused(
            call,
            "tool_not_available",
            f"tool {name!r} is not available in this stage; available: {available}",
        )
    injected: frozenset[str] = getattr(tool, "_injected_args_keys", frozenset())
    clean = {k: v for k, v in args.items() if k not in injected and k != "runtime"}
    runtime: ToolRuntime[Any, Any] = ToolRuntime(
        state={},
        context=context,
        config=config or {},
        stream_writer=lambda _: None,
        tool_call_id=call_id,
        store=None,
    )
    result = tool.invoke(
        {
            "type": "tool_call",
            "name": name,
            "id": call_id,
            "args": {**clean, "runtime": runtime},
        }
    )
    message = (
        result
        if isinstance(result, ToolMessage)
        else ToolMessage(str(result), tool_call_id=call_id, name=name)
    )
    record = ToolCall(
        name=name,
        call_id=call_id,
        arguments=args,
        status="error" if message.status == "error" else "success",
        content=str(message.content),
        artifact=getattr(message, "artifact", None),
    )
    return message, record


def _refused(call: Any, code: str, reason: str) -> tuple[ToolMessage, ToolCall]:
    """An error answer to a call that did not run (no such tool, malformed, over the limit)."""
    name, call_id = call.get("name") or "", call.get("id") or ""
    raw = call.get("args")
    arguments = (
        raw
        if isinstance(raw, dict)
        else {"raw": raw[:2000] if isinstance(raw, str) else safe_repr(raw, 2000)}
    )
    message = tool_error(code, reason, tool_call_id=call_id, name=name)
    record = ToolCall(name, call_id, arguments, "error", str(message.content))
    return message, record


def run_tool_loop(
    model: LoopModel,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[BaseTool],
    context: JournalContext | None,
    policy: ToolPolicy | None = None,
    journal: Callable[[ToolCallMade], None] | None = None,
    prepare: Callable[[list[BaseMessage]], list[BaseMessage]] | None = None,
) -> ToolLoopResult:
    """Run the model with its catalog until it answers without calling a tool.

    With an empty catalog this is a single call without tools (a classic stage).

    Args:
        model: The chat model.
        messages: The prompt.
        tools: The catalog: what the model is offered and all that may run.
        context: What each tool gets as ``ToolRuntime.context`` (the stage's context).
        policy: Rounds, tool choice and per-turn call limit.
        journal: Receives one ``tool_call_made`` event per call, in order.
        prepare: Builds the messages of each model call from the transcript so
            far, just before the call (e.g. injects scratch memory as it is
            now, after the model's own writes). What it adds is sent, not kept
            in the transcript.
    """
    policy = policy or ToolPolicy()
    catalog = {t.name: t for t in tools}
    transcript = list(messages)
    calls: list[ToolCall] = []
    rounds = policy.max_rounds if catalog else 0
    for turn in range(rounds + 1):
        sent = prepare(list(transcript)) if prepare is not None else transcript
        answer, asked = _model_turn(model, sent, turn, rounds, policy, catalog)
        transcript.append(_resent(answer, policy.resend_invalid))
        if not asked:
            return ToolLoopResult(answer, transcript, calls)
        for index, call in enumerate(asked):
            # the last turn offers no tools: a call the model makes anyway runs nothing
            message, record = _run_call(
                call, index, policy, catalog if turn < rounds else {}, context
            )
            transcript.append(message)
            calls.append(record)
            if journal is not None and context is not None:
                journal(_journal_event(record, context))
    return ToolLoopResult(
        transcript[-1] if isinstance(transcript[-1], AIMessage) else answer, transcript, calls
    )


def _model_turn(
    model: LoopModel,
    sent: list[BaseMessage],
    turn: int,
    rounds: int,
    policy: ToolPolicy,
    catalog: dict[str, BaseTool],
) -> tuple[AIMessage, list[Any]]:
    """One model call, offered tools while rounds remain: its answer and the calls it asked for."""
    if turn < rounds:
        offered, choice = _offer(policy.first if turn == 0 else policy.then, catalog, policy.force)
        reply = model.bind_tools(offered, tool_choice=choice).invoke(sent)
    else:
        reply = model.invoke(sent)
    answer = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply.content))
    asked = [*answer.tool_calls, *answer.invalid_tool_calls]
    # In the order the model made them (LangChain splits valid from invalid calls).
    made = answer.additional_kwargs.get("tool_calls") or []
    order = {c.get("id"): i for i, c in enumerate(made) if isinstance(c, dict)}
    asked.sort(key=lambda c: order.get(c.get("id"), len(order)))
    if asked and not answer.content and policy.empty_content is not None:
        answer = answer.model_copy(update={"content": policy.empty_content})
    return answer, asked


def _run_call(
    call: Any,
    index: int,
    policy: ToolPolicy,
    catalog: dict[str, BaseTool],
    context: JournalContext | None,
) -> tuple[ToolMessage, ToolCall]:
    """Run the ``index``-th call of a turn, or refuse it (over the limit, too deep, unparsable)."""
    if index >= policy.max_calls_per_turn:
        return _refused(
            call,
            "too_many_calls",
            f"at most {policy.max_calls_per_turn} tool calls run per turn; "
            "this one did not run: call it again in the next turn",
        )
    if call.get("type") != "invalid_tool_call" and deeper_than(call.get("args")):
        # LangChain itself cannot print such arguments (RecursionError); no tool takes them
        return _refused(
            call,
            "invalid_argument",
            f"`arguments` nest deeper than {MAX_DEPTH} levels; nothing ran",
        )
    if call.get("type") == "invalid_tool_call":
        return _refused(
            call,
            "invalid_argument",
            f"the arguments are not a valid JSON object ({call.get('error') or 'unparsable'})"
            "; nothing ran",
        )
    return execute_call(call, catalog, context)


def _journal_event(record: ToolCall, context: JournalContext) -> ToolCallMade:
    """The ``tool_call_made`` event of one call, stamped by the stage's clock."""
    return tool_call_event(
        node_id=context.stage_id,
        tool=record.name,
        call_id=record.call_id,
        arguments=record.arguments,
        summary=call_summary(record.status, record.content, record.artifact),
        at=context.clock(),
    )
