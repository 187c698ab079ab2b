"""The memory snapshot: the substrate as a stage saw it when it started.

A :class:`MemorySnapshot` holds the full topology as of its ``captured_at``
(every node, every status: walks and influence run over all of it) and the
outputs of the nodes that had settled. It is bound once and never changes.

The vectorised engine reads it through an index view
(:class:`~cortex_agents.memory._index.IndexView`). A snapshot bound on a log
(:meth:`MemorySnapshot.from_log`, what stages get) reads the prefix view of
the index its branch keeps incrementally: binding costs the events added
since the branch's last bind, not O(V). A snapshot made by hand
(:meth:`MemorySnapshot.of`, :meth:`MemorySnapshot.from_state`) gets an index
built for it on first use, O(V + E), shared by every handle over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

from cortex_agents._timestamps import require_aware
from cortex_agents.errors import InvalidSnapshot, Problem
from cortex_agents.substrate._records import EdgeRecord, NodeId, NodeRecord
from cortex_agents.substrate._state import GraphState

if TYPE_CHECKING:
    from cortex_agents.memory._view import IndexView
    from cortex_agents.substrate._log import SubstrateLog

__all__ = ["MemorySnapshot"]


def _edge(source: str, target: str) -> EdgeRecord:
    """An edge given as a ``(source, target)`` pair of node ids."""
    return EdgeRecord(NodeId(source), NodeId(target))


@dataclass(frozen=True, eq=False)
class MemorySnapshot:
    """Settled state bound at stage entry.

    Use :meth:`of` or :meth:`from_state` rather than the constructor.

    Attributes:
        captured_at: The reference time: memory ages nodes from it.
        nodes: Every node by id (the topology spans all statuses).
        edges: Every edge.
        run_id: The run (thread) it was taken from, if known.
    """

    captured_at: datetime
    nodes: Mapping[NodeId, NodeRecord]
    edges: Sequence[EdgeRecord]
    run_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "captured_at", require_aware(self.captured_at, "captured_at"))
        problems: list[Problem] = []
        for key, node in self.nodes.items():
            if not isinstance(node, NodeRecord) or node.id != key:
                problems.append(Problem(f"nodes[{key!r}]", "must be the NodeRecord with that id"))
        seen: set[tuple[str, str]] = set()
        for i, edge in enumerate(self.edges):
            for end in ("source", "target"):
                if getattr(edge, end) not in self.nodes:
                    problems.append(
                        Problem(f"edges[{i}].{end}", f"unknown node {getattr(edge, end)!r}")
                    )
            pair = (edge.source, edge.target)
            if pair in seen:
                problems.append(
                    Problem(f"edges[{i}]", f"duplicate edge {pair[0]!r} -> {pair[1]!r}")
                )
            seen.add(pair)
        if problems:
            raise InvalidSnapshot(problems)

    @classmethod
    def of(
        cls,
        nodes: Iterable[NodeRecord],
        edges: Iterable[EdgeRecord | tuple[str, str]],
        captured_at: datetime,
        *,
        run_id: str | None = None,
    ) -> MemorySnapshot:
        """Build a snapshot from node records and edges (records or pairs).

        Raises:
            InvalidSnapshot: duplicate node ids, dangling or duplicate edges.
        """
        table: dict[NodeId, NodeRecord] = {}
        problems = []
        for i, node in enumerate(nodes):
            if node.id in table:
                problems.append(Problem(f"nodes[{i}].id", f"duplicate node id {node.id!r}"))
            table[node.id] = node
        if problems:
            raise InvalidSnapshot(problems)
        records = tuple(e if isinstance(e, EdgeRecord) else _edge(*e) for e in edges)
        return cls(captured_at, MappingProxyType(table), records, run_id)

    @classmethod
    def from_state(
        cls, state: GraphState, captured_at: datetime, *, run_id: str | None = None
    ) -> MemorySnapshot:
        """The snapshot of a materialized graph state, referenced at ``captured_at``.

        O(1): a folded state is consistent by construction, so its nodes and
        edges are not checked again.
        """
        snapshot = cls.__new__(cls)
        for name, value in (
            ("captured_at", require_aware(captured_at, "captured_at")),
            ("nodes", state.nodes),
            ("edges", state.edges),
            ("run_id", run_id),
        ):
            object.__setattr__(snapshot, name, value)
        return snapshot

    @classmethod
    def from_log(
        cls, log: SubstrateLog, captured_at: datetime, *, run_id: str | None = None
    ) -> MemorySnapshot:
        """The snapshot of a log's state, its index a prefix view of the log's branch index.

        Binding is O(events the branch's index has not taken in yet); the view
        is taken on first query and is exactly the index of ``log``'s events.
        """
        snapshot = cls.from_state(log.state, captured_at, run_id=run_id)
        object.__setattr__(snapshot, "_log", log)
        return snapshot

    @cached_property
    def index(self) -> IndexView:
        """The index view the vectorised engine reads (see the module docstring)."""
        # lazy: importing the memory package does not load the index's modules, only the
        # first query does. A downward import: the index is built from records and never
        # names the snapshot (issue 25: no import cycle).
        from cortex_agents.memory._index import MemoryIndex, on_branch

        log: SubstrateLog | None = self.__dict__.get("_log")
        if log is not None:
            return on_branch(log)
        return MemoryIndex.of_records(self.nodes.values(), self.edges)
