"""The records of the Pulse substrate: nodes, edges, observations, rewrite facts.

All records are frozen values. JSON payloads (a node's ``output`` or a
rewrite's ``proposal``) are held by reference and must be treated as
read-only: the substrate never mutates them and neither should callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, NewType, get_args

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

RejectionCode = Literal[
    "invalid_rewrite",
    "vocabulary_violation",
    "cycle_introduced",
    "rewrite_budget_exceeded",
    "policy_rejected",
]
REJECTION_CODES: Final[tuple[str, ...]] = get_args(RejectionCode)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRecord:
    """A node of the materialized graph.

    Attributes:
        id: Unique id within the run.
        kind: The registered stage kind that runs it (``"planner"``, ...).
        status: Where it is in its lifecycle.
        captured_at: When the node entered the substrate.
        completed_at: When it settled; ``None`` until then.
        output: Its JSON output once completed, else ``None``.
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
    output: Any = None
    tags: tuple[str, ...] = ()
    error: str | None = None
    attempts: int = 0
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def settled(self) -> bool:
        """Whether the node has completed (the only settled status)."""
        return self.status == SETTLED

    @property
    def observed_at(self) -> datetime:
        """The time memory ages the node from: ``completed_at``, else ``captured_at``."""
        return self.completed_at if self.completed_at is not None else self.captured_at


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
