"""The snapshot file's values: a document, and what forensic reading leaves out.

These are plain frozen values, below both the reader that builds them
(:mod:`._reader`) and the functions that read and write files (:mod:`._file`),
so neither of those needs the other's module to name them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cortex_agents.errors import Problem
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.snapshotfile._integrity import Category
from cortex_agents.snapshotfile._limits import BadNumber
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import EdgeRecord, NodeRecord, RewriteFact
from cortex_agents.substrate._state import GraphState

__all__ = ["SCHEMA_VERSION", "SQLITE_HEADER", "LeftOut", "Salvage", "SnapshotDocument"]

SCHEMA_VERSION: Final = "1"
SQLITE_HEADER: Final = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file (told apart from a snapshot)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotDocument:
    """A validated snapshot file.

    Attributes:
        run_id: The run (thread) it came from, if recorded.
        entry_time: The reference time (a stage's entry, or the export time).
        nodes: Every node.
        edges: Every edge.
        rewrites: The rewrite history, in decision order.
        rewrite_budget: The run's rewrite budget per dimension, if the run
            set one (written to the file only then).
        _log: The substrate the document imports as, when the reader built
            and folded it to check the file; import writes it rather than
            building and folding it again (the document is immutable, its
            outputs included: change a copy, not the document).
    """

    run_id: str | None
    entry_time: datetime
    nodes: tuple[NodeRecord, ...]
    edges: tuple[EdgeRecord, ...]
    rewrites: tuple[RewriteFact, ...] = ()
    rewrite_budget: Mapping[str, int] | None = None
    _log: SubstrateLog | None = field(default=None, compare=False, repr=False)

    def to_memory_snapshot(self) -> MemorySnapshot:
        """The memory snapshot this file describes, referenced at ``entry_time``."""
        return MemorySnapshot.of(self.nodes, self.edges, self.entry_time, run_id=self.run_id)

    @classmethod
    def from_state(
        cls, state: GraphState, entry_time: datetime, *, run_id: str | None = None
    ) -> SnapshotDocument:
        """The document of a materialized graph state."""
        return cls(
            run_id=run_id,
            entry_time=entry_time,
            nodes=tuple(state.nodes.values()),
            edges=tuple(state.edges),
            rewrites=state.rewrites,
            rewrite_budget=None if state.budget is None else dict(state.budget),
        )


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A row of a snapshot file that is not in the graph it was read into.

    Attributes:
        location: The row, e.g. ``edges[8]``.
        category: Why: ``invalid``, ``duplicate``, ``dangling``, ``cycle``,
            ``inconsistent`` (a state a run cannot produce) or ``orphan`` (a
            rewrite whose proposer is not a node).
        problems: What is wrong with it, located.
        row: The row as the file holds it (JSON).
    """

    location: str
    category: Category
    problems: tuple[Problem, ...]
    row: Any

    def row_json(self) -> str:
        """The row as compact ASCII JSON (numbers out of range as their literal text)."""
        return json.dumps(
            self.row,
            ensure_ascii=True,
            separators=(",", ":"),
            default=lambda v: repr(v) if isinstance(v, BadNumber) else str(v),
        )


@dataclass(frozen=True, slots=True)
class Salvage:
    """What forensic reading keeps and what it leaves out.

    Attributes:
        document: Every row that passed.
        problems: Every problem found, located, in document order.
        left_out: Every other row, with why.
        orphans: Nodes kept whose every edge was left out.
    """

    document: SnapshotDocument
    problems: tuple[Problem, ...]
    left_out: tuple[LeftOut, ...]
    orphans: tuple[Problem, ...] = ()
