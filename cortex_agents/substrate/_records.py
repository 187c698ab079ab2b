"""The records of the Pulse substrate: nodes, edges, observations, rewrite facts.

All records are frozen values. JSON payloads (a rewrite's ``proposal``, a
node's ``config``) are held by reference and must be treated as read-only:
the substrate never mutates them and neither should callers. A node's
``output`` is held as its compact JSON (:mod:`~cortex_agents.substrate._compact`)
and decoded on each read: a read returns a new, equal value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, NewType, get_args

from cortex_agents.errors import RejectionCode
from cortex_agents.substrate._compact import hold, release, released_copy

__all__ = [
    "NODE_STATUSES",
    "REJECTION_CODES",
    "SETTLED",
    "Decision",
    "EdgeRecord",
    "NodeId",
    "NodeRecord",
    "NodeStatus",
    "Observation",
    "RejectionCode",
    "RewriteFact",
]

NodeId = NewType("NodeId", str)
"""A node's id: unique within one run (thread)."""

NodeStatus = Literal["pending", "running", "completed", "failed", "retired"]
"""Lifecycle of a node. Only ``completed`` is settled; ``retired`` is a pending
node an admitted ``expand_node(mode="replace")`` took out of the graph."""

NODE_STATUSES: Final[tuple[str, ...]] = get_args(NodeStatus)

SETTLED: Final = "completed"
"""The one status whose nodes are memory candidates."""

Decision = Literal["admitted", "rejected"]

# RejectionCode is defined beside the Rejection error that carries it (errors.py, the
# bottom layer); this module re-exports it, where the facts that record it live.
REJECTION_CODES: Final[tuple[str, ...]] = get_args(RejectionCode)


_NOT_GIVEN: Final = object()


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class NodeRecord:
    """A node of the materialized graph.

    Attributes:
        id: Unique id within the run.
        kind: The registered stage kind that runs it (``"planner"``, ...).
        status: Where it is in its lifecycle.
        captured_at: When the node entered the substrate.
        completed_at: When it settled; ``None`` until then.
        held_output: Its output as held (:func:`~cortex_agents.substrate._compact.hold`):
            read :attr:`output` instead; this is what holders of the same output
            (the memory index) share.
        tags: Free labels, kept in the order given.
        error: The failure message of a ``failed`` node.
        attempts: How many times the stage started (node bodies run at least once).
        config: The stage configuration the wire gave it.
    """

    id: NodeId
    kind: str
    status: NodeStatus = "pending"
    captured_at: datetime
    completed_at: datetime | None = None
    held_output: Any = field(default=None, repr=False)
    tags: tuple[str, ...] = ()
    error: str | None = None
    attempts: int = 0
    config: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        *,
        id: NodeId,
        kind: str,
        status: NodeStatus = "pending",
        captured_at: datetime,
        completed_at: datetime | None = None,
        output: Any = _NOT_GIVEN,
        tags: tuple[str, ...] = (),
        error: str | None = None,
        attempts: int = 0,
        config: Mapping[str, Any] | None = None,
        held_output: Any = None,
    ) -> None:
        """A record holding ``output`` compactly (``None`` when not given).

        ``held_output``: another record's held form, taken as it is when no
        ``output`` is given (what ``dataclasses.replace`` passes on).
        """
        setter = object.__setattr__
        setter(self, "id", id)
        setter(self, "kind", kind)
        setter(self, "status", status)
        setter(self, "captured_at", captured_at)
        setter(self, "completed_at", completed_at)
        setter(self, "held_output", held_output if output is _NOT_GIVEN else hold(output))
        setter(self, "tags", tags)
        setter(self, "error", error)
        setter(self, "attempts", attempts)
        setter(self, "config", {} if config is None else config)

    @property
    def output(self) -> Any:
        """Its JSON output once completed, else ``None`` (decoded now: a new value when it
        was held as JSON; treat it as read-only all the same)."""
        return release(self.held_output)

    def output_copy(self) -> Any:
        """The output as a value nobody else holds (decoded, or deep-copied when held as itself)."""
        return released_copy(self.held_output)

    @property
    def settled(self) -> bool:
        """Whether the node has completed (the only settled status)."""
        return self.status == SETTLED

    @property
    def observed_at(self) -> datetime:
        """The time memory ages the node from: ``completed_at``, else ``captured_at``."""
        return self.completed_at if self.completed_at is not None else self.captured_at

    def __repr__(self) -> str:
        return (
            f"NodeRecord(id={self.id!r}, kind={self.kind!r}, status={self.status!r}, "
            f"captured_at={self.captured_at!r}, completed_at={self.completed_at!r}, "
            f"output={self.output!r}, tags={self.tags!r}, error={self.error!r}, "
            f"attempts={self.attempts!r}, config={self.config!r})"
        )


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    """A directed dependency: ``target`` consumes the output of ``source``."""

    source: NodeId
    target: NodeId


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What a settled node contributes to memory: its output at a time.

    Attributes:
        node_id: The settled node.
        kind: Its stage kind.
        output: The JSON output it settled with.
        completed_at: When it settled.
        tags: Its labels.
    """

    node_id: NodeId
    kind: str
    output: Any
    completed_at: datetime
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteFact:
    """The durable record of one rewrite proposal and the runtime's decision.

    Attributes:
        rewrite_id: Monotone id of an admitted rewrite; ``None`` when rejected.
        proposer: The node that proposed it.
        proposal: The raw proposal as submitted.
        decision: ``admitted`` or ``rejected``.
        code: The rejection code, ``None`` when admitted.
        reason: Why, in words naming the proposer and the check; ``None`` when admitted.
        check: The failing check (``budget.nodes``, ``policy.anchor``, ...); ``None`` when admitted.
        cost: Static cost per budget dimension.
        budget_before: Remaining budget per dimension before the decision.
        budget_after: Remaining budget per dimension after it.
        diff: The structural change applied (empty when rejected).
        key: The idempotency key, ``<proposer>#<attempt>:<call id>`` (a replayed
            call with the same key gets the recorded decision, never a second admission).
    """

    rewrite_id: int | None
    proposer: NodeId
    proposal: Mapping[str, Any]
    decision: Decision
    code: RejectionCode | None = None
    reason: str | None = None
    cost: Mapping[str, int] = field(default_factory=dict)
    budget_before: Mapping[str, int] = field(default_factory=dict)
    budget_after: Mapping[str, int] = field(default_factory=dict)
    diff: Mapping[str, Any] = field(default_factory=dict)
    check: str | None = None
    key: str | None = None
