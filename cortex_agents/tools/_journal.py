"""What the substrate keeps of a tool call: one bounded ``tool_call_made`` event.

Every call a model makes — run, refused or malformed — is journaled with the
arguments as the model wrote them and a compact summary of the answer. Both
cross :func:`~cortex_agents.tools._results.bounded_json`, so an event is
always storable (by every backend and by LangGraph's ``JsonPlusSerializer``),
and the whole event, as stored, holds at most :data:`MAX_EVENT_BYTES`
(16,384) bytes whatever the call held: when the two do not fit together, the
summary keeps what fits in half of the room left by the event's other fields,
and the arguments become a cut preview in the rest.

The summary of a memory query keeps the resolved query, the number of
candidates, how many were shown and, for each shown match, its id and scores
(not its text): enough to recompute and check the ranking from the snapshot.
Any other tool's summary is its status and the first characters of its
answer; an artifact is only read as memory results when it says it is one
and has their shape, so a user's tool with a differently shaped artifact is
summarised like any other tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, Protocol

from cortex_agents.substrate._events import ToolCallMade, event_to_dict
from cortex_agents.substrate._records import NodeId
from cortex_agents.tools._results import MAX_JOURNAL_BYTES, bounded_json, json_safe

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_EVENT_BYTES",
    "MEMORY_QUERY_TOOL",
    "MEMORY_RESULTS",
    "JournalContext",
    "call_summary",
    "tool_call_event",
]

MEMORY_QUERY_TOOL: Final = "cortex_memory_query"
MEMORY_RESULTS: Final = "cortex_memory_query"
"""The ``tool`` marker of a memory query's artifact."""
MAX_CONTENT_CHARS: Final = 2000
"""Characters of a (non-memory) tool's answer kept in its summary."""
MAX_EVENT_BYTES: Final = MAX_JOURNAL_BYTES
"""Bytes of a whole ``tool_call_made`` event as stored (compact UTF-8 JSON)."""
_ROOM_FOR_ARGUMENTS: Final = 1024  # the least the arguments keep before the summary is cut too
_SCORES: Final = (
    "node_id",
    "kind",
    "status",
    "hops",
    "score",
    "graph",
    "temporal",
    "semantic",
    "routing_key",
)


class JournalContext(Protocol):
    """What a tool loop journals a call under: the calling stage's id and its clock.

    A stage's :class:`~cortex_agents.runtime.StageContext` is one. The loop
    also hands the context to every tool (as ``ToolRuntime.context``); each
    tool checks the part it reads (``memory``, ``rewrites``, ``scratch``).
    """

    @property
    def stage_id(self) -> str:
        """The node id the calls are journaled under."""
        ...

    @property
    def clock(self) -> Callable[[], datetime]:
        """The stage's clock (the time of each ``tool_call_made``)."""
        ...


def _size(value: Any) -> int:
    return len(json.dumps(json_safe(value), ensure_ascii=False).encode("utf-8"))


def _memory_summary(artifact: Mapping[str, Any]) -> dict[str, Any] | None:
    """The journal's form of a memory result, or ``None`` if ``artifact`` is not shaped like one."""
    if artifact.get("tool") != MEMORY_RESULTS:
        return None
    matches = artifact.get("matches")
    if not isinstance(matches, list) or not all(
        isinstance(m, Mapping) and all(k in m for k in _SCORES) for m in matches
    ):
        return None
    summary = {
        "status": "success",
        "query": artifact.get("query"),
        "total": artifact.get("total"),
        "shown": artifact.get("shown"),
        "matches": [{k: m[k] for k in _SCORES} for m in matches],
    }
    if artifact.get("cut"):
        summary["cut"] = True
    return summary


def call_summary(status: str, content: str, artifact: Any = None) -> dict[str, Any]:
    """What the journal keeps of a tool's answer: compact, bounded JSON.

    Args:
        status: ``success`` or ``error``.
        content: The answer's text (an error's JSON, for errors).
        artifact: The answer's artifact, if any.
    """
    if status == "error":
        return {"status": "error", "content": content[:MAX_CONTENT_CHARS]}
    if isinstance(artifact, Mapping) and (summary := _memory_summary(artifact)) is not None:
        while summary["matches"] and _size(summary) > MAX_JOURNAL_BYTES:
            summary["matches"].pop()  # keep the first ones; `shown` still says how many were
            summary["cut"] = True
        return summary
    return {"status": "success", "content": content[:MAX_CONTENT_CHARS]}


def tool_call_event(
    *,
    node_id: NodeId | str,
    tool: str,
    call_id: str,
    arguments: Any,
    summary: Mapping[str, Any],
    at: datetime,
) -> ToolCallMade:
    """The ``tool_call_made`` event of one call, at most :data:`MAX_EVENT_BYTES` as stored.

    See the module docstring for what is kept when the call does not fit.
    """
    raw = arguments if isinstance(arguments, Mapping) else {"raw": arguments}
    event = ToolCallMade(
        node_id=NodeId(str(node_id)),
        tool=json_safe(str(tool)[:200]),
        call_id=json_safe(str(call_id)[:200]),
        arguments=bounded_json(raw),
        result=bounded_json(dict(summary)),
        at=at,
    )
    if _stored_size(event) <= MAX_EVENT_BYTES:
        return event
    # The room the two values share: the cap less everything else (`{}` twice included).
    room = MAX_EVENT_BYTES - _stored_size(replace(event, arguments={}, result={})) + 4
    result = event.result
    if _stored_size(result) > room - _ROOM_FOR_ARGUMENTS:
        result = bounded_json(dict(summary), max_bytes=room // 2)
    left = room - _stored_size(result)
    return replace(event, arguments=bounded_json(raw, max_bytes=left), result=result)


def _stored_size(value: Any) -> int:
    """Bytes of ``value`` (an event, or a JSON value) as the store writes it: compact UTF-8 JSON."""
    data = event_to_dict(value) if isinstance(value, ToolCallMade) else value
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return len(text.encode("utf-8"))
