"""The columns of a memory index: what its views, and what they read per extractor, see.

:class:`IndexColumns` is the layout of a memory index — nodes, edges and the
tick of every fact, by ordinal (the model is :mod:`cortex_agents.memory._index`'s
docstring) — and its read side: the compiled adjacency views walk, and the
structures an index keeps per extractor (:class:`PerExtractor`: the fields of
:mod:`cortex_agents.memory._fields`), caught up on use. Taking events in, forking
and building from records are :class:`~cortex_agents.memory._index.MemoryIndex`'s,
a subclass.

Why the split (issue 25, "0 import cycles"): a view
(:mod:`~cortex_agents.memory._view`), the fields and BM25's postings read the
index's columns, while the index makes views and keeps fields. With the layout
here, below all of them, each reader names the columns it reads and the
index names its readers: imports point one way. The index keeps fields without
naming their class: whoever reads them passes the class in
(:meth:`IndexColumns.per_extractor`).
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

import numpy as np

from cortex_agents.errors import InvalidEvent
from cortex_agents.memory._adjacency import Adjacency
from cortex_agents.memory._bulk import paused_gc
from cortex_agents.memory._columns import Column
from cortex_agents.memory._depth import Depths
from cortex_agents.memory._idorder import IdOrder
from cortex_agents.substrate._branch import INDEX_ADJACENCY, INDEX_ASKED, INDEX_FIELDS, INDEX_LIMITS
from cortex_agents.substrate._budget import DerivedBudget

if TYPE_CHECKING:
    from cortex_agents.memory._extract import Extractor
    from cortex_agents.substrate._records import NodeId

__all__ = ["IndexColumns", "PerExtractor"]

_OWN_BUDGET: Final = sum(INDEX_LIMITS.values())
"""The capacity of the budget an index built outside a branch keeps (every kind at its limit)."""


class PerExtractor(Protocol):
    """What an index keeps per extractor (its fields), read as the index grows.

    Made by ``kind(extractor)`` (:meth:`IndexColumns.per_extractor`).
    """

    def __init__(self, extractor: Extractor) -> None:
        """What ``extractor`` reads, before any output is read."""

    def catch_up(self, index: IndexColumns) -> None:
        """Read every output the index took in since the last call (the index lock held)."""
        ...

    def fork(self, parent: IndexColumns, n: int, ready: int, length: int) -> PerExtractor:
        """A copy for the fork of ``parent`` at ``length`` events (``n`` nodes, ``ready`` outputs)."""
        ...


P = TypeVar("P", bound=PerExtractor)


class IndexColumns:
    """Nodes, edges and settle facts of one branch, by ordinal, with the tick of each fact.

    Its caches — the fields per extractor, the compiled adjacency and how
    often each edge set was asked for — are kinds of ``budget``
    (:data:`~cortex_agents.substrate._branch.INDEX_LIMITS`), keyed by this
    index's own token so two indexes sharing a budget never read each other's.

    Args:
        budget: Where the caches are kept: the branch's, when the branch
            creates the index (:func:`~cortex_agents.memory._index.on_branch`);
            ``None``, an index built outside a branch (a snapshot, a test),
            keeps a small budget of its own with the same limits.

    Attributes:
        length: How many events it has taken in.
        lock: Guards every change (extension, per-extractor structures catching up);
            the budget's lock is taken while holding it, never the reverse.
        budget: Where its caches are kept (:attr:`budget`).
    """

    def __init__(self, budget: DerivedBudget | None = None) -> None:
        self.length = 0
        self.lock = threading.RLock()
        # a branch's budget is held weakly: it holds this index (a derived structure), and a
        # strong reference back would make the two a cycle, so a dropped branch's index would
        # wait for the cyclic collector instead of going with the branch
        self._shared: weakref.ref[DerivedBudget] | None = None
        self._own: DerivedBudget | None = None
        if budget is None:
            self._own = DerivedBudget(_OWN_BUDGET, limits=INDEX_LIMITS)
        else:
            self._shared = weakref.ref(budget)
        # this index's part of the budget: identity, not equality, and never reused while
        # an entry holding it lives (an `id()` could be, by a later index at the same address)
        self._token = object()
        self.ids: list[NodeId] = []
        self.pos: dict[str, int] = {}
        self.kind_lookup: dict[str, int] = {}
        self.kind_names: list[str] = []
        self.kinds = Column()
        self.scheduled = Column()  # tick each node was scheduled (non-decreasing)
        self.captured_us = Column()
        self.completed_us = Column()
        self.completed_tick = Column()  # observed_at = completed_at from this tick on
        self.settled_tick = Column()  # a candidate of settled_only from this tick on
        self.output_tick = Column()  # its output counts from this tick on
        self.outputs: list[Any] = []  # held forms (`compact.hold`), shared with the records
        self.ready: list[int] = []  # ordinals, in the order their outputs arrived
        self.ready_tick = Column()
        self.order = IdOrder()
        self.depths = Depths()  # longest path from a source: orders the influence pass
        self.src: list[int] = []  # the BFS reads these lists; numpy reads the columns
        self.dst: list[int] = []
        self.src_col = Column()
        self.dst_col = Column()
        self.edge_tick = Column()  # tick each edge was added (non-decreasing)
        self.removed_tick = Column()  # tick each edge was removed (NEVER while it lives)
        self.removed: dict[int, int] = {}  # edge ordinal -> tick it was removed
        self.removal_ticks: list[int] = []
        self.removal_edges: list[int] = []  # the edge each removal removed, in removal order
        # the edges of the first batch that added any (a whole run after a restart, a snapshot
        # made by hand) are held per node as CSR arrays, the later ones in per-node lists
        self.bulk = Adjacency.empty()
        self.out: list[list[int] | None] = []  # per node: its later edges out, in order
        self.inc: list[list[int] | None] = []  # per node: its later edges in, in order
        # `out` / `inc` lists of nodes below this ordinal may be shared with a fork (or the
        # index forked from): each is copied before this index first appends to it
        self._shared_below = 0
        self._copied_out: set[int] = set()
        self._copied_inc: set[int] = set()
        self.live_edges = 0
        self._broken: str | None = None

    @property
    def budget(self) -> DerivedBudget:
        """Where its caches are kept: its branch's while the branch lives, else its own.

        A view may outlive its branch: the index then keeps its caches in a
        budget of its own, made once (derived again there: slower, never wrong).
        """
        shared = self._shared
        if shared is not None:
            found = shared()
            if found is not None:
                return found
        with self.lock:
            if self._own is None:
                self._own = DerivedBudget(_OWN_BUDGET, limits=INDEX_LIMITS)
            return self._own

    def _usable(self) -> None:
        if self._broken is not None:
            raise InvalidEvent(self.length, f"the memory index is unusable: {self._broken}")

    # -- compiled adjacency ---------------------------------------------------------------
    def compiled(self, relation: str, edges: int, removals: int) -> Any:
        """The CSR matrix :meth:`adjacency` built for that edge set, or ``None`` (never builds)."""
        with self.lock:
            return self.budget.peek(INDEX_ADJACENCY, (self._token, relation, edges, removals))

    def adjacency(self, relation: str, edges: int, removals: int) -> Any:
        """A scipy CSR matrix of ``relation`` over the first ``edges`` edges less the first
        ``removals`` removals — the edge set of every view with those counts — or ``None``.

        Built (O(E) in numpy) the second time a view with that edge set walks,
        so a one-off view walks in Python in O(cone), and the stages of a run
        whose wire was scheduled up front share one matrix. Four are kept (the
        budget's :data:`~cortex_agents.substrate._branch.INDEX_ADJACENCY` limit).
        """
        key = (self._token, relation, edges, removals)
        with self.lock:  # the index's lock, then the budget's (inside get/put) for the map only
            found = self.budget.get(INDEX_ADJACENCY, key)
            if found is not None:
                return found
            # a one-item list, counted in place: `put` keeps the value already there
            asked: list[int] = self.budget.put(INDEX_ASKED, key, [0])
            asked[0] += 1
            if asked[0] < 2:
                return None
            import scipy.sparse as sp  # type: ignore[import-untyped]  # scipy ships no stubs

            live = np.ones(edges, dtype=bool)
            live[self.removal_edges[:removals]] = False
            src, dst = self.src_col.data[:edges][live], self.dst_col.data[:edges][live]
            if relation == "ancestors":
                src, dst = dst, src
            size = len(self.ids)
            built = sp.csr_array((np.ones(len(src)), (src, dst)), shape=(size, size))
            return self.budget.put(INDEX_ADJACENCY, key, built)

    # -- per extractor -------------------------------------------------------------------
    def per_extractor(self, extractor: Extractor, kind: type[P]) -> P:
        """What ``extractor`` reads, a ``kind``, caught up with every output taken in (8 kept).

        ``kind`` is passed in by the module that reads it (the fields'
        :func:`~cortex_agents.memory._fields.fields_index`), so this module
        never imports it: the fields import the index, not the other way round.
        """
        with self.lock:
            self._usable()
            key = (self._token, extractor, kind)
            held: P | None = self.budget.get(INDEX_FIELDS, key)
            if held is None:  # made outside the budget's lock; caught up below, under ours
                held = self.budget.put(INDEX_FIELDS, key, kind(extractor))
            with paused_gc():
                held.catch_up(self)
            return held

    def kept_per_extractor(self) -> list[tuple[Extractor, type[PerExtractor], PerExtractor]]:
        """``(extractor, kind, structure)`` this index keeps, least recently used first (the
        order a fork puts them in its own budget, so it evicts them in the same order)."""
        kept = []
        for key, held in self.budget.items(INDEX_FIELDS):
            token, extractor, kind = cast("tuple[object, Extractor, type[PerExtractor]]", key)
            if token is self._token:
                kept.append((extractor, kind, held))
        return kept
