"""Cortex tools in any LangGraph graph: ``ToolNode``, ``create_agent``, ``create_react_agent``.

Inside a cortex stage a tool gets the stage's context (memory handle,
scratch memory, identity) as ``ToolRuntime.context``, and the stage's tool
loop journals the call. A plain LangGraph agent has no stage: its
``ToolNode`` gives the tool the graph state, the store the graph was compiled
with and the call's id, nothing more. A :class:`GraphBoundTool` then does
what a stage would, from the state:

1. **The substrate.** It reads the substrate log from the state's
   ``substrate`` key (:class:`SubstrateState` declares it; the graph must be
   compiled with a :class:`~cortex_agents.persistence.CortexSaver`, e.g.
   ``memory_saver()``, which stores it as rows). No such key: the call
   answers ``memory_unavailable`` saying how to add it.
2. **The calling node.** The caller is the agent whose model turn wrote the
   call: its name is the calling ``AIMessage``'s ``name`` (``create_agent``'s
   ``name=``), else ``agent`` (:attr:`GraphBinding.agent` overrides both).
   Each call of a graph-bound tool is recorded as one stage of kind
   ``agent`` (:attr:`GraphBinding.kind`), numbered as ``stage_node`` numbers
   repeats — ``agent``, ``agent#2``, ``agent#3``, ... — the k-th such call of
   a turn taking the k-th free id, so parallel calls never collide. It is
   linked after :attr:`GraphBinding.after` (default: the latest settled work
   that is not the agent's: completed nodes of another kind with no completed
   successor of another kind, kept on the branch by
   :mod:`~cortex_agents.tools._latest_work` at the cost of the events since the
   previous call), so an agent's lookups hang off the work they consult and
   never crowd each other's memory.
3. **The snapshot.** The stage is scheduled in a frontier of the log as
   LangGraph handed it to the tool node, and the memory handle is bound on it
   exactly as a stage's is (:func:`~cortex_agents.runtime._stage.bind_context`):
   settled work only, the caller itself never a candidate.
4. **The journal.** The tool returns a ``Command`` whose update holds the
   ``ToolMessage`` and the call's events — ``node_scheduled``, its edges,
   ``stage_started``, ``tool_call_made`` and ``stage_completed`` (output: the
   tool and the arguments asked). Each call's events are complete on their
   own: LangGraph may apply one task's update alone (a conditional edge reads
   the state with only that task's writes), and parallel calls land in any
   order.

Scratch memory (the ``memory`` tool) lives in the graph's store, one memory
per agent name (every turn of an agent shares it), scope
:attr:`GraphBinding.scratch`.

Which tools a model may call is the ``ToolNode``'s catalog: a call naming a
tool the agent was not given is refused by LangGraph and runs nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Annotated, Any, Final, Literal

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools.base import ArgsSchema
from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import BaseStore
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from cortex_agents.errors import InvalidArgument, InvalidEvent, ToolUnavailable
from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.memory._strategy import Topological
from cortex_agents.persistence._wrap import require_substrate_saver
from cortex_agents.runtime._clock import Clock, utc_clock
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._stage import bind_context
from cortex_agents.scratch._atomic import guard_for
from cortex_agents.scratch._store import ScratchBackend, ScratchMemory
from cortex_agents.substrate._events import (
    EdgeAdded,
    Event,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    event_to_dict,
)
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState
from cortex_agents.tools._journal import call_summary, tool_call_event
from cortex_agents.tools._latest_work import latest_work
from cortex_agents.tools._results import (
    bounded_json,
    error_content,
    tool_error,
    validation_message,
)

__all__ = ["GraphBinding", "GraphBoundTool", "bind_to_graph"]

GRAPH_TOOL_NAMES: Final = frozenset({"cortex_memory_query", "memory"})
"""Names of the graph-bound tools, used when LangGraph does not list the node's tools."""
UNAVAILABLE: Final = "memory_unavailable"
_ID: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphBinding:
    """How a cortex tool binds itself in a graph that is not a cortex wire.

    Attributes:
        channel: The state key holding the substrate.
        messages_key: The state key holding the conversation.
        agent: The calling node's id before numbering; default: the calling
            ``AIMessage``'s ``name``, else ``"agent"``.
        kind: The stage kind a turn is recorded with.
        after: Stage ids a turn is linked after, or a function of the state
            returning them; default: the completed nodes without successors.
        preset: The preset a call that names none starts from.
        scratch: Scope of the ``memory`` tool's files: ``per_thread`` or ``global``.
        clock: The source of recorded times.

    Raises:
        InvalidArgument: a field breaks its rule.
    """

    channel: str = "substrate"
    messages_key: str = "messages"
    agent: str | None = None
    kind: str = "agent"
    after: Sequence[str] | Callable[[Any], Sequence[str]] | None = None
    preset: str = "default"
    scratch: Literal["per_thread", "global"] = "per_thread"
    clock: Clock = utc_clock

    def __post_init__(self) -> None:
        for name in ("channel", "messages_key", "kind", "preset"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _ID.fullmatch(value):
                raise InvalidArgument(name, "must match `[A-Za-z0-9_.-]{1,64}`", value)
        if self.agent is not None and (
            not isinstance(self.agent, str) or not _ID.fullmatch(self.agent)
        ):
            raise InvalidArgument("agent", "must match `[A-Za-z0-9_.-]{1,64}`", self.agent)
        if self.scratch not in ("per_thread", "global"):
            raise InvalidArgument("scratch", "must be 'per_thread' or 'global'", self.scratch)
        if isinstance(self.after, str):
            raise InvalidArgument(
                "after", "must be a list of stage ids, not one string", self.after
            )


@dataclass(frozen=True, slots=True)
class _KeptGuard:
    """A store's write guard without the store: what a graph tool keeps per store.

    The tool keeps these in a ``WeakKeyDictionary`` keyed by the store (as
    :mod:`cortex_agents.persistence._wrap` keeps one substrate store per
    ``InMemorySaver``), so an entry goes with its store. A value that held the
    store — a ``ScratchBackend``, or the guard itself — would keep its own key
    alive for the tool's life; this holds only the guard's other fields (the
    lock of a ``ProcessLockGuard``, the lock file of a ``SqliteFileGuard``).
    """

    kind: type[Any]
    rest: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, guard: Any) -> _KeptGuard:
        """What ``guard`` (one :func:`~cortex_agents.scratch._atomic.guard_for` built) holds besides its store."""
        rest = tuple((f.name, getattr(guard, f.name)) for f in fields(guard) if f.name != "store")
        return cls(type(guard), rest)

    def backend(self, store: BaseStore) -> ScratchBackend:
        """A backend on ``store`` whose guard shares this one's lock (guards are equal then)."""
        return ScratchBackend(store, self.kind(store=store, **dict(self.rest)))


def _read(state: Any, key: str) -> Any:
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def _calling_message(state: Any, key: str, call_id: str) -> AIMessage | None:
    messages = _read(state, key)
    if not isinstance(messages, Sequence):
        return None
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(
            c.get("id") == call_id for c in message.tool_calls
        ):
            return message
    return None


def _free_id(state: GraphState, base: str, skip: int) -> NodeId:
    """The ``skip``-th free id of ``base``, ``base#2``, ``base#3``, ... (the numbering of ``stage_node``)."""
    candidates = (base if n == 1 else f"{base}#{n}" for n in itertools.count(1))
    free = (c for c in candidates if c not in state.nodes)
    return NodeId(next(itertools.islice(free, skip, None)))


class _GraphArgs(BaseModel):
    """What LangGraph passes: the model's arguments, unchecked here, and the injected runtime.

    The wrapped tool checks the arguments, so that even a call with bad
    arguments returns a ``Command`` that records its stage and journals it.
    """

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    runtime: Annotated[ToolRuntime[Any, Any], Field(exclude=True)]


def _invalid_arguments(exc: ValidationError) -> str:
    return error_content("invalid_argument", validation_message(exc))


class GraphBoundTool(BaseTool):
    """A cortex tool that runs in a cortex stage and in any LangGraph graph.

    The model sees the wrapped tool's name, description and schema. In a
    stage (``ToolRuntime.context`` is the stage's context) it runs the
    wrapped tool as is; elsewhere it binds as the module docstring says and
    returns a ``Command``.
    """

    inner: BaseTool
    binding: GraphBinding
    presets: PresetRegistry = BUILTIN_PRESETS
    args_schema: ArgsSchema | None = _GraphArgs
    # Arguments LangGraph itself cannot take (e.g. a key made of lone surrogates) are a tool
    # error the model reads, like every other bad argument, never an exception out of the loop.
    handle_validation_error: Any = _invalid_arguments
    # one write guard per store while the store lives (None: a store scratch cannot guard)
    _guards: weakref.WeakKeyDictionary[BaseStore, _KeptGuard | None] = PrivateAttr(
        default_factory=weakref.WeakKeyDictionary
    )
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The wrapped tool's schema: what the model is shown."""
        return self.inner.tool_call_schema

    def _run(self, runtime: ToolRuntime[Any, Any], **arguments: Any) -> ToolMessage | Command[Any]:
        call_id = str(runtime.tool_call_id or "")
        context = runtime.context
        if _is_stage_context(context):
            return self._delegate(arguments, runtime, context, call_id)
        # a plain saver would fail later inside LangGraph (msgpack): fail now, naming the fix
        require_substrate_saver(runtime.config, self.binding.channel)
        try:
            context, frontier, opening = self._bind(runtime, call_id)
        except ToolUnavailable as exc:
            return tool_error(UNAVAILABLE, str(exc), tool_call_id=call_id, name=self.name)
        message = self._delegate(arguments, runtime, context, call_id)
        status = "error" if message.status == "error" else "success"
        made = tool_call_event(
            node_id=context.stage_id,
            tool=self.name,
            call_id=call_id,
            arguments=arguments,
            summary=call_summary(status, str(message.content), message.artifact),
            at=self.binding.clock(),
        )
        asked = bounded_json({"tool": self.name, "arguments": arguments})
        done = StageCompleted(node_id=context.stage_id, at=self.binding.clock(), output=asked)
        events = [*opening, *context.journal, made, done]
        _hold(frontier, events[len(opening) - 1 :])  # the frontier holds all but `started`
        return Command(
            update={
                self.binding.messages_key: [message],
                self.binding.channel: [event_to_dict(e) for e in events],
            }
        )

    def _delegate(
        self,
        arguments: dict[str, Any],
        runtime: ToolRuntime[Any, Any],
        context: object,
        call_id: str,
    ) -> ToolMessage:
        # `context` is handed on untouched: the wrapped tool checks the part it reads
        inner_runtime: ToolRuntime[Any, Any] = ToolRuntime(
            state={},
            context=context,
            config=runtime.config,
            stream_writer=runtime.stream_writer,
            tool_call_id=call_id,
            store=runtime.store,
        )
        result = self.inner.invoke(
            {
                "type": "tool_call",
                "name": self.inner.name,
                "id": call_id,
                "args": {**arguments, "runtime": inner_runtime},
            }
        )
        if isinstance(result, ToolMessage):
            return result
        return ToolMessage(str(result), tool_call_id=call_id, name=self.name)

    def _scratch(self, store: Any, agent: str, thread_id: str) -> ScratchMemory | None:
        if store is None:
            return None
        with self._lock:  # one write guard per store, shared by every call
            if store in self._guards:
                kept = self._guards[store]
            else:
                try:
                    kept = _KeptGuard.of(guard_for(store))
                except InvalidArgument:
                    kept = None
                self._guards[store] = kept
        if kept is None:
            return None
        backend = kept.backend(store)
        per_thread = self.binding.scratch == "per_thread"
        return backend.bind(
            agent, scope=self.binding.scratch, thread_id=thread_id if per_thread else None
        )

    def _bind(
        self, runtime: ToolRuntime[Any, Any], call_id: str
    ) -> tuple[StageContext, SubstrateLog, list[Event]]:
        """The calling stage's context, the log its memory is bound on, and the events that
        open it (scheduled, edges, started)."""
        binding = self.binding
        state = runtime.state
        log = _read(state, binding.channel)
        if not isinstance(log, SubstrateLog):
            raise ToolUnavailable(
                f"the graph state has no `{binding.channel}` substrate: give the graph a state "
                f"key `{binding.channel}: Annotated[SubstrateLog, append_events]` (e.g. a state "
                "schema that inherits `SubstrateState`) and compile it with a CortexSaver "
                "(`memory_saver()`, `open_saver(...)`)"
            )
        graph = log.state
        message = _calling_message(state, binding.messages_key, call_id)
        name = getattr(message, "name", None)
        agent = binding.agent or (
            name if isinstance(name, str) and _ID.fullmatch(name) else "agent"
        )
        node_id = _free_id(graph, agent, self._slot(runtime, message, call_id))
        configured = binding.after(state) if callable(binding.after) else binding.after
        after = list(configured if configured is not None else latest_work(log, binding.kind))
        missing = [s for s in after if s not in graph.nodes]
        if missing:
            raise InvalidArgument(
                "after",
                f"stages {missing} are not in the substrate (a call links after them)",
                after,
            )
        now = binding.clock()
        opening: list[Event] = [NodeScheduled(node_id=node_id, kind=binding.kind, at=now)]
        opening += [EdgeAdded(source=NodeId(s), target=node_id, at=now) for s in after]
        frontier = log.appended(opening)
        configurable = (runtime.config or {}).get("configurable") or {}
        thread_id = str(configurable.get("thread_id", ""))
        context = bind_context(
            frontier,
            node_id,
            thread_id=thread_id,
            run_input=None,
            clock=binding.clock,
            strategy=Topological(preset=binding.preset),
            presets=self.presets,
            scratch=self._scratch(runtime.store, agent, thread_id),
        )
        # `frontier`: the log prefix the memory saw, the caller's own scheduling included; exact
        # for a turn's first graph-bound call, whose events LangGraph applies first.
        started = StageStarted(node_id=node_id, at=context.entry_time, frontier=len(frontier))
        return context, frontier, [*opening, started]

    def _slot(self, runtime: ToolRuntime[Any, Any], message: AIMessage | None, call_id: str) -> int:
        """How many graph-bound calls precede this one in its turn (each takes its own id)."""
        if message is None:
            return 0
        tools = getattr(runtime, "tools", None)
        if tools:
            bound = {t.name for t in tools if isinstance(t, GraphBoundTool)} | {self.name}
        else:
            bound = set(GRAPH_TOOL_NAMES) | {self.name}
        ids = [c.get("id") for c in message.tool_calls if c.get("name") in bound]
        return ids.index(call_id) if call_id in ids else 0


def _hold(frontier: SubstrateLog, rest: list[Event]) -> None:
    """Append the call's remaining events to the log its memory was bound on.

    The frontier extends the graph's log on the same branch (it added the
    call's scheduling), so when LangGraph's reducer appends the call's events
    to the graph's log it finds them already held and adopts them: the branch,
    and the memory index it keeps, go on growing in place instead of being
    copied — the next call binds in O(its new events). Events that cannot be
    appended here are left to the reducer, which refuses them as before.
    """
    with contextlib.suppress(InvalidEvent, InvalidArgument):
        frontier.appended(rest)


def _is_stage_context(context: object) -> bool:
    """A cortex stage's context (or a hand-built one): it carries the memory or scratch itself."""
    if context is None:
        return False
    if isinstance(context, Mapping):
        return "scratch" in context or "memory" in context
    return hasattr(context, "memory") or hasattr(context, "scratch")


def bind_to_graph(
    tool: BaseTool,
    binding: GraphBinding | None = None,
    *,
    presets: PresetRegistry = BUILTIN_PRESETS,
) -> GraphBoundTool:
    """``tool`` (one that reads a stage context from its runtime) made usable in any graph.

    Args:
        tool: A tool that reads ``runtime.context.memory`` or ``.scratch``.
        binding: How to find the substrate and name the caller (default: :class:`GraphBinding()`).
        presets: The registry a bound memory handle resolves presets in.
    """
    return GraphBoundTool(
        name=tool.name,
        description=tool.description,
        inner=tool,
        binding=binding if binding is not None else GraphBinding(),
        presets=presets,
    )
