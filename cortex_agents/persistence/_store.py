"""The substrate store: branch-aware, append-only event storage for many threads.

Events are rows keyed by ``(branch, seq)``; nothing written is ever
rewritten. A *branch* belongs to one ``(thread, checkpoint_ns)``; a root
branch starts at seq 1, and a forked branch continues a parent at
``base_seq``: the events visible at a :class:`Cursor` ``(branch, seq)`` are
the parent chain's up to each base, then the branch's own up to ``seq``.

:meth:`SubstrateStore.append` extends the parent cursor's branch when the
cursor is that branch's head. Otherwise the branch already holds events
beyond the cursor — written by a later checkpoint (time travel, a fork) or
by a step whose checkpoint never committed (a crash). If they are exactly
the events being appended (a re-executed step), they are adopted: the new
cursor points at them and nothing is written. If not, a new branch starts at
the cursor. Either way no row is rewritten and no committed cursor ever sees
an uncommitted event, so an append is idempotent.

Node and edge rows mirror ``node_scheduled`` and ``edge_added`` events, with
foreign keys from edges to nodes and from both to their event rows, so the
database itself rejects an edge to a node that does not exist.

Backends implement the small :class:`Transaction` interface; the algorithm,
the branch chains and a cache of committed events live here, once.
"""

from __future__ import annotations

import itertools
import json
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.substrate._events import (
    EdgeAdded,
    Event,
    NodeScheduled,
    event_from_dict,
    event_to_dict,
)
from cortex_agents.substrate._log import LogBuffer, SubstrateLog

__all__ = ["Cursor", "Segment", "SubstrateStore", "Transaction", "decode_event", "encode_event"]

_CURSOR_PREFIX: Final = "cortex-substrate:v1:"


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """How much of which branch a checkpoint sees: ``seq`` events ending on ``branch``.

    ``Cursor(0, 0)`` is the empty substrate (no branch yet).
    """

    branch: int
    seq: int

    def encode(self) -> str:
        """The string a checkpoint stores in place of the log."""
        return f"{_CURSOR_PREFIX}{self.branch}:{self.seq}"

    @staticmethod
    def decode(value: object) -> Cursor | None:
        """The cursor in ``value``, or ``None`` when it is not an encoded cursor."""
        if not isinstance(value, str) or not value.startswith(_CURSOR_PREFIX):
            return None
        branch, _, seq = value[len(_CURSOR_PREFIX) :].partition(":")
        if not (branch.isdigit() and seq.isdigit()):
            return None
        return Cursor(int(branch), int(seq))


EMPTY_CURSOR: Final = Cursor(0, 0)


@dataclass(frozen=True, slots=True)
class Segment:
    """One branch of a lineage: its events have seq > ``base``."""

    branch: int
    base: int


# one encoder for every row: ``json.dumps`` with options builds a new one per call
_COMPACT: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_event(event: Event, form: Mapping[str, Any] | None = None) -> str:
    """Compact JSON of an event, as stored in an event row.

    ``form``: the event's :func:`event_to_dict`, already made (not made again).

    Raises:
        InvalidArgument: the event holds a value JSON cannot represent.
    """
    try:
        return _COMPACT.encode(event_to_dict(event) if form is None else form)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument("event", f"must be JSON-serialisable: {exc}", event) from None


def decode_event(body: str) -> Event:
    """The event of a stored row.

    Raises:
        StorageError: ``corrupt``, the row is not JSON (it was damaged after it was written).
    """
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise StorageError("corrupt", f"a stored event row is not JSON ({exc})") from exc
    return event_from_dict(data)


class Transaction(ABC):
    """What a backend does inside one transaction. Raise :class:`StorageError` on integrity failures."""

    @abstractmethod
    def create_branch(
        self, thread_id: str, checkpoint_ns: str, parent: int | None, base_seq: int
    ) -> int:
        """Insert a branch row; return its key."""

    @abstractmethod
    def branch_row(self, branch: int) -> tuple[str, str, int | None, int] | None:
        """``(thread_id, checkpoint_ns, parent, base_seq)`` of a branch, if it exists."""

    @abstractmethod
    def head(self, branch: int) -> int | None:
        """The highest seq stored on the branch itself, if any."""

    @abstractmethod
    def insert_events(self, branch: int, rows: Sequence[tuple[int, str]]) -> None:
        """Insert ``(seq, body)`` rows."""

    @abstractmethod
    def insert_node(self, branch: int, seq: int, node_id: str) -> None:
        """Insert the node row backed by event ``(branch, seq)``."""

    def insert_nodes(self, branch: int, rows: Sequence[tuple[int, str]]) -> None:
        """Insert the node rows ``(seq, node_id)`` of one append (a backend may batch them)."""
        for seq, node_id in rows:
            self.insert_node(branch, seq, node_id)

    def insert_edges(
        self,
        branch: int,
        rows: Sequence[tuple[int, str, str]],
        lineage: Sequence[tuple[int, int | None]],
    ) -> None:
        """Insert the edge rows ``(seq, source, target)`` of one append (see :meth:`insert_edge`)."""
        for seq, source, target in rows:
            self.insert_edge(branch, seq, source, target, lineage)

    @abstractmethod
    def insert_edge(
        self,
        branch: int,
        seq: int,
        source: str,
        target: str,
        lineage: Sequence[tuple[int, int | None]],
    ) -> None:
        """Insert the edge row of event ``(branch, seq)``.

        ``lineage`` lists ``(branch, max_seq)`` pairs whose node rows are
        visible (``None``: no bound); an endpoint not found there is an
        integrity error.
        """

    @abstractmethod
    def read_events(self, branch: int, after: int, upto: int) -> list[str]:
        """Bodies of events ``after < seq <= upto`` of one branch, in seq order."""

    @abstractmethod
    def threads(self) -> list[str]:
        """Every thread with a branch, sorted."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> list[int]:
        """Delete every row of a thread; return the deleted branch keys."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Rows per table."""

    def claim_writer(self, thread_id: str) -> int | None:
        """Raise the thread's writer epoch by one and return it (``None``: no writer rows here)."""
        return None

    def writer_epoch(self, thread_id: str) -> int | None:
        """The thread's writer epoch (``None``: no row), read so that no claim commits before
        this transaction ends (see :mod:`cortex_agents.persistence._fencing`)."""
        return None

    def fence_epoch(self, thread_id: str) -> int | None:
        """The writer epoch this transaction's commit is checked against for the thread.

        ``None``: the commit is not fenced for it (no lock holder's ``atomic``
        block, or a store without writer rows). Where it is, the commit lands
        only if no other writer took the thread since that epoch was claimed.
        """
        return None


class SubstrateStore(ABC):
    """Append-only substrate storage with one protocol over several backends.

    Thread-safe. Subclasses provide :meth:`transaction` (and setup/close).
    """

    def __init__(self, *, cache_branches: int = 32, cache_lineages: int = 1024) -> None:
        self._lock = threading.RLock()
        # branch -> (segments root..leaf, (thread, namespace)); bounded, least recently used out
        self._lineages: OrderedDict[int, tuple[tuple[Segment, ...], tuple[str, str]]] = (
            OrderedDict()
        )
        self._buffers: OrderedDict[int, LogBuffer] = OrderedDict()
        # branch -> (thread, writer epoch, head seq) after this store's fenced appends
        self._heads: OrderedDict[int, tuple[str, int, int]] = OrderedDict()
        self._cache_branches = cache_branches
        self._cache_lineages = cache_lineages

    # -- backend hooks -----------------------------------------------------------------
    @abstractmethod
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """One transaction; committed on success, rolled back on error."""

    @abstractmethod
    def setup(self) -> None:
        """Create or migrate the schema (idempotent)."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release connections."""

    # -- the algorithm -----------------------------------------------------------------
    def _lineage(
        self, tx: Transaction, branch: int, thread_id: str, checkpoint_ns: str
    ) -> tuple[Segment, ...]:
        """Segments root..leaf of ``branch``, checking it belongs to the thread."""
        known = self._lineages.get(branch)
        if known is None:
            segments: list[Segment] = []
            owner = None
            current: int | None = branch
            while current is not None:
                row = tx.branch_row(current)
                if row is None:
                    raise StorageError("integrity", f"substrate branch {current} does not exist")
                owner = owner or (row[0], row[1])
                segments.append(Segment(current, row[3]))
                current = row[2]
            known = (tuple(reversed(segments)), owner)  # type: ignore[assignment]
            self._lineages[branch] = known  # type: ignore[assignment]
            while len(self._lineages) > self._cache_lineages:
                self._lineages.popitem(last=False)
        else:
            self._lineages.move_to_end(branch)
        chain, owner = known  # type: ignore[misc]
        if owner != (thread_id, checkpoint_ns):
            raise StorageError(
                "integrity",
                f"substrate branch {branch} belongs to another thread than {thread_id!r}",
            )
        return chain

    def append(
        self,
        thread_id: str,
        checkpoint_ns: str,
        parent: Cursor | None,
        events: Sequence[Event],
        forms: Sequence[Mapping[str, Any]] | None = None,
        source: SubstrateLog | None = None,
    ) -> Cursor:
        """Store ``events`` after ``parent`` and return the new cursor.

        The events must already be valid (folded) after the parent's; the
        database checks integrity again. Appending nothing returns ``parent``.
        ``forms``: the events' :func:`event_to_dict`, if already made (one per event).
        ``source``: the log whose last events these are, at the same positions
        (a run's log): the cache of the committed log shares the compressed
        chunks of events its branch holds, instead of sealing its own.

        Raises:
            StorageError: an integrity failure (the transaction is rolled back).
            InvalidArgument: an event is not JSON-serialisable.
        """
        parent = parent or EMPTY_CURSOR
        if not events:
            return parent
        if forms is None or len(forms) != len(events):
            bodies = [encode_event(e) for e in events]
        else:
            bodies = [encode_event(e, f) for e, f in zip(events, forms, strict=True)]
        start = parent.seq
        with self._lock:
            created: list[int] = []
            try:
                branch, adopted = self._append(
                    thread_id, checkpoint_ns, parent, events, bodies, created
                )
            except BaseException:
                # A rolled-back branch must not stay cached: SQLite may hand its key out again.
                for key in created:
                    self._lineages.pop(key, None)
                    self._buffers.pop(key, None)
                    self._heads.pop(key, None)
                self._heads.pop(parent.branch, None)
                raise
            if adopted:  # the same events were already stored after the parent
                return Cursor(branch, parent.seq + len(bodies))
        with self._lock:
            cached = self._buffers.get(branch)
            if cached is not None and len(cached) == start:
                cached.extend(events, source)
            elif parent.branch == 0:
                self._cache(branch, LogBuffer(events, source))
        return Cursor(branch, start + len(events))

    def _append(
        self,
        thread_id: str,
        checkpoint_ns: str,
        parent: Cursor,
        events: Sequence[Event],
        bodies: list[str],
        created: list[int],
    ) -> tuple[int, bool]:
        """One append's transaction: the branch, and whether the events were already there."""
        start = parent.seq
        with self.transaction() as tx:
            if parent.branch == 0:
                branch = tx.create_branch(thread_id, checkpoint_ns, None, 0)
                created.append(branch)
            else:
                chain = self._lineage(tx, parent.branch, thread_id, checkpoint_ns)
                head = self._fenced_head(tx, parent.branch, thread_id)
                if head is None:
                    head = tx.head(parent.branch)
                    head = chain[-1].base if head is None else head
                if parent.seq > head:
                    raise StorageError(
                        "integrity", f"cursor {parent} is beyond its branch's {head} events"
                    )
                if head != parent.seq:
                    stored = tx.read_events(parent.branch, parent.seq, parent.seq + len(bodies))
                    if stored == bodies:  # the same events are already there: adopt them
                        return parent.branch, True
                    branch = tx.create_branch(thread_id, checkpoint_ns, parent.branch, parent.seq)
                    created.append(branch)
                else:
                    branch = parent.branch
            chain = self._lineage(tx, branch, thread_id, checkpoint_ns)
            tx.insert_events(branch, [(start + i, body) for i, body in enumerate(bodies, 1)])
            visible = [(seg.branch, nxt.base) for seg, nxt in itertools.pairwise(chain)] + [
                (branch, None)
            ]
            # in two batches, nodes first: an edge only names nodes scheduled before it
            tx.insert_nodes(
                branch,
                [
                    (start + i, e.node_id)
                    for i, e in enumerate(events, 1)
                    if type(e) is NodeScheduled
                ],
            )
            edges = [
                (start + i, e.source, e.target)
                for i, e in enumerate(events, 1)
                if type(e) is EdgeAdded
            ]
            tx.insert_edges(branch, edges, visible)
            self._note_head(tx, branch, thread_id, start + len(bodies))
        return branch, False

    def _fenced_head(self, tx: Transaction, branch: int, thread_id: str) -> int | None:
        """The branch's head as this store's last append left it, if that still holds.

        It holds when that append and this transaction are fenced on the same
        writer epoch of the thread: every writer claims a new epoch before it
        writes, so no other writer committed to the thread in between (a commit
        of this store that rolled back cleared the entry). ``None``: unknown,
        read it. A writer that holds no lock is not fenced, and gets no entry.
        """
        epoch = tx.fence_epoch(thread_id)
        known = self._heads.get(branch) if epoch is not None else None
        if known is None or known[:2] != (thread_id, epoch):
            return None
        self._heads.move_to_end(branch)
        return known[2]

    def _note_head(self, tx: Transaction, branch: int, thread_id: str, head: int) -> None:
        """Remember the branch's head after an append (forget it after an unfenced one)."""
        epoch = tx.fence_epoch(thread_id)
        if epoch is None:
            self._heads.pop(branch, None)
            return
        self._heads[branch] = (thread_id, epoch, head)
        self._heads.move_to_end(branch)
        while len(self._heads) > self._cache_lineages:
            self._heads.popitem(last=False)

    def read(self, thread_id: str, checkpoint_ns: str, cursor: Cursor) -> SubstrateLog:
        """The log visible at ``cursor`` (O(1) when its branch is cached).

        Raises:
            StorageError: the cursor names a missing branch, another thread's
                branch, or more events than are stored.
        """
        if cursor.branch == 0:
            return SubstrateLog()
        with self._lock:
            buffer = self._buffers.get(cursor.branch)
            if buffer is not None:
                self._buffers.move_to_end(cursor.branch)
                known = self._lineages.get(cursor.branch)
                if known is None or known[1] != (thread_id, checkpoint_ns):
                    buffer = None  # owner unknown or another thread's: checked against the rows
                else:
                    self._lineages.move_to_end(cursor.branch)
            if buffer is None or len(buffer) < cursor.seq:
                with self.transaction(write=False) as tx:
                    chain = self._lineage(tx, cursor.branch, thread_id, checkpoint_ns)
                    if buffer is None:
                        bounds = [nxt.base for nxt in chain[1:]] + [cursor.seq]
                        events = [
                            decode_event(body)
                            for seg, upto in zip(chain, bounds, strict=True)
                            for body in tx.read_events(seg.branch, seg.base, upto)
                        ]
                        buffer = LogBuffer(events)
                    else:
                        bodies = tx.read_events(cursor.branch, len(buffer), cursor.seq)
                        buffer.extend(decode_event(b) for b in bodies)
                if len(buffer) < cursor.seq:
                    raise StorageError(
                        "integrity", f"cursor {cursor} names events that are not stored"
                    )
                self._cache(cursor.branch, buffer)
            return buffer.view(cursor.seq)

    def _cache(self, branch: int, buffer: LogBuffer) -> None:
        self._buffers[branch] = buffer
        self._buffers.move_to_end(branch)
        while len(self._buffers) > self._cache_branches:
            self._buffers.popitem(last=False)

    def threads(self) -> list[str]:
        """Every thread that has substrate events, sorted."""
        with self.transaction(write=False) as tx:
            return tx.threads()

    def delete_thread(self, thread_id: str) -> None:
        """Delete every substrate row of a thread (all namespaces, all branches)."""
        with self._lock:
            with self.transaction() as tx:
                deleted = tx.delete_thread(thread_id)
            for branch in deleted:
                self._buffers.pop(branch, None)
                self._lineages.pop(branch, None)
                self._heads.pop(branch, None)

    def counts(self) -> dict[str, int]:
        """Rows per table (branches, events, nodes, edges)."""
        with self.transaction(write=False) as tx:
            return tx.counts()

    def claim_writer(self, thread_id: str) -> int | None:
        """Take the thread as its writer: raise its writer epoch and return it (fencing).

        Called by :meth:`CortexSaver.lock` once the lock is held. ``None``: this
        store keeps no writer rows, and its commits are not fenced.
        """
        with self._lock, self.transaction() as tx:
            return tx.claim_writer(thread_id)

    def forget_cached(self) -> None:
        """Drop every cached branch: an enclosing transaction rolled back rows they describe."""
        with self._lock:
            self._buffers.clear()
            self._lineages.clear()
            self._heads.clear()

    def branches(self) -> Iterator[int]:
        """Branch keys held in the cache (for tests and diagnostics)."""
        return iter(tuple(self._buffers))

    def cache_sizes(self) -> dict[str, int]:
        """How many entries each in-memory cache holds (every one is bounded).

        ``branch.<kind>``: what the cached branches keep derived from their
        events (states, structures, event dicts), summed over the branches,
        from each branch's budget.
        """
        with self._lock:
            sizes = {
                "buffers": len(self._buffers),
                "lineages": len(self._lineages),
                "heads": len(self._heads),
            }
            buffers = tuple(self._buffers.values())
        for buffer in buffers:  # each branch's budget under its own lock, not the store's
            for kind, weight in buffer.sizes().items():
                sizes[f"branch.{kind}"] = sizes.get(f"branch.{kind}", 0) + weight
        return sizes
