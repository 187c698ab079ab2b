"""The append-only event model of the Pulse.

A run's substrate is a sequence of events; an event's position in that
sequence is its sequence number. Events are frozen values with a
JSON form (:func:`event_to_dict` / :func:`event_from_dict`) that persistence
stores row by row. Times come from the caller's clock: nothing here reads one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate.records import NodeId, RewriteFact
from cortex_agents.timestamps import format_timestamp, parse_timestamp

__all__ = [
    "EVENT_TYPES",
    "EdgeAdded",
    "EdgeRemoved",
    "Event",
    "NodeRetired",
    "NodeScheduled",
    "RewriteAdmitted",
    "RewriteApplied",
    "RewriteBudgetSet",
    "RewriteRejected",
    "StageCompleted",
    "StageFailed",
    "StageStarted",
    "ToolCallMade",
    "event_from_dict",
    "event_to_dict",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeScheduled:
    """A node enters the graph as ``pending`` (from the wire or an admitted rewrite)."""

    node_id: NodeId
    kind: str
    at: datetime
    config: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeAdded:
    """``target`` now depends on ``source``; both must already exist."""

    source: NodeId
    target: NodeId
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeRemoved:
    """An admitted rewrite reattached an edge away; its ``target`` must still be pending."""

    source: NodeId
    target: NodeId
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRetired:
    """An admitted ``expand_node(mode="replace")`` took a pending node out (edges removed first)."""

    node_id: NodeId
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class StageStarted:
    """A stage body begins (again, after a crash: bodies run at least once).

    Attributes:
        node_id: The stage.
        at: Its entry time: the reference time of its memory snapshot.
        frontier: How many substrate events its memory snapshot saw, when
            the runtime bound one (so the snapshot can be rebuilt exactly).
    """

    node_id: NodeId
    at: datetime
    frontier: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StageCompleted:
    """A stage settles with its JSON output: the node becomes an observation."""

    node_id: NodeId
    at: datetime
    output: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StageFailed:
    """A stage body raised; ``error`` is the legible message."""

    node_id: NodeId
    at: datetime
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteAdmitted:
    """The runtime admitted a rewrite proposal (its nodes and edges follow as events)."""

    fact: RewriteFact
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteRejected:
    """The runtime rejected a rewrite proposal; nothing else changes."""

    fact: RewriteFact
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteApplied:
    """An admitted rewrite's nodes and edges are in the graph: the watermark moves to ``rewrite_id``.

    The runtime writes it after the rewrite's own ``node_scheduled`` /
    ``edge_added`` / ``edge_removed`` / ``node_retired`` events, in the same
    commit.
    """

    rewrite_id: int
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteBudgetSet:
    """The run's rewrite budget, per dimension, fixed when the run starts (once per run)."""

    budget: Mapping[str, int]
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallMade:
    """A stage's model called a tool (provenance; it does not change the graph).

    Attributes:
        node_id: The calling stage.
        tool: The tool's name, as the model wrote it (refused calls included).
        call_id: The model's id for the call.
        arguments: The arguments as the model wrote them.
        at: When the call was answered.
        result: A compact JSON summary of the answer (status, and e.g. the ranked ids).
    """

    node_id: NodeId
    tool: str
    call_id: str
    arguments: Mapping[str, Any]
    at: datetime
    result: Any = None


Event = (
    NodeScheduled
    | EdgeAdded
    | EdgeRemoved
    | NodeRetired
    | StageStarted
    | StageCompleted
    | StageFailed
    | RewriteBudgetSet
    | RewriteAdmitted
    | RewriteRejected
    | RewriteApplied
    | ToolCallMade
)

EVENT_TYPES: Final[dict[str, type]] = {
    "node_scheduled": NodeScheduled,
    "edge_added": EdgeAdded,
    "stage_started": StageStarted,
    "stage_completed": StageCompleted,
    "stage_failed": StageFailed,
    "rewrite_admitted": RewriteAdmitted,
    "rewrite_rejected": RewriteRejected,
    "tool_call_made": ToolCallMade,
    "edge_removed": EdgeRemoved,
    "node_retired": NodeRetired,
    "rewrite_applied": RewriteApplied,
    "rewrite_budget_set": RewriteBudgetSet,
}
_OMITTED_WHEN_EMPTY: Final = frozenset({"config", "tags"})
_OMITTED_WHEN_NONE: Final = frozenset({"frontier", "result"})
_TYPE_NAMES: Final[dict[type, str]] = {cls: name for name, cls in EVENT_TYPES.items()}
_FACT_FIELDS: Final = (
    "rewrite_id",
    "proposer",
    "proposal",
    "decision",
    "code",
    "reason",
    "cost",
    "budget_before",
    "budget_after",
    "diff",
    "check",
    "key",
)
_FACT_OPTIONAL: Final = frozenset({"check", "key"})


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON form of an event: ``{"type": ..., <fields>}`` with ISO timestamps.

    Empty ``config`` and ``tags`` and a ``None`` ``frontier`` are left out
    (they are the defaults).
    """
    name = _TYPE_NAMES.get(type(event))
    if name is None:
        raise InvalidArgument("event", "must be one of the substrate event types", event)
    out: dict[str, Any] = {"type": name}
    for slot in type(event).__slots__:
        value = getattr(event, slot)
        if (slot in _OMITTED_WHEN_EMPTY and not value) or (
            slot in _OMITTED_WHEN_NONE and value is None
        ):
            continue  # defaults: keep stored events small
        if slot == "at":
            value = format_timestamp(value)
        elif slot == "fact":
            value = {
                f: _plain(getattr(value, f))
                for f in _FACT_FIELDS
                if f not in _FACT_OPTIONAL or getattr(value, f) is not None
            }
        elif slot == "tags":
            value = list(value)
        else:
            value = _plain(value)
        out[slot] = value
    return out


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild an event from :func:`event_to_dict`'s form.

    Raises:
        InvalidArgument: unknown ``type``, missing or unexpected fields.
    """
    name = data.get("type")
    cls = EVENT_TYPES.get(name)  # type: ignore[arg-type]
    if cls is None:
        raise InvalidArgument("type", f"must be one of {sorted(EVENT_TYPES)}", name)
    fields = {k: v for k, v in data.items() if k != "type"}
    expected = set(cls.__slots__)
    if unknown := sorted(set(fields) - expected):
        raise InvalidArgument(unknown[0], f"is not a field of `{name}` events", fields[unknown[0]])
    if "at" in fields:
        fields["at"] = parse_timestamp(fields["at"], "at")
    if "tags" in fields:
        fields["tags"] = tuple(fields["tags"])
    if "fact" in fields:
        fact = fields["fact"]
        if not isinstance(fact, Mapping) or set(fact) - set(_FACT_FIELDS):
            raise InvalidArgument(
                "fact", f"must be a rewrite fact with fields {list(_FACT_FIELDS)}", fact
            )
        try:
            fields["fact"] = RewriteFact(**fact)
        except TypeError as exc:
            raise InvalidArgument("fact", f"has missing fields: {exc}", fact) from None
    try:
        return cls(**fields)
    except TypeError as exc:
        raise InvalidArgument(name, f"has missing fields: {exc}", data) from None


def _plain(value: Any) -> Any:
    """Mappings to dicts and tuples to lists, recursively, for JSON."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
