"""The append-only event model of the Pulse.

A run's substrate is a sequence of events; an event's position in that
sequence is its sequence number. Events are frozen values with a
JSON form (:func:`event_to_dict` / :func:`event_from_dict`) that persistence
stores row by row. Times come from the caller's clock: nothing here reads one.

Both conversions are the substrate's boundary: a payload (a config, an
output, tool arguments, a rewrite fact) must be storable by every backend and
by LangGraph's msgpack serializer, so it is JSON made of dicts with string
keys, lists, strings without lone surrogates, finite floats, 64-bit integers,
booleans and ``None``, nested at most :data:`MAX_DEPTH` levels. Anything else
is refused with :class:`~cortex_agents.errors.InvalidArgument` naming the
field, before it reaches a channel or a table. The walk is iterative, so a
hostile value cannot exhaust the interpreter's stack.

An event *entering* a substrate (:func:`check_event`, an appended event dict,
a stage's output through :func:`storable_json`) must also keep within
:mod:`~cortex_agents.substrate._bounds` — strings of at most
:data:`~cortex_agents.substrate._bounds.MAX_STRING_CHARS` characters, ids and
tags within theirs — so a snapshot file can carry whatever a run stored.
Reading stored events does not apply those, so older databases stay readable.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cortex_agents._timestamps import format_timestamp, parse_timestamp
from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate._bounds import MAX_ID_CHARS, MAX_STRING_CHARS, MAX_TAGS, id_problem
from cortex_agents.substrate._records import NodeId, RewriteFact

__all__ = [
    "EVENT_TYPES",
    "MAX_DEPTH",
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
    "check_event",
    "check_ids",
    "event_from_dict",
    "event_to_dict",
    "same_event",
    "storable_json",
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

EVENT_TYPES: Final[dict[str, type[Event]]] = {
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
_TYPE_NAMES: Final[dict[type[Event], str]] = {cls: name for name, cls in EVENT_TYPES.items()}
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

MAX_DEPTH: Final = 128
"""How deeply a payload value may nest (msgpack gives up near 250 levels, frames included)."""
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**63 - 1
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _plan(cls: type[Event], name: str) -> tuple[tuple[str, str, str], ...]:
    """How :func:`event_to_dict` writes each field of ``cls``: (slot, how, field name in errors)."""
    how = {"at": "at", "fact": "fact"}
    how.update(dict.fromkeys(_OMITTED_WHEN_EMPTY, "if_any"))
    how.update(dict.fromkeys(_OMITTED_WHEN_NONE, "if_set"))
    return tuple((slot, how.get(slot, "plain"), f"{name}.{slot}") for slot in cls.__slots__)


# per event type, computed once: the field loop is on every stored event's path
_PLANS: Final = {cls: (name, _plan(cls, name)) for cls, name in _TYPE_NAMES.items()}
_SLOTS: Final = {cls: frozenset(cls.__slots__) for cls in _TYPE_NAMES}
_CONVERTED: Final = frozenset({"at", "tags", "fact"})  # event_from_dict converts these itself


def event_to_dict(event: Event, *, max_string_chars: int | None = None) -> dict[str, Any]:
    """The JSON form of an event: ``{"type": ..., <fields>}`` with ISO timestamps.

    Empty ``config`` and ``tags`` and a ``None`` ``frontier`` are left out
    (they are the defaults). ``max_string_chars``: refuse longer strings
    (and keys) too (``None``: any length, as stored events are read).

    Raises:
        InvalidArgument: ``event`` is not a substrate event, or a field holds a
            value that cannot be stored (see the module docstring); the error
            names the field, e.g. ``tool_call_made.arguments``.
    """
    plan = _PLANS.get(type(event))
    if plan is None:
        raise InvalidArgument("event", "must be one of the substrate event types", event)
    name, slots = plan
    out: dict[str, Any] = {"type": name}
    for slot, how, label in slots:
        value = getattr(event, slot)
        if how == "plain":
            out[slot] = (
                value
                if type(value) is str and value.isascii() and max_string_chars is None
                else _plain(value, label, max_string_chars)
            )
        elif how == "at":
            out[slot] = format_timestamp(value)
        elif how == "if_any":
            if value:
                out[slot] = _plain(value, label, max_string_chars)
        elif how == "if_set":
            if value is not None:
                out[slot] = _plain(value, label, max_string_chars)
        else:  # a rewrite fact
            out[slot] = {
                f: _plain(getattr(value, f), f"{name}.fact.{f}", max_string_chars)
                for f in _FACT_FIELDS
                if f not in _FACT_OPTIONAL or getattr(value, f) is not None
            }
    return out


def event_from_dict(data: Mapping[str, Any], *, max_string_chars: int | None = None) -> Event:
    """Rebuild an event from :func:`event_to_dict`'s form.

    ``max_string_chars``: refuse longer strings (and keys) too (``None``: any
    length, as stored events are read).

    Raises:
        InvalidArgument: unknown ``type``, missing or unexpected fields, or a
            field that holds a value that cannot be stored.
    """
    if not isinstance(data, Mapping):
        raise InvalidArgument("event", "must be a JSON object", type(data).__name__)
    name = data.get("type")
    # Only a string can name a type (a list or dict would not even hash).
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(name, str):
        shown = name if isinstance(name, str | None) and len(name or "") <= 64 else _brief(name)
        raise InvalidArgument("type", f"must be one of {sorted(EVENT_TYPES)}", shown)
    fields = {k: v for k, v in data.items() if k != "type"}
    if extra := fields.keys() - _SLOTS[cls]:
        unknown = sorted(extra, key=str)
        raise InvalidArgument(
            unknown[0] if isinstance(unknown[0], str) else _brief(unknown[0]),
            f"is not a field of `{name}` events",
            _brief(fields[unknown[0]]),
        )
    longest = max_string_chars
    for slot, value in fields.items():
        if slot in _CONVERTED or (
            type(value) is str and value.isascii() and (longest is None or len(value) <= longest)
        ):
            continue  # checked below, or a plain string (ids, kinds, text)
        _plain(value, f"{name}.{slot}", longest)
    if "at" in fields:
        fields["at"] = parse_timestamp(fields["at"], "at")
    if "tags" in fields:
        tags = fields["tags"]
        if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
            raise InvalidArgument(f"{name}.tags", "must be a list of strings", _brief(tags))
        fields["tags"] = tuple(_plain(tags, f"{name}.tags", longest))
    if "fact" in fields:
        fact = fields["fact"]
        if not isinstance(fact, Mapping) or set(fact) - set(_FACT_FIELDS):
            raise InvalidArgument(
                "fact", f"must be a rewrite fact with fields {list(_FACT_FIELDS)}", _brief(fact)
            )
        _plain(fact, f"{name}.fact", longest)
        try:
            fields["fact"] = RewriteFact(**fact)
        except TypeError as exc:
            raise InvalidArgument("fact", f"has missing fields: {exc}", fact) from None
    try:
        return cls(**fields)
    except TypeError as exc:
        raise InvalidArgument(name, f"has missing fields: {exc}", data) from None


def storable_json(value: Any, field: str, *, max_string_chars: int = MAX_STRING_CHARS) -> Any:
    """``value`` as plain JSON every backend stores exactly (a new value; see the module docstring).

    Strings (and keys) hold at most ``max_string_chars`` characters (by
    default the bound of a stored value).

    Raises:
        InvalidArgument: the value holds something no backend can store, or
            that a snapshot file could not carry; the error names ``field``
            and the rule.
    """
    return _plain(value, field, max_string_chars)


def same_event(a: Event, b: Event) -> bool:
    """Whether two events are the same as stored JSON (``1``, ``1.0`` and ``True`` differ).

    Dataclass ``==`` follows Python, where ``1 == 1.0 == True``; the
    substrate stores JSON, where they are three different values.
    """
    if type(a) is not type(b) or a != b:
        return False
    for slot in type(a).__slots__:
        x, y = getattr(a, slot), getattr(b, slot)
        if slot == "fact":
            if not all(_same_json(getattr(x, f), getattr(y, f)) for f in _FACT_FIELDS):
                return False
        elif not _same_json(x, y):
            return False
    return True


def _same_json(x: Any, y: Any) -> bool:
    """Equal values of equal JSON types, all the way down (iterative)."""
    stack = [(x, y)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, Mapping):
            if not isinstance(b, Mapping) or a.keys() != b.keys():
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif isinstance(a, list | tuple):
            if not isinstance(b, list | tuple) or len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif type(a) is not type(b) or a != b:
            return False
        elif isinstance(a, float) and math.copysign(1.0, a) != math.copysign(1.0, b):
            return False  # 0.0 and -0.0
    return True


def check_event(event: Event) -> None:
    """Check that an event may enter a substrate: every field storable (what
    :func:`event_to_dict` checks), strings within
    :data:`~cortex_agents.substrate._bounds.MAX_STRING_CHARS`, ids and tags
    within theirs (:func:`check_ids`).

    Raises:
        InvalidArgument: as :func:`event_to_dict`, or :func:`check_ids`.
    """
    event_to_dict(event, max_string_chars=MAX_STRING_CHARS)
    check_ids(event)


_ID_SLOTS: Final = ("node_id", "source", "target", "kind")


def check_ids(event: Event) -> None:
    """Check an event's ids (``node_id``, ``source``, ``target``, ``kind``) and its tags.

    Each must be an id a snapshot file can carry
    (:func:`~cortex_agents.substrate._bounds.id_problem`); a node holds at most
    :data:`~cortex_agents.substrate._bounds.MAX_TAGS` tags.

    Raises:
        InvalidArgument: naming the field, e.g. ``node_scheduled.node_id``.
    """
    name = _TYPE_NAMES.get(type(event), "event")
    for slot in _ID_SLOTS:
        value = getattr(event, slot, None)
        if value is None:
            continue
        if (
            type(value) is str
            and value.isascii()
            and value.isprintable()
            and (0 < len(value) <= MAX_ID_CHARS)
        ):
            continue  # the common id
        rule = id_problem(value)
        if rule is not None:
            raise InvalidArgument(f"{name}.{slot}", rule, _brief(value))
    tags = getattr(event, "tags", ())
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"{name}.tags", f"must hold at most {MAX_TAGS} tags", _brief(tags))
    for tag in tags:
        rule = id_problem(tag)
        if rule is not None:
            raise InvalidArgument(f"{name}.tags", rule, _brief(tag))


def _brief(value: Any) -> str:
    """A short description of a rejected value (never its full repr: it may be huge or deep)."""
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if abs(value) < 10**4000 else "> 4000"
        return f"an integer of {digits} digits"
    if isinstance(value, Mapping | list | tuple):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a value of type {type(value).__name__}"


# What _plain does with a value, by exact type (the common case); subclasses go through _kind.
_KINDS: Final[dict[type, str]] = {
    str: "str",
    type(None): "scalar",
    bool: "scalar",
    int: "int",
    float: "float",
    dict: "map",
    list: "seq",
    tuple: "seq",
}


def _kind(item: Any, field: str) -> str:
    """What :func:`_plain` does with a value whose type is not one of :data:`_KINDS`'s."""
    if isinstance(item, str):
        return "str"
    if isinstance(item, bool):
        return "scalar"
    if isinstance(item, int):
        return "int"
    if isinstance(item, float):
        return "float"
    if isinstance(item, Mapping):
        return "map"
    if isinstance(item, list | tuple):
        return "seq"
    raise InvalidArgument(
        field,
        "must be JSON: objects with string keys, arrays, strings, numbers, booleans, null",
        _brief(item),
    )


def _plain(value: Any, field: str, longest: int | None = None) -> Any:
    """``value`` as plain JSON (mappings to dicts, tuples to lists), checked storable.

    Iterative, so its cost is bounded by the value's size and never by the
    interpreter's recursion limit. ``longest``: the most characters a string
    or key may hold (``None``: any). Keys are interned: outputs that repeat
    their keys hold one string per key.

    Raises:
        InvalidArgument: the value holds something no backend can store.
    """
    kind = type(value)
    if (
        kind is str
        and (value.isascii() or _SURROGATE.search(value) is None)
        and (longest is None or len(value) <= longest)
    ):
        return value  # the common scalars, without the walk
    if value is None or kind is bool or (kind is int and _INT_MIN <= value <= _INT_MAX):
        return value
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 0)]
    while stack:
        item, parent, slot, depth = stack.pop()
        how = _KINDS.get(type(item)) or _kind(item, field)
        if how == "str":
            if not item.isascii() and _SURROGATE.search(item):
                raise InvalidArgument(field, "must not contain lone surrogates", _brief(item))
            if longest is not None and len(item) > longest:
                raise InvalidArgument(field, _too_long(item, longest), _brief(item))
        elif how == "int":
            if not _INT_MIN <= item <= _INT_MAX:
                raise InvalidArgument(field, "must hold integers that fit in 64 bits", _brief(item))
            item = int(item)
        elif how == "float":
            if not math.isfinite(item):
                raise InvalidArgument(field, "must hold finite numbers (no NaN or infinity)", item)
        elif how == "map" or how == "seq":
            if depth >= MAX_DEPTH:
                raise InvalidArgument(
                    field, f"must nest at most {MAX_DEPTH} levels deep", _brief(item)
                )
            if how == "map":
                out: Any = {}
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise InvalidArgument(field, "must have string keys", _brief(key))
                    if not key.isascii() and _SURROGATE.search(key):
                        raise InvalidArgument(
                            field, "must not contain lone surrogates", _brief(key)
                        )
                    if longest is not None and len(key) > longest:
                        raise InvalidArgument(field, _too_long(key, longest), _brief(key))
                    if type(key) is str:
                        # one string per distinct key: a run's outputs repeat their keys, and a
                        # converter (pydantic's) makes new key strings for every output
                        key = sys.intern(key)
                    if (
                        type(child) is str
                        and child.isascii()
                        and (longest is None or len(child) <= longest)
                    ):
                        out[key] = child  # the common leaf, without a trip through the stack
                    else:
                        out[key] = None
                        stack.append((child, out, key, depth + 1))
            else:
                out = [None] * len(item)
                stack.extend((child, out, i, depth + 1) for i, child in enumerate(item))
            item = out
        parent[slot] = item
    return holder[0]


def _too_long(text: str, longest: int) -> str:
    return (
        f"must hold strings of at most {longest} characters (got {len(text)}): "
        "the bound of a stored value, which a snapshot file carries too"
    )
