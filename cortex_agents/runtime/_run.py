"""Run a wire on a thread: start it, resume it, stream its progress.

:class:`Runtime` compiles a wire once; :meth:`Runtime.run` advances one
thread until nothing is runnable. It holds the thread's writer lock for the
whole invocation (one writer per thread); if the lock goes away under it, the
run stops with :class:`~cortex_agents.errors.WriterFenced` before its next
stage body, and none of its commits lands after another writer took the
thread (:mod:`cortex_agents.persistence._fencing`). On a thread whose last
superstep was interrupted it first finishes that superstep (its stages run
again: bodies run at least once); on a thread that had ended it retries
failed stages and schedules anything new.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StreamMode

from cortex_agents.errors import InvalidArgument, RunFailed
from cortex_agents.memory._embedding import EmbeddingCache
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.runtime._clock import Clock, utc_clock
from cortex_agents.runtime._graph import RunState, WireGraph
from cortex_agents.runtime._wire import Wire
from cortex_agents.substrate._events import Event, event_from_dict
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._state import GraphState

__all__ = ["Progress", "RunResult", "Runtime"]

Durability = Literal["sync", "async", "exit"]
_MODES: list[StreamMode] = ["updates", "values"]


@dataclass(slots=True)
class _Final:
    """The state values an invocation's stream ended with (``None`` until one is seen)."""

    values: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Progress:
    """One recorded event, as the run streams it.

    Attributes:
        node: The LangGraph node that wrote it (``scheduler`` or a stage kind).
        event: The substrate event.
    """

    node: str
    event: Event


@dataclass(frozen=True, slots=True)
class RunResult:
    """Where a run stopped.

    Attributes:
        thread_id: The run.
        log: Its substrate.
        failures: ``(stage id, error)`` of every failed stage.
    """

    thread_id: str
    log: SubstrateLog
    failures: tuple[tuple[str, str], ...]

    @property
    def state(self) -> GraphState:
        """The materialized graph."""
        return self.log.state

    @property
    def outputs(self) -> dict[str, Any]:
        """Outputs of the completed stages, by id."""
        return {n.id: n.output for n in self.state.nodes.values() if n.settled}

    @property
    def complete(self) -> bool:
        """Whether every stage completed (nodes a rewrite retired do not count)."""
        return all(n.settled or n.status == "retired" for n in self.state.nodes.values())


class Runtime:
    """A wire, compiled for a saver.

    Args:
        wire: The workflow.
        saver: The checkpointer: a :class:`CortexSaver`, or one of LangGraph's
            savers, which is wrapped (``CortexSaver.wrap``; the wrapper is
            :attr:`saver`).
        clock: Source of every timestamp the runtime records.
        lock_timeout: Seconds to wait for the thread's writer lock (``None``:
            forever; 0: fail at once with :class:`ThreadBusy`).
        durability: LangGraph's checkpoint durability for each invocation.
        services: Shared services every stage gets as ``ctx.extras`` (e.g. ``chat_model``).
        scratch: The scratch backend (:func:`~cortex_agents.scratch.open_scratch`);
            required when the wire gives any stage scratch memory.
        embedding_cache: Where embedding scorers keep node-body vectors, e.g.
            ``StoreEmbeddingCache(store)`` over the run's LangGraph store, so a
            resumed run (or another thread over the same bodies) embeds nothing
            again. ``None``: a bounded in-process cache.

    Raises:
        InvalidArgument: the wire needs scratch memory and none was given, or
            ``saver`` is not a saver :meth:`CortexSaver.wrap` knows.
    """

    def __init__(
        self,
        wire: Wire,
        saver: CortexSaver | BaseCheckpointSaver[Any],
        *,
        clock: Clock = utc_clock,
        lock_timeout: float | None = 0.0,
        durability: Durability = "async",
        services: Mapping[str, Any] | None = None,
        scratch: Any = None,
        embedding_cache: EmbeddingCache | None = None,
    ) -> None:
        if embedding_cache is not None:
            wire = wire.with_embedding_cache(embedding_cache)
        if wire.uses_scratch and scratch is None:
            raise InvalidArgument(
                "scratch",
                "is required: the wire gives stages scratch memory (open one with open_scratch(db))",
                None,
            )
        self.wire = wire
        self.saver = CortexSaver.wrap(saver)
        self.clock = clock
        self.lock_timeout = lock_timeout
        self.durability = durability
        self.services = dict(services or {})
        self.wiring = WireGraph(wire, self.saver, clock, self.services, scratch)
        self.graph: CompiledStateGraph[RunState, None, RunState, RunState] = (
            self.wiring.build().compile(checkpointer=self.saver)
        )

    def config(self, thread_id: str) -> RunnableConfig:
        """The LangGraph config of a thread of this runtime."""
        limit = 4 * (len(self.wire.stages) + self.wire.budget.nodes) + 16
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": limit}

    def stream(self, thread_id: str, input: Any = None) -> Iterator[Progress]:
        """Advance the thread, yielding each event as its superstep ends.

        ``input`` is given to every stage; on a thread that exists already it
        replaces the previous input, or is kept when ``None``. Closing the
        iterator early ends the invocation: what LangGraph is still storing is
        stored, fenced, before the thread's lock is released.
        """
        return self._advance(thread_id, input, _Final(), decode=True)

    def _advance(
        self, thread_id: str, input: Any, final: _Final, *, decode: bool
    ) -> Iterator[Progress]:
        """:meth:`stream`'s work; ``final`` keeps the state the invocation ended with.

        ``decode=False`` yields nothing (no event is decoded: :meth:`run`
        without ``on_progress``).
        """
        config = self.config(thread_id)
        with self.saver.lock(thread_id, timeout=self.lock_timeout):
            pending = self.graph.get_state(config).next
            if pending:  # an interrupted superstep: finish it first
                chunks = self.graph.stream(
                    None, config, stream_mode=_MODES, durability=self.durability
                )
                yield from self._consume(chunks, final, decode)
                self.saver.flush_solo_writes(thread_id)
            start: RunState = {"scanned": None, "retry": True}
            if input is not None:
                start["input"] = input
            chunks = self.graph.stream(
                start, config, stream_mode=_MODES, durability=self.durability
            )
            yield from self._consume(chunks, final, decode)
            # a solo stage's writes go with the checkpoint after it (persistence/solo.py):
            # whatever no checkpoint took is stored now (and at the latest when the lock goes)
            self.saver.flush_solo_writes(thread_id)

    @classmethod
    def _consume(cls, chunks: Iterator[Any], final: _Final, decode: bool) -> Iterator[Progress]:
        """:meth:`_progress`, then LangGraph's stream closed, even if our consumer stops early.

        Closing it waits for the stores LangGraph runs in the background (pending
        writes, checkpoints): the caller does this inside the lock, so they are
        fenced and the lock's flush sees them. Left to the garbage collector, the
        stream would close after the lock was released, its stores landing unfenced.
        """
        try:
            yield from cls._progress(chunks, final, decode)
        finally:
            close = getattr(chunks, "close", None)  # typed an Iterator; it is a generator
            if close is not None:
                close()

    @staticmethod
    def _progress(chunks: Iterator[Any], final: _Final, decode: bool) -> Iterator[Progress]:
        """The events of each ``updates`` chunk (``(mode, chunk)`` pairs); keeps the last values."""
        for mode, chunk in chunks:
            if mode == "values":
                final.values = chunk
            elif decode:
                for node, update in chunk.items():
                    items = (update or {}).get("substrate", ()) if isinstance(update, dict) else ()
                    for item in items:
                        yield Progress(node, event_from_dict(item))

    def run(
        self,
        thread_id: str,
        input: Any = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> RunResult:
        """Advance the thread until nothing is runnable.

        Raises:
            RunFailed: a stage failed and the wire stops on failure (the
                failures are recorded in the substrate; running the thread
                again retries them).
            ThreadBusy: another writer holds the thread.
            WriterFenced: the lock went away during the run (what it committed
                stays; resuming the thread finishes it).
        """
        final = _Final()
        for progress in self._advance(thread_id, input, final, decode=on_progress is not None):
            if on_progress is not None:
                on_progress(progress)
        # The state the invocation's last superstep left, which LangGraph checkpointed
        # before its stream ended. Reading it back instead would fetch and fold the
        # whole substrate again, once per run: a worker running many short runs paid
        # about a tenth of its CPU time for that (tools/bench_scale.py).
        log = None if final.values is None else final.values.get("substrate")
        result = self.result(thread_id) if log is None else self._result(thread_id, log)
        if result.failures and self.wire.on_failure == "stop":
            raise RunFailed(thread_id, result.failures)
        return result

    def result(self, thread_id: str) -> RunResult:
        """The thread's current state as a :class:`RunResult`."""
        log = self.graph.get_state(self.config(thread_id)).values.get("substrate")
        return self._result(thread_id, log or SubstrateLog())

    @staticmethod
    def _result(thread_id: str, log: SubstrateLog) -> RunResult:
        failures = tuple(
            (n.id, n.error or "") for n in log.state.nodes.values() if n.status == "failed"
        )
        return RunResult(thread_id, log, failures)
