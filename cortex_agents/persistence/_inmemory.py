"""The in-memory substrate store: the SQL backends' twin, for unit tests.

Same protocol, same integrity rules (an edge needs both node rows visible,
a node or edge row needs its event row), staged so that a failed append
changes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from cortex_agents.errors import StorageError
from cortex_agents.persistence._store import SubstrateStore, Transaction

__all__ = ["InMemorySubstrateStore"]


@dataclass
class _Tables:
    branches: dict[int, tuple[str, str, int | None, int]] = field(default_factory=dict)
    events: dict[tuple[int, int], str] = field(default_factory=dict)
    heads: dict[int, int] = field(default_factory=dict)
    nodes: dict[int, tuple[int, int, str]] = field(default_factory=dict)
    node_keys: dict[tuple[int, str], int] = field(default_factory=dict)
    edges: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    writers: dict[str, int] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class _MemoryTransaction(Transaction):
    """Stages writes; :meth:`commit` applies them all at once."""

    def __init__(self, tables: _Tables) -> None:
        self.t = tables
        # One id counter for the tables and every transaction: like AUTOINCREMENT, the id of a
        # branch whose transaction failed is never handed out again.
        self.new = _Tables(ids=tables.ids)

    def create_branch(
        self, thread_id: str, checkpoint_ns: str, parent: int | None, base_seq: int
    ) -> int:
        if parent is not None and self.branch_row(parent) is None:
            raise StorageError("integrity", f"parent branch {parent} does not exist")
        key = next(self.t.ids)
        self.new.branches[key] = (thread_id, checkpoint_ns, parent, base_seq)
        return key

    def branch_row(self, branch: int) -> tuple[str, str, int | None, int] | None:
        return self.new.branches.get(branch) or self.t.branches.get(branch)

    def head(self, branch: int) -> int | None:
        return self.new.heads.get(branch, self.t.heads.get(branch))

    def insert_events(self, branch: int, rows: Sequence[tuple[int, str]]) -> None:
        if self.branch_row(branch) is None:
            raise StorageError("integrity", f"branch {branch} does not exist")
        for seq, body in rows:
            if (branch, seq) in self.t.events or (branch, seq) in self.new.events:
                raise StorageError("integrity", f"event ({branch}, {seq}) already exists")
            self.new.events[(branch, seq)] = body
            self.new.heads[branch] = max(seq, self.head(branch) or 0)

    def _has_event(self, branch: int, seq: int) -> bool:
        return (branch, seq) in self.new.events or (branch, seq) in self.t.events

    def insert_node(self, branch: int, seq: int, node_id: str) -> None:
        if not self._has_event(branch, seq):
            raise StorageError("integrity", f"node {node_id!r} has no event row")
        if (branch, node_id) in self.t.node_keys or (branch, node_id) in self.new.node_keys:
            raise StorageError("integrity", f"node {node_id!r} already exists on branch {branch}")
        key = next(self.t.ids)
        self.new.nodes[key] = (branch, seq, node_id)
        self.new.node_keys[(branch, node_id)] = key

    def _visible(self, node_id: str, lineage: Sequence[tuple[int, int | None]]) -> int | None:
        for branch, upto in lineage:
            key = self.new.node_keys.get((branch, node_id)) or self.t.node_keys.get(
                (branch, node_id)
            )
            if key is not None:
                _, seq, _ = self.new.nodes.get(key) or self.t.nodes[key]
                if upto is None or seq <= upto:
                    return key
        return None

    def insert_edge(
        self,
        branch: int,
        seq: int,
        source: str,
        target: str,
        lineage: Sequence[tuple[int, int | None]],
    ) -> None:
        if not self._has_event(branch, seq):
            raise StorageError("integrity", f"edge {source!r} -> {target!r} has no event row")
        ends = (self._visible(source, lineage), self._visible(target, lineage))
        if None in ends:
            raise StorageError(
                "integrity", f"edge {source!r} -> {target!r} references a missing node"
            )
        self.new.edges[(branch, seq)] = ends  # type: ignore[assignment]

    def read_events(self, branch: int, after: int, upto: int) -> list[str]:
        return [
            self.t.events[(branch, s)]
            for s in range(after + 1, upto + 1)
            if (branch, s) in self.t.events
        ]

    def threads(self) -> list[str]:
        return sorted({row[0] for row in self.t.branches.values()})

    def delete_thread(self, thread_id: str) -> list[int]:
        doomed = [b for b, row in self.t.branches.items() if row[0] == thread_id]
        gone = set(doomed)
        for table in (self.t.events, self.t.edges):
            for key in [k for k in table if k[0] in gone]:
                del table[key]
        for row_key in [k for k, row in self.t.nodes.items() if row[0] in gone]:
            branch, _, node_id = self.t.nodes.pop(row_key)
            del self.t.node_keys[(branch, node_id)]
        # The thread's writer epoch stays (as its cortex_writers row does): a recreated thread
        # must never hand out an epoch a stale writer holds.
        for branch in doomed:
            del self.t.branches[branch]
            self.t.heads.pop(branch, None)
        return doomed

    def counts(self) -> dict[str, int]:
        t = self.t
        return {
            "branches": len(t.branches),
            "events": len(t.events),
            "nodes": len(t.nodes),
            "edges": len(t.edges),
        }

    def claim_writer(self, thread_id: str) -> int | None:
        epoch = (self.writer_epoch(thread_id) or 0) + 1
        self.new.writers[thread_id] = epoch
        return epoch

    def writer_epoch(self, thread_id: str) -> int | None:
        return self.new.writers.get(thread_id, self.t.writers.get(thread_id))

    def commit(self) -> None:
        for name in ("branches", "events", "heads", "nodes", "node_keys", "edges", "writers"):
            getattr(self.t, name).update(getattr(self.new, name))


class InMemorySubstrateStore(SubstrateStore):
    """Substrate storage in process memory (lost when the process ends)."""

    def __init__(self, *, cache_branches: int = 32) -> None:
        super().__init__(cache_branches=cache_branches)
        self._tables = _Tables()

    def setup(self) -> None:
        """Nothing to create."""

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        """Stage writes and apply them only if the block succeeds."""
        with self._lock:
            tx = _MemoryTransaction(self._tables)
            yield tx
            tx.commit()
