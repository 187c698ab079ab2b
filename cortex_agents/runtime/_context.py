"""What a stage function receives: its stage context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cortex_agents.errors import RewriteUnavailable
from cortex_agents.memory._handle import MemoryHandle
from cortex_agents.memory._match import Match
from cortex_agents.memory._strategy import MemoryStrategy
from cortex_agents.runtime._clock import Clock
from cortex_agents.runtime._rewrites import RewriteSession
from cortex_agents.substrate._events import Event
from cortex_agents.substrate._records import NodeId, RewriteFact

__all__ = ["StageContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageContext:
    """A stage's view of its run, bound once at stage entry.

    The context is also what tools receive (as ``ToolRuntime.context``): a
    tool reads the stage's memory handle from here, never from arguments a
    model writes.

    Attributes:
        stage_id: The stage's node id.
        kind: Its stage kind.
        thread_id: The run (LangGraph thread).
        config: The stage's configuration from the wire.
        inputs: Outputs of its direct predecessors, by node id, in edge order
            (its Markov boundary).
        memory: The memory handle over the snapshot bound at entry: settled
            observations as of the frontier's start, never a sibling's.
        entry_time: When the stage started (the snapshot's reference time).
        run_input: The run's input.
        strategy: Its declared memory strategy.
        clock: The runtime's clock.
        extras: Services the runtime was given (e.g. ``chat_model``), shared by all stages.
        scratch: The stage's scratch memory, when the wire gives it one.
        rewrites: Its rewrite session, when its wire declaration makes it
            rewrite-capable (see :meth:`propose_rewrite`).
        journal: Events the stage records while it runs (its tool calls, its
            rewrite decisions); the wrapper writes them between
            ``stage_started`` and the outcome.
    """

    stage_id: NodeId
    kind: str
    thread_id: str
    config: Mapping[str, Any]
    inputs: Mapping[NodeId, Any]
    memory: MemoryHandle
    entry_time: datetime
    run_input: Any
    strategy: MemoryStrategy
    clock: Clock
    extras: Mapping[str, Any] = field(default_factory=dict)
    scratch: Any = None
    rewrites: RewriteSession | None = None
    journal: list[Event] = field(default_factory=list)

    def record(self, event: Event) -> None:
        """Journal an event of this stage (written when the stage ends, in order)."""
        self.journal.append(event)

    def propose_rewrite(self, proposal: Any, *, call_id: str | None = None) -> RewriteFact:
        """Propose a rewrite of the not-yet-run graph; the runtime decides.

        Returns the decision (check ``.decision``); a rejection is a value,
        not an exception. Admitted nodes run in this thread after this stage.

        Raises:
            RewriteUnavailable: the stage is not rewrite-capable.
        """
        if self.rewrites is None:
            raise RewriteUnavailable(self.stage_id)
        return self.rewrites.propose(proposal, call_id=call_id)

    def recall(self) -> tuple[Match, ...]:
        """The stage's own memory query, as its declared strategy resolves it (classic: none)."""
        return self.memory.recall()
