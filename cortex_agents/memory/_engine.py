"""The vectorised pipeline users run: numpy (and scipy for influence) over an index view.

Same steps, same floats as :mod:`cortex_agents.reference`, over the
snapshot's :class:`~cortex_agents.memory._index.IndexView` (a prefix view of
the run's incrementally kept index, or an index built for a snapshot made by
hand), but:

* the walk is one BFS over the view's adjacency lists, O(cone);
* influence is one sparse unit-lower-triangular solve over the cone, in the
  relation's canonical position order (:mod:`cortex_agents.memory._influence`),
  from the depths the index keeps.
  SuperLU's column-oriented forward substitution adds each node's
  predecessor terms in ascending position, which is the order the reference
  defines, so the two agree bit for bit;
* the Jaccard axis is a ``bincount`` over the query tokens' postings; BM25's
  a pass per query term over that term's posting and the corpus statistics
  the index keeps (:mod:`cortex_agents.memory._lexical_postings`); an
  embedding scorer's axis is one row-wise product of the cached body vectors
  with the query's vector; a :class:`~cortex_agents.memory._scorers.Blend`
  combines its parts, each computed that way; edge support (``WalkSpec.support``)
  is a maximum over the live edges among the candidates; evidence named by the
  query or by the best candidate (``named_evidence``, ``bridge``) is one pass
  over the interned evidence names the index keeps (:mod:`cortex_agents.memory._entities`);
  the feedback pass (``feedback``) is one more BM25 pass, with a query made of
  the first candidates' bodies (:mod:`cortex_agents.memory._feedback`);
  diversity (``diversity="mmr"``) reorders the first ``mmr_depth`` of the
  final order (first occurrences only, with ``distinct_bodies``) by the
  reference's own function (:mod:`cortex_agents.memory._diversity`);
* the limit selects the top ``k`` by partition and sorts only those (plus
  every tie at the cut), which returns exactly the first ``k`` of the full
  sort; node ids compare through order-preserving labels.

Walks and influence maps are memoised in a :class:`QueryMemo` (a handle
keeps one), keyed by origin, direction and alpha; each of its tables keeps
the :data:`MEMO_ENTRIES` most recently used entries (each is O(cone) arrays,
and a long-lived handle may be asked from any number of origins).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from cortex_agents._timestamps import to_micros
from cortex_agents.errors import UnknownNode
from cortex_agents.memory._diversity import mmr_order
from cortex_agents.memory._embedding import VectorScorer
from cortex_agents.memory._entities import names_in
from cortex_agents.memory._feedback import FEEDBACK_SCORER, feedback_text
from cortex_agents.memory._lexical import BM25
from cortex_agents.memory._match import Match, Ranking
from cortex_agents.memory._radix import pair_order
from cortex_agents.memory._scorers import Blend
from cortex_agents.memory._scoring import MICROS_PER_SECOND, clamp_axis
from cortex_agents.memory._semantic import SemanticScorer, TokenJaccard
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._spec import Query, WalkSpec, Weights

if TYPE_CHECKING:
    from cortex_agents.memory._extract import Extractor
    from cortex_agents.memory._fields import FieldsView
    from cortex_agents.memory._view import IndexView, IntArray

__all__ = ["MEMO_ENTRIES", "QueryMemo", "query_vectorised", "rank_vectorised"]

K = TypeVar("K")
V = TypeVar("V")
MEMO_ENTRIES: Final = 16
"""Entries each table of a :class:`QueryMemo` keeps (least recently used out)."""

FloatArray = npt.NDArray[np.float64]
_RELATIONS: Final[dict[str, tuple[str, ...]]] = {
    "ancestors": ("ancestors",),
    "descendants": ("descendants",),
    "bidirectional": ("descendants", "ancestors"),
}


class _Recent(OrderedDict[K, V]):
    """A memo table keeping its :data:`MEMO_ENTRIES` most recently used entries.

    Every read and write takes the table's own lock: a write, its move to
    the end and the evictions it causes are one step, so a table shared by
    the threads of a tool loop never holds more than its bound and never
    evicts an entry twice. Values are computed outside the lock (they are
    pure functions of the view): two threads that miss together both compute
    it, and the later write wins with an equal value.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def recent(self, key: K) -> V | None:
        """The entry under ``key`` (now the most recently used), else ``None``."""
        with self.lock:
            value = self.get(key)
            if value is not None:
                self.move_to_end(key)
            return value

    def __setitem__(self, key: K, value: V) -> None:
        with self.lock:
            super().__setitem__(key, value)
            self.move_to_end(key)
            while len(self) > MEMO_ENTRIES:
                self.popitem(last=False)


@dataclass(frozen=True, slots=True)
class _Walk:
    """A BFS from one origin in one relation: reached nodes (origin excluded) and hops."""

    nodes: IntArray
    hops: IntArray


class _Columns:
    """What a view holds of a candidate set that no query changes, memoised with it.

    Each column is read from the view when a query first needs it: a query
    that filters no kinds never gathers them.

    Attributes:
        graph: The graph axis, clamped.
        temporal: ``(reference, time scale) -> temporal axis``.
    """

    __slots__ = ("_index", "_kinds", "_nodes", "_observed", "_settled", "graph", "temporal")

    def __init__(self, index: IndexView, nodes: IntArray, graph: FloatArray) -> None:
        self._index = index
        self._nodes = nodes
        self._settled: npt.NDArray[np.bool_] | None = None
        self._kinds: IntArray | None = None
        self._observed: IntArray | None = None
        self.graph = graph
        self.temporal: _Recent[tuple[int, float], FloatArray] = _Recent()

    @property
    def settled(self) -> npt.NDArray[np.bool_]:
        """Whether each candidate had completed."""
        if self._settled is None:
            self._settled = self._index.settled(self._nodes)
        return self._settled

    @property
    def kinds(self) -> IntArray:
        """The interned stage kind of each candidate."""
        if self._kinds is None:
            self._kinds = self._index.kind_ids(self._nodes)
        return self._kinds

    @property
    def observed(self) -> IntArray:
        """When each candidate was observed, in epoch microseconds."""
        if self._observed is None:
            self._observed = self._index.observed_us(self._nodes)
        return self._observed

    def temporal_at(self, reference_us: int, time_scale: float) -> FloatArray:
        """The temporal axis of every candidate, aged from ``reference_us`` (memoised)."""
        key = (reference_us, time_scale)
        found = self.temporal.recent(key)
        if found is None:
            found = self.temporal[key] = _temporal(self.observed, reference_us, time_scale)
        return found


@dataclass
class QueryMemo:
    """Memoised walks and influence maps for one snapshot (each table bounded:
    :data:`MEMO_ENTRIES`, least recently used out).

    Attributes:
        walks: ``(origin, relation) -> _Walk``.
        influence: ``(origin, relation, alpha) -> influence aligned with the walk``.
        merged: ``(origin, direction, prior, alpha) -> (nodes, hops, graph axis)``.
        columns: The same key -> what the view holds of those candidates (:class:`_Columns`).
        influence_computations: How many influence solves ran (for tests and stats).
        lock: Guards :attr:`influence_computations`; each table has a lock of its own.
    """

    walks: _Recent[tuple[int, str], _Walk] = field(default_factory=_Recent)
    influence: _Recent[tuple[int, str, float], FloatArray] = field(default_factory=_Recent)
    merged: _Recent[tuple[int, str, str, float], tuple[IntArray, IntArray, FloatArray]] = field(
        default_factory=_Recent
    )
    columns: _Recent[tuple[int, str, str, float], _Columns] = field(default_factory=_Recent)
    influence_computations: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _fields_of(index: IndexView, extractor: Extractor) -> FieldsView:
    """What ``extractor`` reads of the view's nodes (see :mod:`~cortex_agents.memory._fields`)."""
    # lazy: importing the memory package does not load the fields' modules, only the
    # first query that reads fields does (as when this was `IndexView.fields`)
    from cortex_agents.memory._fields import fields_of

    return fields_of(index, extractor)


def _walk(index: IndexView, relation: str, origin: int, memo: QueryMemo) -> _Walk:
    key = (origin, relation)
    cached = memo.walks.recent(key)
    if cached is None:
        cached = memo.walks[key] = _Walk(*index.walk(relation, origin))
    return cached


def _influence(
    index: IndexView, relation: str, origin: int, alpha: float, memo: QueryMemo
) -> FloatArray:
    """Influence of ``origin`` on each node of its walk, aligned with ``_walk().nodes``.

    One unit-lower-triangular solve over the cone, positions in the canonical
    order of the relation (:mod:`cortex_agents.memory._influence`): (depth, id)
    ascending for descendants, descending for ancestors.
    """
    key = (origin, relation, alpha)
    cached = memo.influence.recent(key)
    if cached is not None:
        return cached
    from scipy.sparse.linalg import spsolve_triangular  # type: ignore[import-untyped]  # no stubs

    walk = _walk(index, relation, origin, memo)
    cone = np.concatenate(([origin], walk.nodes))
    k = len(cone)
    ranked = pair_order(index.depths(cone), index.labels(cone))  # (depth, id) ascending
    if relation == "ancestors":
        ranked = ranked[::-1]
    canonical = cone[ranked]  # the origin comes first
    position = np.empty(index.n, dtype=np.int64)
    position[canonical] = np.arange(k)
    found = index.successors(relation, canonical)
    if found is not None:  # grouped by position already
        counts = found[0]
        columns = np.repeat(np.arange(k, dtype=np.int64), counts)
        rows = position[found[1]]
    else:
        src, dst = index.cone_edges(relation, cone)
        columns, rows = position[src], position[dst]
        counts = np.bincount(columns, minlength=k)
    # alpha / outdeg(u), as the reference computes it; sinks (outdeg 0) own no entries.
    weights = -(alpha / np.maximum(counts, 1).astype(np.float64))
    system = _unit_lower(columns, rows, counts, weights)
    rhs = np.zeros(k, dtype=np.float64)
    rhs[0] = 1.0
    solved = spsolve_triangular(
        system, rhs, lower=True, unit_diagonal=True, overwrite_A=True, overwrite_b=True
    )
    result: FloatArray = np.asarray(solved, dtype=np.float64)[position[walk.nodes]]
    with memo.lock:
        memo.influence[key] = result
        memo.influence_computations += 1
    return result


def _unit_lower(columns: IntArray, rows: IntArray, counts: IntArray, weights: FloatArray) -> Any:
    """The CSC matrix with a unit diagonal and ``weights[j]`` at each ``(rows[i], j = columns[i])``.

    ``k = len(counts)`` columns, column ``j`` holding ``counts[j]`` entries
    below the diagonal. In canonical form (rows ascending within a column, the
    diagonal first), so scipy's solve takes it without sorting: every entry is
    packed as ``column << b | row`` and the packed values sorted once.
    """
    import scipy.sparse as sp  # type: ignore[import-untyped]  # (no stubs) influence only

    k = len(counts)
    bits = max(k - 1, 1).bit_length()
    diagonal = np.arange(k, dtype=np.int64) * ((1 << bits) + 1)  # (j, j)
    packed = np.concatenate((diagonal, (columns << bits) | rows))
    packed.sort()
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts + 1, out=indptr[1:])
    data = np.repeat(weights, counts + 1)
    data[indptr[:-1]] = 1.0  # the diagonal: row j, first in column j
    small = np.int32 if k < 2**31 - 1 else np.int64  # what SuperLU takes (no copy to cast)
    entries = (packed & ((1 << bits) - 1)).astype(small)
    return sp.csc_array((data, entries, indptr.astype(small)), shape=(k, k))


def _merged(
    index: IndexView, origin: int, spec: WalkSpec, memo: QueryMemo
) -> tuple[IntArray, IntArray, FloatArray]:
    """Candidates of the direction with merged hops (min) and graph axis (max)."""
    key = (origin, spec.direction, spec.prior, spec.alpha if spec.prior == "influence" else 0.0)
    cached = memo.merged.recent(key)
    if cached is not None:
        return cached
    relations = _RELATIONS[spec.direction]
    if len(relations) == 1:
        walk = _walk(index, relations[0], origin, memo)
        nodes, hops = walk.nodes, walk.hops
        graph = (
            _influence(index, relations[0], origin, spec.alpha, memo)
            if spec.prior == "influence"
            else None
        )
    else:
        big = np.iinfo(np.int64).max
        hops_all = np.full(index.n, big, dtype=np.int64)
        graph_all = np.zeros(index.n, dtype=np.float64)
        for relation in relations:
            walk = _walk(index, relation, origin, memo)
            np.minimum.at(hops_all, walk.nodes, walk.hops)
            if spec.prior == "influence":
                infl = _influence(index, relation, origin, spec.alpha, memo)
                graph_all[walk.nodes] = np.maximum(graph_all[walk.nodes], infl)
        nodes = np.flatnonzero(hops_all != big)
        hops = hops_all[nodes]
        graph = graph_all[nodes] if spec.prior == "influence" else None
    if graph is None:
        graph = 1.0 / (1 + hops)
    result = (nodes, hops, graph)
    memo.merged[key] = result
    return result


def _columns(
    index: IndexView,
    origin: int,
    spec: WalkSpec,
    nodes: IntArray,
    graph: FloatArray,
    memo: QueryMemo,
) -> _Columns:
    """The view's columns of the candidates :func:`_merged` gave (memoised with them)."""
    key = (origin, spec.direction, spec.prior, spec.alpha if spec.prior == "influence" else 0.0)
    cached = memo.columns.recent(key)
    if cached is None:
        cached = _Columns(index, nodes, _clamp(graph))
        memo.columns[key] = cached
    return cached


def _temporal(observed: IntArray, reference_us: int, time_scale: float) -> FloatArray:
    """``1 / (1 + age / time_scale)``, ages in seconds before ``reference_us`` (never negative)."""
    ages = reference_us - observed
    np.maximum(ages, 0, out=ages)
    temporal: FloatArray = ages / MICROS_PER_SECOND
    temporal /= time_scale  # (in place: the same operations, in the same order, fewer arrays)
    temporal += 1.0
    np.divide(1.0, temporal, out=temporal)
    return temporal


def _beyond_boundary(
    index: IndexView, spec: WalkSpec, boundary_kind: str, origin: int, memo: QueryMemo
) -> npt.NDArray[np.bool_]:
    """Mask of nodes strictly beyond the nearest ``boundary_kind`` nodes, per relation."""
    beyond = np.zeros(index.n, dtype=bool)
    kind = index.kind_id(boundary_kind)
    if kind is None:
        return beyond
    for relation in _RELATIONS[spec.direction]:
        walk = _walk(index, relation, origin, memo)
        hits = index.kind_ids(walk.nodes) == kind
        if not hits.any():
            continue
        nearest = walk.hops[hits].min()
        for boundary in walk.nodes[hits & (walk.hops == nearest)].tolist():
            beyond[_walk(index, relation, boundary, memo).nodes] = True
    return beyond


def _scorer_axis(
    fields: FieldsView, scorer: SemanticScorer, text: str, nodes: IntArray
) -> FloatArray:
    """The clamped semantic axis of ``nodes`` under ``scorer``, vectorised where it can be."""
    if type(scorer) is TokenJaccard:  # exactly ours: a subclass may score differently
        return fields.jaccard(text, nodes)
    if isinstance(scorer, BM25):
        return np.clip(fields.bm25(scorer, text, nodes), 0.0, 1.0)
    if isinstance(scorer, Blend):
        value = np.zeros(len(nodes), dtype=np.float64)
        for part, weight in scorer.parts:
            value = value + weight * _scorer_axis(fields, part, text, nodes)
        return value / scorer.total
    if isinstance(scorer, VectorScorer):
        return fields.cosine(scorer, text, nodes)
    return np.fromiter(
        (clamp_axis(scorer(text, fields.body(i))) for i in nodes.tolist()),
        np.float64,
        len(nodes),
    )


def _semantic(index: IndexView, query: Query, nodes: IntArray) -> FloatArray:
    if not query.text:
        return np.zeros(len(nodes), dtype=np.float64)
    fields = _fields_of(index, query.extractor)
    return np.clip(_scorer_axis(fields, query.scorer, query.text, nodes), 0.0, 1.0)


def _supported(
    index: IndexView, nodes: IntArray, semantic: FloatArray, support: float
) -> FloatArray:
    """Each axis plus ``support`` times the best axis among candidates sharing a live edge."""
    if not len(nodes):
        return semantic
    src, dst = index.cone_edges("descendants", nodes)  # live edges out of a candidate
    inside = np.zeros(index.n, dtype=bool)
    inside[nodes] = True
    keep = inside[dst]
    src, dst = src[keep], dst[keep]
    axis = np.zeros(index.n, dtype=np.float64)
    axis[nodes] = semantic
    best = np.zeros(index.n, dtype=np.float64)
    np.maximum.at(best, src, axis[dst])
    np.maximum.at(best, dst, axis[src])
    supported: FloatArray = np.minimum(semantic + support * best[nodes], 1.0)
    return supported


def _feedback(
    index: IndexView,
    query: Query,
    spec: WalkSpec,
    nodes: IntArray,
    hops: IntArray,
    score: FloatArray,
    semantic: FloatArray,
) -> FloatArray:
    """The semantic axis after the feedback pass (:mod:`cortex_agents.memory._feedback`)."""
    depth = min(spec.feedback_depth, len(nodes))
    cut = -np.partition(-score, depth - 1)[depth - 1]
    near = np.flatnonzero(score >= cut)  # the first `depth`, and every tie at the cut
    first = near[np.lexsort((index.labels(nodes[near]), hops[near], -score[near]))][:depth]
    fields = _fields_of(index, query.extractor)
    assert query.text is not None  # (the caller checked)
    text = feedback_text(query.text, [fields.body(int(nodes[i])) for i in first.tolist()])
    if not text:
        return semantic
    axis = np.clip(fields.bm25(FEEDBACK_SCORER, text, nodes), 0.0, 1.0)
    raised: FloatArray = np.minimum(semantic + spec.feedback * axis, 1.0)
    return raised


def _sorted_places(spec: WalkSpec) -> int | None:
    """How many first places of the order must be sorted: the limit, or the diversity depth if larger."""
    if spec.limit is None or spec.diversity is None:
        return spec.limit
    return max(spec.limit, spec.mmr_depth)


def _diversified(
    index: IndexView,
    query: Query,
    spec: WalkSpec,
    nodes: IntArray,
    score: FloatArray,
    order: IntArray,
    depth: int,
) -> IntArray:
    """``order`` with its first ``depth`` places reordered by :func:`~cortex_agents.memory._diversity.mmr_order`."""
    head = order[:depth]
    fields = _fields_of(index, query.extractor)
    bodies = [fields.body(int(nodes[i])) for i in head.tolist()]
    picked = mmr_order(score[head].tolist(), bodies, spec.mmr_lambda)
    return np.concatenate((head[picked], order[depth:]))


def _fuse(w: Weights, graph: FloatArray, temporal: FloatArray, semantic: FloatArray) -> FloatArray:
    """``(w.graph * graph + w.temporal * temporal + w.semantic * semantic) / w.total``.

    The same operations in the same order (so the same floats), in two arrays.
    """
    score: FloatArray = np.multiply(graph, w.graph)
    part = np.multiply(temporal, w.temporal)
    score += part
    np.multiply(semantic, w.semantic, out=part)
    score += part
    score /= w.total
    return score


def _output(raw: Any, projected: Any) -> Any:
    """What a match carries: the projected slice under a typed projection, else the raw output."""
    return raw if projected is None else projected


def _clamp(values: FloatArray) -> FloatArray:
    """Into [0, 1]: infinities to their end, NaN to 0 (what ``nan_to_num`` then ``clip`` give)."""
    clamped: FloatArray = np.clip(values, 0.0, 1.0)
    np.copyto(clamped, 0.0, where=np.isnan(clamped))
    return clamped


def query_vectorised(
    snapshot: MemorySnapshot,
    origin: str,
    spec: WalkSpec | None = None,
    query: Query | None = None,
    *,
    memo: QueryMemo | None = None,
) -> tuple[Match, ...]:
    """Rank the memory of ``origin`` in ``snapshot`` (the fast engine).

    The matches of :func:`rank_vectorised`; see there.
    """
    return rank_vectorised(snapshot, origin, spec, query, memo=memo).matches


def rank_vectorised(
    snapshot: MemorySnapshot,
    origin: str,
    spec: WalkSpec | None = None,
    query: Query | None = None,
    *,
    memo: QueryMemo | None = None,
) -> Ranking:
    """Rank the memory of ``origin`` in ``snapshot``; only the first ``limit`` become matches.

    ``Ranking.total`` counts every candidate that passed the filters, so a
    caller can say how many were left out without materialising them.

    Args:
        snapshot: The bound snapshot.
        origin: The node whose memory is queried (never a candidate).
        spec: How to walk and rank; defaults to :class:`WalkSpec()`.
        query: What to filter and compare on; defaults to :class:`Query()`.
        memo: Memoised walks and influence to reuse and fill.

    Raises:
        UnknownNode: ``origin`` is not in the snapshot.
        CycleError: the snapshot's topology has a cycle.
    """
    spec = spec or WalkSpec()
    query = query or Query()
    memo = memo if memo is not None else QueryMemo()
    index = snapshot.index
    start = index.position(origin)
    if start is None:
        raise UnknownNode(origin)

    nodes, hops, graph = _merged(index, start, spec, memo)
    columns = _columns(index, start, spec, nodes, graph, memo)
    keep, fields = _filtered(index, start, spec, query, nodes, hops, columns, memo)
    every = bool(keep.all())  # (no filter left anything out: no copies)
    if every:
        graph = columns.graph
    else:
        nodes, hops, graph = nodes[keep], hops[keep], columns.graph[keep]
    temporal = _temporal_axis(snapshot, spec, columns, keep, every, nodes)
    semantic = _semantic_axis(index, query, spec, nodes)
    w = spec.weights
    score = _fuse(w, graph, temporal, semantic)

    if query.text and spec.bridge > 0 and len(nodes):
        semantic = _bridged(index, query, spec, nodes, hops, score, semantic)
        score = _fuse(w, graph, temporal, semantic)
    if query.text and spec.feedback > 0 and len(nodes):
        semantic = _feedback(index, query, spec, nodes, hops, score, semantic)
        score = _fuse(w, graph, temporal, semantic)
    order = _order(index, query, spec, nodes, hops, score)
    if spec.limit is not None:
        order = order[: spec.limit]

    fields = fields or _fields_of(index, query.extractor)
    matches = _matches(
        snapshot, index, fields, order, nodes, hops, (score, graph, temporal, semantic)
    )
    return Ranking(matches, len(nodes))


def _filtered(
    index: IndexView,
    start: int,
    spec: WalkSpec,
    query: Query,
    nodes: IntArray,
    hops: IntArray,
    columns: _Columns,
    memo: QueryMemo,
) -> tuple[npt.NDArray[np.bool_], FieldsView | None]:
    """Which candidates pass every filter, and the fields read to filter on a routing key."""
    keep = np.ones(len(nodes), dtype=bool)
    if spec.max_distance is not None:
        keep &= hops <= spec.max_distance
    if spec.past_boundary is not None:
        keep &= _beyond_boundary(index, spec, spec.past_boundary, start, memo)[nodes]
    if spec.scope == "settled_only":
        keep &= columns.settled
    if query.kinds is not None:
        wanted = [index.kind_id(k) for k in query.kinds]
        keep &= np.isin(columns.kinds, [k for k in wanted if k is not None])
    if query.exclude_kinds:
        unwanted = [index.kind_id(k) for k in query.exclude_kinds]
        keep &= ~np.isin(columns.kinds, [k for k in unwanted if k is not None])
    fields = None
    if query.routing_key is not None:
        fields = _fields_of(index, query.extractor)
        key_id = fields.routing_lookup.get(query.routing_key, -1)
        keep &= fields.routing_ids(nodes) == key_id
    return keep, fields


def _temporal_axis(
    snapshot: MemorySnapshot,
    spec: WalkSpec,
    columns: _Columns,
    keep: npt.NDArray[np.bool_],
    every: bool,
    nodes: IntArray,
) -> FloatArray:
    """The kept candidates' temporal axis, aged from the snapshot's time or the newest's."""
    if spec.time_reference == "newest" and len(nodes):
        observed = columns.observed[keep]
        return _temporal(observed, int(observed.max()), spec.time_scale)
    temporal = columns.temporal_at(to_micros(snapshot.captured_at), spec.time_scale)
    return temporal if every else temporal[keep]


def _semantic_axis(index: IndexView, query: Query, spec: WalkSpec, nodes: IntArray) -> FloatArray:
    """The kept candidates' semantic axis: text match, named evidence, then edge support."""
    semantic = _semantic(index, query, nodes)
    if query.text and spec.named_evidence > 0:
        hit = _fields_of(index, query.extractor).named(nodes, names_in(query.text))
        semantic = np.minimum(semantic + spec.named_evidence * hit, 1.0)
    if spec.support > 0:
        semantic = _supported(index, nodes, semantic, spec.support)
    return semantic


def _bridged(
    index: IndexView,
    query: Query,
    spec: WalkSpec,
    nodes: IntArray,
    hops: IntArray,
    score: FloatArray,
    semantic: FloatArray,
) -> FloatArray:
    """The semantic axis after the bridge: a gain where the best match names the evidence."""
    tied = np.flatnonzero(score == score.max())
    top = int(tied[np.lexsort((index.labels(nodes[tied]), hops[tied]))][0])
    bridged = _fields_of(index, query.extractor)
    hit = bridged.named(nodes, names_in(bridged.body(int(nodes[top]))))
    hit[top] = 0.0  # the best match gains nothing from naming its own evidence
    bridged_axis: FloatArray = np.where(hit > 0, np.minimum(semantic + spec.bridge, 1.0), semantic)
    return bridged_axis


def _order(
    index: IndexView,
    query: Query,
    spec: WalkSpec,
    nodes: IntArray,
    hops: IntArray,
    score: FloatArray,
) -> IntArray:
    """Positions of the candidates in rank order, diversified if asked: all, or the first places."""
    chosen = np.arange(len(nodes))
    if spec.distinct_bodies:  # repeats go after every first occurrence: the whole order
        order = chosen[np.lexsort((index.labels(nodes), hops, -score))]
        ids = _fields_of(index, query.extractor).body_ids(nodes[order])
        repeat = np.ones(len(order), dtype=bool)
        repeat[np.unique(ids, return_index=True)[1]] = False  # each id's first place
        repeat[ids < 0] = False  # an empty body is never a repeat
        order = np.concatenate((order[~repeat], order[repeat]))
        new = len(order) - int(repeat.sum())  # the first `new` places hold no repeat
    else:
        places = _sorted_places(spec)
        if places is not None and places < len(nodes):
            cut = -np.partition(-score, places - 1)[places - 1]
            chosen = np.flatnonzero(score >= cut)
        picked = nodes[chosen]  # id labels of these few only
        order = chosen[np.lexsort((index.labels(picked), hops[chosen], -score[chosen]))]
        new = len(order)
    if spec.diversity == "mmr" and len(order):  # the first new bodies only, as the reference
        order = _diversified(index, query, spec, nodes, score, order, min(spec.mmr_depth, new))
    return order


def _matches(
    snapshot: MemorySnapshot,
    index: IndexView,
    fields: FieldsView,
    order: IntArray,
    nodes: IntArray,
    hops: IntArray,
    axes: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
) -> tuple[Match, ...]:
    """The matches at ``order``; ``axes`` are the score, graph, temporal and semantic columns."""
    score, graph, temporal, semantic = axes
    matches = []
    for i in order.tolist():
        node_index = int(nodes[i])
        node = snapshot.nodes[index.node_id(node_index)]
        matches.append(
            Match(
                node_id=node.id,
                kind=node.kind,
                status=node.status,
                hops=int(hops[i]),
                score=float(score[i]),
                graph=float(graph[i]),
                temporal=float(temporal[i]),
                semantic=float(semantic[i]),
                routing_key=fields.routing_key(node_index),
                body_text=fields.body(node_index),
                evidence=fields.evidence(node_index),
                output=_output(node.output, fields.projected(node_index)),
            )
        )
    return tuple(matches)
