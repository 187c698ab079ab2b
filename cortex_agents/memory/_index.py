"""The memory index: what the vectorised engine reads, kept incrementally per branch.

One :class:`MemoryIndex` per branch of a run (DESIGN §11) is extended by the
branch's new events only — :meth:`MemoryIndex.extend` is the
:class:`~cortex_agents.substrate._branch.Derived` seam, registered under
:data:`MEMORY_INDEX` — and answers for any prefix of the events it has taken
in with an immutable :class:`IndexView`. Binding a stage's snapshot is then
O(new events since the last bind), not O(V). The columns it writes, which views
and fields read, are its base class's
(:class:`~cortex_agents.memory._index_columns.IndexColumns`, a module below them
all: issue 25, no import cycle).

**Ticks make prefixes exact.** The graph is not append-only: a node settles
(its status, output and time change), rewrites add and remove edges into
pending work. So the index never overwrites what a view may read; it records
*when* (the event's position, its tick) each fact became true:

* nodes get ordinals in scheduling order; a view at length ``L`` holds the
  first ``n`` (those scheduled before ``L``);
* edges get ordinals in the order they were added, and a removal tick; an
  edge is in the view when it was added before ``L`` and not removed before;
* a node's output, settled flag and completion time count from the tick of
  its completion: ``tick < L`` or the view sees the node as it was before;
* a node's depth (which orders the influence pass) keeps its earlier
  versions when an edge changes it (:mod:`cortex_agents.memory._depth`).

Every value a view reads is either written before the view existed or moves
from "never" to a tick beyond it, so views need no lock and never change.

**Costs.** Extending: O(1) per event in a workflow (an edge into a node that
already has successors, or a removal, also updates the depths below it),
plus order-preserving id labels (:mod:`cortex_agents.memory._idorder`). A
batch of events is read once; its nodes, edges and outputs are appended to
the columns in whole-array passes, and only the edges' effect on depths is
applied event by event. The first batch that adds edges keeps them grouped
by node in CSR arrays (:mod:`~cortex_agents.memory._adjacency`), later edges in
per-node lists. A branch loaded after a restart takes its whole log
as one batch: rebuilding is array work, not one column write per fact (the
derived index is rebuilt rather than persisted: it stays a pure function of
the events, with no second format to keep in step with them). What a
rebuild cost at 100,000 nodes was reading every output in Python; the
fields of a batch are now read in one pass without a fields object per
output (:func:`~cortex_agents.memory._extract.read_outputs`), their bodies
tokenised at once over their joined text
(:mod:`~cortex_agents.memory._batch_tokens`), and the token postings only
when a query's scorer first reads them (none of it is needed to walk or to
rank without text). A view: O(log V). A walk (:meth:`IndexView.walk`): O(cone) in Python, or
scipy's BFS over a compiled matrix shared by every view with the same edge
set (built in O(E) numpy the second time one is walked — the stages of a
wire scheduled up front share one). Fields per extractor
(:mod:`cortex_agents.memory._fields`) are read lazily, once per settled node.
A fork carries a copy of the index as of its fork point (:meth:`MemoryIndex.fork`).

An event the index cannot apply (an unknown node, a second completion, an
edge it does not hold, an unknown event type) raises :class:`InvalidEvent`,
and the index refuses every later use: a silently stale index is worse than
a failed one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from cortex_agents._timestamps import to_micros
from cortex_agents.errors import CycleError, InvalidEvent
from cortex_agents.memory._adjacency import Adjacency, Grouped
from cortex_agents.memory._bulk import paused_gc
from cortex_agents.memory._columns import NEVER
from cortex_agents.memory._depth import forward_longest_paths, longest_paths
from cortex_agents.memory._index_columns import IndexColumns
from cortex_agents.memory._view import IndexView
from cortex_agents.substrate._branch import INDEX_FIELDS
from cortex_agents.substrate._events import (
    EdgeAdded,
    EdgeRemoved,
    Event,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
)
from cortex_agents.substrate._records import SETTLED, EdgeRecord, NodeId, NodeRecord

if TYPE_CHECKING:
    from cortex_agents.substrate._budget import DerivedBudget
    from cortex_agents.substrate._log import SubstrateLog
    from cortex_agents.substrate._state import GraphState

__all__ = ["MEMORY_INDEX", "IndexView", "MemoryIndex", "on_branch"]

MEMORY_INDEX: Final = "cortex_agents.memory._index"
"""The key the memory index is registered under on a branch (``log.derived``)."""
_NODE_EVENTS: Final = (StageStarted, StageFailed, NodeRetired, ToolCallMade)
_IGNORED: Final = (RewriteAdmitted, RewriteRejected, RewriteApplied, RewriteBudgetSet)
_ID, _KIND, _STATUS, _CAPTURED, _COMPLETED, _HELD_OUTPUT = map(
    attrgetter, ("id", "kind", "status", "captured_at", "completed_at", "held_output")
)
_SOURCE, _TARGET = attrgetter("source"), attrgetter("target")


def on_branch(log: SubstrateLog) -> IndexView:
    """The view of ``log``'s branch's memory index as of ``log``'s length.

    The branch creates the index on first use (or again, after its budget
    evicted it) with the branch's own budget, so the index's caches are kinds
    of it (:data:`~cortex_agents.substrate._branch.INDEX_LIMITS`): one bound,
    one owner, what :meth:`~cortex_agents.substrate._branch.Branch.sizes` reports.
    """
    budget = log.branch.budget
    view: IndexView = log.derived(MEMORY_INDEX, lambda: MemoryIndex(budget))
    return view


class MemoryIndex(IndexColumns):
    """The memory index of one branch: takes events in, forks, answers views.

    Its columns (nodes, edges and settle facts by ordinal, with the tick of
    each fact) and their read side (compiled adjacency, the fields kept per
    extractor) are :class:`~cortex_agents.memory._index_columns.IndexColumns`'.

    Attributes:
        length: How many events it has taken in.
        lock: Guards every change (extension, fields catching up).
    """

    # -- the Derived seam ----------------------------------------------------------------
    def extend(self, events: Sequence[Event], state: GraphState) -> None:
        """Take in the next ``events``; ``state`` is the materialized state after them.

        Raises:
            InvalidEvent: an event the index cannot apply; the index is unusable from then on.
        """
        with self.lock:
            self._usable()
            try:
                with paused_gc():
                    self._take(events, state)
                if len(self.ids) != len(state.nodes) or self.live_edges != len(state.edges):
                    raise InvalidEvent(
                        self.length + len(events) - 1,
                        f"the memory index holds {len(self.ids)} nodes and {self.live_edges} "
                        f"edges, the state {len(state.nodes)} and {len(state.edges)}",
                    )
            except InvalidEvent as exc:
                self._broken = str(exc)
                raise
            except Exception as exc:  # a bug must not leave a half-extended index in use
                self._broken = f"{type(exc).__name__}: {exc}"
                raise
            self.length += len(events)

    def at(self, length: int) -> IndexView:
        """The immutable view of the first ``length`` events (``length <= self.length``)."""
        with self.lock:
            self._usable()
            if not 0 <= length <= self.length:
                raise InvalidEvent(length, f"the memory index has taken in {self.length} events")
            n = int(np.searchsorted(self.scheduled.prefix(), length))
            edges = int(np.searchsorted(self.edge_tick.prefix(), length))
            removals = bisect_left(self.removal_ticks, length)
        return IndexView(self, length, n, edges, removals)

    def fork(self, length: int, budget: DerivedBudget | None = None) -> MemoryIndex:
        """A new index of the first ``length`` events, for a branch forked there.

        Copies (numpy prefixes, list slices) instead of re-reading the events:
        no output is extracted, tokenised or embedded again. ``budget``: the
        forked branch's, where the new index keeps its caches (``None``: its own).
        """
        with self.lock:
            self._usable()
            view = self.at(length)
            n, e = view.n, view.edges
            ready = int(np.searchsorted(self.ready_tick.prefix(), length))
            other = MemoryIndex(budget)
            other.length = length
            other.ids = self.ids[:n]
            other.pos = {node_id: i for i, node_id in enumerate(other.ids)}
            other.kind_lookup = dict(self.kind_lookup)
            other.kind_names = list(self.kind_names)
            for name in ("kinds", "scheduled", "captured_us", "completed_us"):
                setattr(other, name, getattr(self, name).copy(n))
            for name in ("completed_tick", "settled_tick", "output_tick"):
                setattr(other, name, getattr(self, name).capped(n, length))
            other.outputs = self.outputs[:n]
            other.ready = self.ready[:ready]
            other.ready_tick = self.ready_tick.copy(ready)
            other.order = self.order.fork(n, self.ids[n:])
            other.depths = self.depths.fork(n, length)
            other.src, other.dst = self.src[:e], self.dst[:e]
            other.src_col, other.dst_col = self.src_col.copy(e), self.dst_col.copy(e)
            other.edge_tick = self.edge_tick.copy(e)
            other.removed_tick = self.removed_tick.capped(e, length)
            other.removed = {k: t for k, t in self.removed.items() if k < e and t < length}
            kept = [
                (t, k)
                for t, k in zip(self.removal_ticks, self.removal_edges, strict=True)
                if t < length
            ]
            other.removal_ticks = [t for t, _ in kept]
            other.removal_edges = [k for _, k in kept]
            if e >= self.bulk.edges:  # the bulk arrays are never written: shared
                other.bulk = self.bulk
                other.out, other._copied_out = _cut(self.out, n, e, self.src)
                other.inc, other._copied_inc = _cut(self.inc, n, e, self.dst)
                other._shared_below = n
                # the fork shares the other lists of its nodes: both sides copy before writing
                self._shared_below = max(self._shared_below, n)
                self._copied_out.clear()
                self._copied_inc.clear()
            else:  # a fork inside the bulk: the bulk of its own first edges, no later lists
                other.bulk = Adjacency.of(other.src_col.data[:e], other.dst_col.data[:e], n)
                other.out = [None] * n
                other.inc = [None] * n
            other.live_edges = e - len(other.removed)
            for extractor, kind, held in self.kept_per_extractor():
                key = (other._token, extractor, kind)
                other.budget.put(INDEX_FIELDS, key, held.fork(self, n, ready, length))
            return other

    @classmethod
    def of_records(cls, nodes: Collection[NodeRecord], edges: Sequence[EdgeRecord]) -> IndexView:
        """The index of a snapshot built by hand (every fact at tick 0; the view at length 1).

        ``nodes`` and ``edges`` are a consistent topology (a
        :class:`~cortex_agents.memory._snapshot.MemorySnapshot`'s, which calls
        this: taking records rather than the snapshot keeps the index below
        it, issue 25). Built in whole-array passes: the nodes' columns, the
        edges', then every depth by one Kahn pass.

        Raises:
            CycleError: the topology has a cycle.
        """
        with paused_gc():
            return cls._of_records(nodes, edges)

    @classmethod
    def _of_records(cls, records: Collection[NodeRecord], edges: Sequence[EdgeRecord]) -> IndexView:
        # each field of every record read by one C-level pass (`map` over an attribute
        # getter), not a Python expression per node: at 1,000,000 nodes those were seconds
        index = cls()
        nodes = list(records)
        count = len(nodes)
        zeros = np.zeros(count, dtype=np.int64)
        index._add_nodes(
            list(map(_ID, nodes)),
            list(map(_KIND, nodes)),
            list(map(to_micros, map(_CAPTURED, nodes))),
            zeros,
        )
        completed = list(map(_COMPLETED, nodes))
        done: Any = np.fromiter(
            compress(range(count), map(is_not, completed, repeat(None))), np.int64
        )
        if len(done) == count:  # (every node completed: no gather)
            done = slice(0, count)
        else:
            completed = list(map(completed.__getitem__, done.tolist()))
        index.completed_us.data[done] = list(map(to_micros, completed))
        index.completed_tick.data[done] = 0
        settled = compress(range(count), map(SETTLED.__eq__, map(_STATUS, nodes)))
        index.settled_tick.data[np.fromiter(settled, np.int64)] = 0
        index._outputs(range(count), list(map(_HELD_OUTPUT, nodes)), zeros)
        pos = index.pos.__getitem__
        index._add_edges(
            list(map(pos, map(_SOURCE, edges))),
            list(map(pos, map(_TARGET, edges))),
            np.zeros(len(edges), dtype=np.int64),
        )
        index._depths_from_scratch()
        index.length = 1
        return index.at(1)

    # -- events --------------------------------------------------------------------------
    def _take(self, events: Sequence[Event], state: GraphState) -> None:
        """Take in a batch: its nodes, edges and outputs each in one pass over arrays, then
        the edges' effect on depths, event by event (a depth holds from a tick on).

        A batch is read first (:class:`_Batch`), up to its first event the index
        cannot apply; what comes before that event is applied, then the error raised.
        The outputs held are the state's records' held forms (compact JSON,
        :mod:`~cortex_agents.substrate._compact`), the very objects the records
        hold: a completed node settles once, so its record holds what its event carried.
        """
        batch = _Batch(self, events)
        self._add_nodes(batch.ids, batch.kinds, batch.captured, batch.node_ticks)
        e = len(self.src)
        added = [(u, v) for _, u, v, adds in batch.links if adds]
        self._add_edges(
            [u for u, _ in added],
            [v for _, v in added],
            [t for t, _, _, adds in batch.links if adds],
        )
        seen = [e]  # edges as of the event at hand: those added before it and itself
        targets = self._targets(seen)
        for tick, u, v, adds in batch.links:  # depths in event order, each edge seen as of then
            if adds:
                e += 1
                value = self.depths.value.data
                if value[u] >= value[v]:
                    seen[0] = e
                    self.depths.deepen(v, int(value[u]) + 1, tick, targets)
            else:
                self._unlink(u, v, tick, e)
        settled = batch.settled
        if settled:
            at = np.asarray(settled, dtype=np.int64)
            ticks = np.asarray(batch.settle_ticks, dtype=np.int64)
            self.completed_us.data[at] = batch.settle_us
            self.completed_tick.data[at] = ticks
            self.settled_tick.data[at] = ticks
            records, ids = state.nodes, self.ids
            self._outputs(settled, [records[ids[i]].held_output for i in settled], ticks)
        if batch.error is not None:
            raise batch.error

    def _add_nodes(self, ids: list[NodeId], kinds: list[str], captured: Any, ticks: Any) -> None:
        """Append nodes (ids not held yet) with their kinds, capture times and scheduling ticks."""
        count = len(ids)
        if not count:
            return
        start = len(self.ids)
        end = start + count
        self.ids.extend(ids)
        self.pos.update(zip(ids, range(start, end), strict=True))
        lookup = self.kind_lookup
        for kind in dict.fromkeys(kinds):
            if kind not in lookup:
                lookup[kind] = len(self.kind_names)
                self.kind_names.append(kind)
        self.kinds.extend(list(map(lookup.__getitem__, kinds)))
        self.scheduled.extend(ticks)
        self.captured_us.extend(captured)
        self.completed_us.pad(end, 0)
        for column in (self.completed_tick, self.settled_tick, self.output_tick):
            column.pad(end, NEVER)
        self.outputs.extend([None] * count)
        self.order.extend(ids)
        self.out.extend(repeat(None, count))  # a list once the node has a later edge
        self.inc.extend(repeat(None, count))
        self.depths.extend(np.asarray(ticks, dtype=np.int64))

    def _add_edges(self, src: list[int], dst: list[int], ticks: Any) -> None:
        """Append edges (ordinals in this order) with the ticks they were added at."""
        count = len(src)
        if not count:
            return
        e = len(self.src)
        self.src.extend(src)
        self.dst.extend(dst)
        self.src_col.extend(src)
        self.dst_col.extend(dst)
        self.edge_tick.extend(ticks)
        self.removed_tick.pad(e + count, NEVER)
        self.live_edges += count
        if not e:  # the first edges: the bulk, sorted into arrays in numpy
            n = len(self.ids)
            self.bulk = Adjacency.of(self.src_col.data[:count], self.dst_col.data[:count], n)
            return
        out, inc = self.out, self.inc
        shared = self._shared_below
        for k, (u, v) in enumerate(zip(src, dst, strict=True), e):
            _append(out, u, k, shared, self._copied_out)
            _append(inc, v, k, shared, self._copied_inc)

    def _outputs(self, nodes: list[int] | range, outputs: list[Any], ticks: Any) -> None:
        """Outputs arriving, in this order, at these ticks."""
        held = self.outputs
        if isinstance(nodes, range) and nodes.step == 1 and len(nodes) == len(outputs):
            held[nodes.start : nodes.stop] = outputs  # (a snapshot's: every node at once)
            self.output_tick.data[nodes.start : nodes.stop] = ticks
        else:
            for i, output in zip(nodes, outputs, strict=True):
                held[i] = output
            self.output_tick.data[nodes] = ticks
        self.ready.extend(nodes)
        self.ready_tick.extend(ticks)

    def edge_list(self, relation: str, node: int) -> list[int]:
        """Ordinals of ``node``'s edges out (``relation`` ``"out"``) or in (``"in"``), in order."""
        bulk = self.bulk.out if relation == "out" else self.bulk.inc
        later = (self.out if relation == "out" else self.inc)[node]
        held = bulk.edges_of(node)
        return held + later if later else held

    def _sources(self, limit: list[int]) -> Callable[[int], list[int]]:
        """Live sources of a node among the first ``limit[0]`` edges (read at each call)."""
        return _ends(self.bulk.inc, self.inc, self.src, self.removed, limit)

    def _targets(self, limit: list[int]) -> Callable[[int], list[int]]:
        """Live targets of a node among the first ``limit[0]`` edges (read at each call)."""
        return _ends(self.bulk.out, self.out, self.dst, self.removed, limit)

    def _unlink(self, u: int, v: int, tick: int, limit: int) -> None:
        # the shorter of the two lists holding the edge: removing every edge of a node of
        # degree d (a rewrite reattaching a fan-out) must not cost O(d) each; edges from
        # ordinal `limit` on were added after this removal (later in its batch)
        out, inc = self.edge_list("out", u), self.edge_list("in", v)
        for e in reversed(out if len(out) <= len(inc) else inc):
            if e < limit and self.src[e] == u and self.dst[e] == v and e not in self.removed:
                self.removed[e] = tick
                self.removed_tick.data[e] = tick
                self.removal_ticks.append(tick)
                self.removal_edges.append(e)
                self.live_edges -= 1
                self.depths.update(v, tick, self._sources([limit]), self._targets([limit]))
                return
        raise InvalidEvent(
            tick, f"the memory index holds no edge {self.ids[u]!r} -> {self.ids[v]!r}"
        )

    def _depths_from_scratch(self) -> None:
        """Every depth by one Kahn pass (a snapshot made by hand); a cycle is an error."""
        n, edges = len(self.ids), len(self.src)
        found = forward_longest_paths(self.src_col.data[:edges], self.dst_col.data[:edges], n)
        if found is not None:
            self.depths.value.data[:n] = found
            return
        ids, dst = self.ids, self.dst
        successors = [[dst[e] for e in self.edge_list("out", u)] for u in range(n)]
        depth, stuck = longest_paths(successors)
        if stuck:
            from cortex_agents.memory._influence import find_cycle

            relation = {ids[u]: [ids[v] for v in successors[u]] for u in range(len(ids))}
            raise CycleError(find_cycle(relation, {ids[i] for i in stuck}))
        self.depths.value.data[: len(depth)] = depth


class _Batch:
    """A batch of events read once, in order: what each kind of event adds, by ordinal.

    Reading stops at the first event the index cannot apply (a node scheduled
    twice, an unknown node, a second completion, an unknown event type): the
    events before it are applied, then :attr:`error` is raised. Edges removed
    are checked when applied (:meth:`MemoryIndex._unlink`), in event order.
    """

    __slots__ = (
        "captured",
        "error",
        "ids",
        "kinds",
        "links",
        "node_ticks",
        "settle_ticks",
        "settle_us",
        "settled",
    )

    def __init__(self, index: MemoryIndex, events: Sequence[Event]) -> None:
        self.ids: list[NodeId] = []
        self.kinds: list[str] = []
        self.captured: list[int] = []
        self.node_ticks: list[int] = []
        self.links: list[tuple[int, int, int, bool]] = []  # (tick, u, v, added?) in event order
        self.settled: list[int] = []
        self.settle_ticks: list[int] = []
        self.settle_us: list[int] = []
        self.error: InvalidEvent | None = None
        try:
            self._read(index, events)
        except InvalidEvent as exc:
            self.error = exc

    def _read(self, index: MemoryIndex, events: Sequence[Any]) -> None:  # (classes checked below)
        # new nodes enter `pos` as they are read (the index is unusable after an error)
        pos = index.pos
        get = pos.get
        first = len(index.ids)
        settled_tick, settled_now = index.settled_tick.data, set()
        codes: dict[type, int] = {}  # event class -> what to do (by isinstance, once per class)
        ids, ticks, links = self.ids, self.node_ticks, self.links
        tick = index.length

        def known(node_id: str) -> int:
            i = get(node_id)
            if i is None:
                raise InvalidEvent(tick, f"the memory index holds no node {node_id!r}")
            return i

        for tick, event in enumerate(events, index.length):  # `known` reads `tick`
            code = codes.get(type(event))
            if code is None:
                code = codes[type(event)] = _code(event)
            if code == _SCHEDULED:
                node_id = event.node_id
                if node_id in pos:
                    raise InvalidEvent(tick, f"the memory index already holds {node_id!r}")
                pos[node_id] = first + len(ids)
                ids.append(node_id)
                self.kinds.append(event.kind)
                self.captured.append(to_micros(event.at))
                ticks.append(tick)
            elif code in (_ADDED, _REMOVED):
                u, v = get(event.source), get(event.target)
                if u is None or v is None:
                    u, v = known(event.source), known(event.target)
                links.append((tick, u, v, code == _ADDED))
            elif code == _NODE:
                known(event.node_id)  # status only: views read it from the state
            elif code == _SETTLED:
                i = known(event.node_id)
                if i in settled_now or (i < first and settled_tick[i] != NEVER):
                    raise InvalidEvent(tick, f"the memory index already settled {event.node_id!r}")
                settled_now.add(i)
                self.settled.append(i)
                self.settle_ticks.append(tick)
                self.settle_us.append(to_micros(event.at))
            elif code == _UNKNOWN:
                raise InvalidEvent(tick, f"the memory index cannot apply {type(event).__name__}")


_SCHEDULED, _ADDED, _REMOVED, _NODE, _SETTLED, _SKIPPED, _UNKNOWN = range(7)


def _code(event: object) -> int:
    """What a batch does with events of ``event``'s class."""
    for cls, code in (
        (NodeScheduled, _SCHEDULED),
        (EdgeAdded, _ADDED),
        (EdgeRemoved, _REMOVED),
        (_NODE_EVENTS, _NODE),
        (StageCompleted, _SETTLED),
        (_IGNORED, _SKIPPED),
    ):
        if isinstance(event, cls):
            return code
    return _UNKNOWN


def _ends(
    bulk: Grouped,
    later: list[list[int] | None],
    far: list[int],
    removed: dict[int, int],
    limit: list[int],
) -> Callable[[int], list[int]]:
    """A node's live neighbours (``far`` ends) among the first ``limit[0]`` edges: bulk, then
    later ones. The limit is read at each call: a batch makes one and moves its limit."""
    ptr, grouped = bulk.lists()
    held = len(ptr) - 1

    def ends(node: int) -> list[int]:
        upto = limit[0]
        edges = grouped[ptr[node] : ptr[node + 1]] if node < held else []
        more = later[node]
        if more:
            edges += more
        return [far[e] for e in edges if e < upto and e not in removed]

    return ends


def _cut(
    lists: list[list[int] | None], n: int, e: int, ends: list[int]
) -> tuple[list[list[int] | None], set[int]]:
    """The first ``n`` per-node edge lists without the edges from ordinal ``e`` on, and the cut ones.

    Each list holds increasing ordinals, so a later edge sits at the end of
    the list of its endpoint (``ends[k]`` for edge ``k``): only those lists
    are cut (new lists, the fork's own); every other list is shared with the
    index forked from, and copied by whichever side appends to it first
    (:func:`_append`). A fork costs its nodes' references and the later
    edges, not a copy of every list: a retried step or parallel tool calls
    on one state fork near the end.
    """
    kept = lists[:n]
    cut = set()
    for node in set(ends[e:]):
        if node < n:
            edges = kept[node]
            assert edges is not None  # it holds edge `e` or a later one
            kept[node] = edges[: bisect_left(edges, e)]
            cut.add(node)
    return kept, cut


def _append(
    lists: list[list[int] | None], node: int, edge: int, shared_below: int, copied: set[int]
) -> None:
    """Append ``edge`` to ``node``'s list; a list that may be shared is copied first, once."""
    held = lists[node]
    if held is None:
        lists[node] = [edge]
        if node < shared_below:
            copied.add(node)
    elif node < shared_below and node not in copied:
        lists[node] = [*held, edge]
        copied.add(node)
    else:
        held.append(edge)
