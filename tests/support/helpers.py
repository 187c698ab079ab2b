"""Builders shared by the tests: small snapshots written the way a reader thinks of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from cortex_agents.memory import MemorySnapshot
from cortex_agents.substrate import NodeRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(minutes: float) -> datetime:
    """``T0`` plus some minutes."""
    return T0 + timedelta(minutes=minutes)


def node(
    node_id: str,
    kind: str | None = None,
    *,
    status: str = "completed",
    minute: float = 0,
    output: Any = None,
) -> NodeRecord:
    """A node captured and (when completed) settled at ``T0 + minute``."""
    return NodeRecord(
        id=node_id,
        kind=kind or node_id.split("-")[0],
        status=status,
        captured_at=at(minute),
        completed_at=at(minute) if status == "completed" else None,
        output=output,
    )


def snapshot(
    nodes: Iterable[NodeRecord | str],
    edges: Iterable[tuple[str, str]],
    *,
    minute: float = 60,
    outputs: Mapping[str, Any] | None = None,
) -> MemorySnapshot:
    """A snapshot referenced at ``T0 + minute``; bare ids become completed nodes."""
    outputs = outputs or {}
    records = [n if isinstance(n, NodeRecord) else node(n, output=outputs.get(n)) for n in nodes]
    return MemorySnapshot.of(records, edges, at(minute))


FANOUT_EDGES = [
    ("planner", "analyst-a"),
    ("planner", "analyst-b"),
    ("planner", "analyst-c"),
    ("analyst-a", "reviewer"),
    ("analyst-b", "reviewer"),
    ("analyst-c", "reviewer"),
]
FANOUT_NODES = ["planner", "analyst-a", "analyst-b", "analyst-c", "reviewer"]


def call_memory_tool(tool: Any, handle: Any, args: Mapping[str, Any]) -> Any:
    """``tool`` (``cortex_memory_query``) invoked as a model's call ``"c"`` reaches it, over ``handle``."""
    from types import SimpleNamespace

    from langgraph.prebuilt import ToolRuntime

    runtime = ToolRuntime(
        state={},
        context=SimpleNamespace(memory=handle),
        config={},
        stream_writer=lambda _: None,
        tool_call_id="c",
        store=None,
    )
    return tool.invoke(
        {"type": "tool_call", "name": tool.name, "id": "c", "args": {**args, "runtime": runtime}}
    )
