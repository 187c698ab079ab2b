"""What one extractor reads of every node, kept incrementally, and read as of a view.

A :class:`FieldsIndex` belongs to one :class:`~cortex_agents.memory._index.MemoryIndex`
and one extractor (:func:`fields_index`; :func:`fields_of` reads it as of a view).
It reads each node's output once, when the output arrives (in the order
outputs arrived; it catches up lazily, on the first query that needs it): routing key, body text, evidence, the projected slice; for the
Jaccard scorer the body's tokens, appended to an inverted index (so a text
query costs one ``bincount`` over its tokens' postings instead of tokenising
every candidate — DESIGN §9), read when a Jaccard query first needs them
(:meth:`FieldsIndex.token_postings`); for BM25, the body's term frequencies under the
lexical tokeniser and the corpus statistics (:mod:`~cortex_agents.memory._lexical_postings`,
read lazily too); and, per embedding scorer, the body's vector,
one row per *distinct* body text (by its interned id: nodes with the same
body share a row, so a run whose outputs repeat does not keep ``d`` floats
per node), filled from the scorer's embedding cache (a query embeds only its
own text).

A node whose output had not arrived as of a view reads as the extractor
reads ``None``: its routing key is the extractor's, else the node's kind; its
body and vector those of the extractor's empty fields. :class:`FieldsView`
applies that rule, so a view never sees an output that arrived after it.

This module sits above the index and its views (issue 25: no import cycle):
the index keeps a :class:`FieldsIndex` per extractor without naming its class
(:meth:`~cortex_agents.memory._index_columns.IndexColumns.per_extractor`),
and a view's fields are :func:`fields_of` it, not a method of the view.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from itertools import compress, repeat
from operator import eq, is_
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._batch_tokens import token_sets
from cortex_agents.memory._columns import Column, Rows
from cortex_agents.memory._embedding import Matrix, VectorScorer, cosine_axis
from cortex_agents.memory._entities import EvidenceNames, Name
from cortex_agents.memory._extract import ExtractedFields, Extractor, read_outputs
from cortex_agents.memory._lexical import BM25
from cortex_agents.memory._lexical_postings import LexicalPostings
from cortex_agents.memory._semantic import tokenize
from cortex_agents.substrate._compact import release

if TYPE_CHECKING:
    from cortex_agents.memory._index_columns import IndexColumns
    from cortex_agents.memory._view import IndexView, IntArray

__all__ = ["FieldsIndex", "FieldsView", "fields_index", "fields_of"]

FloatArray = npt.NDArray[np.float64]
_EMPTY: Final = ExtractedFields(None, "", ())
_VECTORS_KEPT: Final = 4
_CHUNK: Final = 1024
"""Rows a cosine computes at once (the product is computed row by row: chunks change no bit)."""


class _Vectors:
    """Body vectors of one scorer: a row per interned body text (by body id).

    A :class:`~cortex_agents.memory._embedding.RowSource`: its rows are lent to
    the scorer's in-process cache, which then holds no copy of them.
    """

    __slots__ = ("__weakref__", "done", "empty", "rows")

    def __init__(self) -> None:
        self.done = 0  # body ids below this have their row
        self.rows = Rows()
        self.empty: Matrix | None = None  # the vector of the extractor's empty body

    def take(self, rows: Sequence[int]) -> Matrix:
        """A copy of these rows (each written once, before it was lent; the array only grows)."""
        data = self.rows.data
        assert data is not None
        taken: Matrix = data[np.asarray(rows, dtype=np.int64)]  # (fancy indexing copies)
        return taken


class FieldsIndex:
    """The fields one extractor reads of one memory index's nodes, by ordinal.

    Changed only under the memory index's lock (:meth:`catch_up`).

    Attributes:
        extractor: The extractor.
        empty: What it reads of a node without output (``extractor(None)``).
        done: How many arrived outputs it has read.
        routing_lookup: Routing key -> interned id.
    """

    def __init__(self, extractor: Extractor) -> None:
        self.extractor = extractor
        self.empty = extractor(None) or _EMPTY
        self.empty_tokens = tokenize(self.empty.body_text)
        self.done = 0
        self.posted = 0  # outputs in the Jaccard postings (a prefix of the `done` ones)
        self.routing_lookup: dict[str, int] = {}
        self.routing_keys: list[str] = []
        self.routing = Column()
        self.bodies: list[str] = []
        self.evidence: list[tuple[str, ...]] = []
        self.projected: list[Any] = []
        self.counts = Column()
        self.body_ids = Column()  # per node: its body text, interned (-1: an empty body)
        # body id -> text: the extractor's empty body (a node without output) first, when it
        # has text; the text -> id lookup is its inverse, made when a later batch needs it
        self.body_texts: list[str] = [self.empty.body_text] if self.empty.body_text else []
        self._body_lookup: dict[str, int] | None = None
        self.vocabulary: dict[str, int] = {}
        self.postings: list[Column] = []
        self._kind_routing: dict[int, int] = {}
        self._vectors: OrderedDict[str, _Vectors] = OrderedDict()
        self._lexical: LexicalPostings | None = None
        self._names: EvidenceNames | None = None

    def fork(self, parent: IndexColumns, n: int, ready: int, length: int) -> FieldsIndex:
        """A copy for the fork of ``parent`` at ``length`` events (``n`` nodes, ``ready`` outputs).

        Fields of outputs that arrived after the fork point are left out of
        the postings and count as not read; rows and list entries of those
        nodes stay behind but are never read before the fork reads them anew.
        """
        other = FieldsIndex.__new__(FieldsIndex)
        other.extractor, other.empty, other.empty_tokens = (
            self.extractor,
            self.empty,
            self.empty_tokens,
        )
        other.done = min(self.done, ready)
        other.posted = min(self.posted, ready)
        other.routing_lookup = dict(self.routing_lookup)
        other.routing_keys = list(self.routing_keys)
        size = min(n, len(self.bodies))
        other.routing = self.routing.copy(size)
        other.counts = self.counts.copy(size)
        other.body_ids = self.body_ids.copy(size)
        other._body_lookup = None if self._body_lookup is None else dict(self._body_lookup)
        other.body_texts = list(self.body_texts)
        other.bodies = self.bodies[:size]
        other.evidence = self.evidence[:size]
        other.projected = self.projected[:size]
        other.vocabulary = dict(self.vocabulary)
        if self.posted <= ready:  # every output posted arrived before the fork: whole postings
            other.postings = [posting.copy(posting.size) for posting in self.postings]
        else:
            arrived = parent.output_tick.data
            other.postings = []
            for posting in self.postings:  # each in arrival order: cut at the fork's length
                owners = posting.prefix()
                other.postings.append(posting.copy(int(np.searchsorted(arrived[owners], length))))
        other._kind_routing = dict(self._kind_routing)
        other._vectors = OrderedDict()
        for scorer_id, held in self._vectors.items():
            kept = _Vectors()
            kept.done = held.done  # every body interned here is interned in the fork too
            kept.rows = held.rows.copy(held.done)
            kept.empty = held.empty
            other._vectors[scorer_id] = kept
        other._lexical = None
        if self._lexical is not None:
            other._lexical = self._lexical.fork(parent, n, ready, length)
        other._names = None
        if self._names is not None:
            other._names = self._names.fork(parent.output_tick.data, ready, length)
        return other

    @property
    def body_lookup(self) -> dict[str, int]:
        """Body text -> interned id (the inverse of :attr:`body_texts`; made on first use)."""
        if self._body_lookup is None:
            self._body_lookup = dict(zip(self.body_texts, range(len(self.body_texts)), strict=True))
        return self._body_lookup

    def intern(self, key: str) -> int:
        """The interned id of a routing key (new keys get the next id)."""
        found = self.routing_lookup.get(key)
        if found is None:
            found = self.routing_lookup[key] = len(self.routing_keys)
            self.routing_keys.append(key)
        return found

    def catch_up(self, index: IndexColumns) -> None:
        """Read every output that arrived since the last call (the caller holds the index lock)."""
        size = len(index.ids)
        missing = size - len(self.bodies)
        if missing > 0:  # a slot for every node, read only once its output arrived
            self.bodies.extend([""] * missing)
            self.evidence.extend([()] * missing)
            self.projected.extend([None] * missing)
            self.routing.pad(size, -1)
            self.counts.pad(size, 0)
            self.body_ids.pad(size, -1)
        ready = index.ready
        if self.done == len(ready):
            return
        arrived = ready[self.done :]
        outputs = index.outputs  # held forms: each decoded here, once per extractor
        read = read_outputs(self.extractor, [release(outputs[i]) for i in arrived])
        at = np.asarray(arrived, dtype=np.int64)
        # an output without a routing key is routed by its node's kind: only those are visited
        keys: list[Any] = list(read.routing_keys)
        kinds, kind_ids = index.kind_names, index.kinds.data
        for j in compress(range(len(keys)), map(is_, keys, repeat(None))):
            keys[j] = kinds[kind_ids[arrived[j]]]
        for key in dict.fromkeys(keys):  # new keys interned in arrival order, as one by one
            self.intern(key)
        interned = self._intern_bodies(read.bodies)
        if interned is None:
            body_ids, texts = self._look_up_bodies(read.bodies)
        else:
            body_ids, texts = interned
        bodies, evidence, projected = self.bodies, self.evidence, self.projected
        start = arrived[0]
        if len(bodies) == start + len(arrived) and bool((np.diff(at) == 1).all()):
            # (a whole run, a snapshot: every ordinal from `start` to the end, in order)
            bodies[start:] = texts
            evidence[start:] = read.evidence
            projected[start:] = read.projected
        else:
            for i, text, found, sliced in zip(
                arrived, texts, read.evidence, read.projected, strict=True
            ):
                bodies[i] = text
                evidence[i] = found
                projected[i] = sliced
        self.routing.data[at] = list(map(self.routing_lookup.__getitem__, keys))
        self.body_ids.data[at] = body_ids
        self.done = len(ready)

    def _intern_bodies(self, bodies: list[str]) -> tuple[Any, list[str]] | None:
        """The first bodies read (none interned yet), interned in numpy: ids and texts.

        Bodies are grouped by their 64-bit ``hash`` (``np.unique``), every
        body compared with its group's first one: when two different texts
        share a hash (``None`` is returned) the lookup interns them instead.
        Ids number the distinct texts in order of first arrival, as the
        lookup would; ``""`` is never interned (-1). Each body's text is its
        group's first string, so equal bodies share one string. At 1,000,000
        nodes this replaced two dict passes over every body; the lookup
        (text -> id) is made when a later batch first needs it.
        """
        if self.body_texts or not bodies:
            return None
        hashes = np.fromiter(map(hash, bodies), np.int64, len(bodies))
        ordered = np.sort(hashes)
        if not bool((ordered[1:] == ordered[:-1]).any()):  # distinct hashes: distinct texts
            ids = np.arange(len(bodies), dtype=np.int64)
            if "" in bodies:  # (at most once here) never interned: -1, the ids after it one lower
                gap = bodies.index("")
                ids[gap + 1 :] -= 1
                ids[gap] = -1
                self.body_texts.extend(bodies[:gap] + bodies[gap + 1 :])
            else:
                self.body_texts.extend(bodies)
            return ids, bodies
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)  # (numpy 2.0-2.1 shaped it like the input)
        texts = list(map(bodies.__getitem__, first[inverse].tolist()))
        if not all(map(eq, bodies, texts)):
            return None  # two texts with one hash
        order = np.argsort(first)  # the groups in order of first arrival
        distinct = list(map(bodies.__getitem__, first[order].tolist()))
        ids = np.arange(len(distinct), dtype=np.int64)
        if "" in distinct:  # never interned: -1, and the ids after it one lower
            gap = distinct.index("")
            del distinct[gap]
            ids[gap + 1 :] -= 1
            ids[gap] = -1
        self.body_texts.extend(distinct)
        by_group = np.empty(len(first), dtype=np.int64)
        by_group[order] = ids
        return by_group[inverse], texts

    def _look_up_bodies(self, bodies: list[str]) -> tuple[list[int], list[str]]:
        """Bodies interned one by one in the lookup (new ones in arrival order): ids and texts."""
        body_lookup, body_texts = self.body_lookup, self.body_texts
        for body in dict.fromkeys(bodies):
            if body and body_lookup.setdefault(body, len(body_lookup)) == len(body_texts):
                body_texts.append(body)
        # "" is never interned: an empty body reads -1
        body_ids = list(map(body_lookup.get, bodies, repeat(-1)))
        texts = [
            body_texts[j] if j >= 0 else body for j, body in zip(body_ids, bodies, strict=True)
        ]
        return body_ids, texts  # one string per body

    def token_postings(self, index: IndexColumns) -> None:
        """The Jaccard postings and token counts, caught up with every output read (lock held).

        Read on a Jaccard query's first use rather than with the fields: at
        100,000 nodes they were a third of an index build, and a query
        without text, or ranked by another scorer, never reads them.
        """
        if self.posted == self.done:
            return
        arrived = index.ready[self.posted : self.done]
        bodies = self.bodies
        self._post(np.asarray(arrived, dtype=np.int64), [bodies[i] for i in arrived])
        self.posted = self.done

    def _post(self, at: IntArray, bodies: list[str]) -> None:
        """Token counts of these nodes' bodies, and the nodes appended to their tokens' postings.

        The batch is tokenised at once (:func:`~cortex_agents.memory._batch_tokens.token_sets`:
        each body's tokens as :func:`tokenize` gives them); each token's posting
        gets its new nodes in arrival order, as one by one.
        """
        found = token_sets(bodies)
        self.counts.data[at] = found.counts
        if not len(found.token):
            return
        vocabulary, postings = self.vocabulary, self.postings
        slots = np.empty(len(found.tokens), dtype=np.int64)
        for j, token in enumerate(found.tokens):
            slot = vocabulary.get(token)
            if slot is None:  # a new token: the next id, with an empty posting
                slot = vocabulary[token] = len(postings)
                postings.append(Column(capacity=4))
            slots[j] = slot
        owners = at[found.body]  # grouped by token, each group in arrival order
        starts = np.flatnonzero(np.concatenate(([True], found.token[1:] != found.token[:-1])))
        ends = [*starts[1:].tolist(), len(owners)]
        for j, begin, end in zip(found.token[starts].tolist(), starts.tolist(), ends, strict=True):
            postings[slots[j]].extend(owners[begin:end])

    def lexical(self, index: IndexColumns) -> LexicalPostings:
        """BM25's postings and statistics, caught up (the caller holds the index lock)."""
        if self._lexical is None:
            self._lexical = LexicalPostings(self.empty.body_text)
        self._lexical.catch_up(index, self.bodies, self.done)
        return self._lexical

    def names(self, index: IndexColumns) -> EvidenceNames:
        """The names of every output's evidence, caught up (the caller holds the index lock)."""
        if self._names is None:
            self._names = EvidenceNames(self.empty.evidence)
        self._names.catch_up(index.ready, self.evidence, self.done)
        return self._names

    def kind_routing(self, index: IndexColumns) -> IntArray:
        """Routing id of a node without output, by kind id (the caller holds the index lock)."""
        for kind_id in range(len(self._kind_routing), len(index.kind_names)):
            key = self.empty.routing_key
            self._kind_routing[kind_id] = self.intern(
                key if key is not None else index.kind_names[kind_id]
            )
        return np.fromiter(self._kind_routing.values(), np.int64, len(self._kind_routing))

    def vectors(self, index: IndexColumns, scorer: VectorScorer) -> _Vectors:
        """The body vectors of ``scorer``, one row per body id, caught up (the caller holds
        the index lock; 4 scorers kept)."""
        held = self._vectors.get(scorer.scorer_id)
        if held is None:
            held = self._vectors[scorer.scorer_id] = _Vectors()
            while len(self._vectors) > _VECTORS_KEPT:
                self._vectors.popitem(last=False)
        else:
            self._vectors.move_to_end(scorer.scorer_id)
        if held.done < len(self.body_texts):
            fresh = self.body_texts[held.done :]
            matrix = scorer.document_matrix(fresh)
            dim = held.rows.dim
            if dim is not None and matrix.shape[1] != dim:
                raise InvalidArgument(
                    "embeddings", f"must all have {dim} dimensions", matrix.shape[1]
                )
            at = np.arange(held.done, len(self.body_texts), dtype=np.int64)
            held.rows.put(at, matrix)
            held.done = len(self.body_texts)
            lend = getattr(scorer, "lend", None)
            if lend is not None:  # written: the scorer's cache may point here instead of copying
                lend(fresh, held, at.tolist())
        if held.empty is None and self.empty.body_text:
            held.empty = scorer.document_matrix([self.empty.body_text])
        return held


def fields_index(index: IndexColumns, extractor: Extractor) -> FieldsIndex:
    """The fields ``extractor`` reads of ``index``'s nodes, caught up with every output taken in.

    Kept by the index (8 extractors), made on first use.
    """
    return index.per_extractor(extractor, FieldsIndex)


def fields_of(view: IndexView, extractor: Extractor) -> FieldsView:
    """What ``extractor`` reads of ``view``'s nodes, as of the view."""
    return FieldsView(view.index.per_extractor(extractor, FieldsIndex), view)


class FieldsView:
    """A :class:`FieldsIndex` as of an :class:`~cortex_agents.memory._view.IndexView`."""

    __slots__ = ("fields", "view")

    def __init__(self, fields: FieldsIndex, view: IndexView) -> None:
        self.fields = fields
        self.view = view

    def _ready(self, i: int) -> bool:
        return bool(self.view.index.output_tick.data[i] < self.view.length)

    @property
    def routing_lookup(self) -> dict[str, int]:
        """Routing key -> interned id (may hold keys of later nodes: they match nothing here)."""
        return self.fields.routing_lookup

    def routing_ids(self, nodes: IntArray) -> IntArray:
        """The interned routing key of each node."""
        index = self.view.index
        with index.lock:
            by_kind = self.fields.kind_routing(index)
        ready = self.view.ready(nodes)
        return np.where(ready, self.fields.routing.data[nodes], by_kind[self.view.kind_ids(nodes)])

    def routing_key(self, i: int) -> str:
        """The routing key of node ``i`` (the extractor's, else its kind)."""
        fields = self.fields
        if self._ready(i):
            return fields.routing_keys[int(fields.routing.data[i])]
        key = fields.empty.routing_key
        index = self.view.index
        return key if key is not None else index.kind_names[int(index.kinds.data[i])]

    def body_ids(self, nodes: IntArray) -> IntArray:
        """Each node's body text as an interned id; -1 for an empty body (never a repeat)."""
        fields = self.fields
        empty = 0 if fields.empty.body_text else -1  # interned first (FieldsIndex)
        found: IntArray = np.where(self.view.ready(nodes), fields.body_ids.data[nodes], empty)
        return found

    def body(self, i: int) -> str:
        """The body text of node ``i``."""
        return self.fields.bodies[i] if self._ready(i) else self.fields.empty.body_text

    def evidence(self, i: int) -> tuple[str, ...]:
        """The evidence strings of node ``i``."""
        return self.fields.evidence[i] if self._ready(i) else tuple(self.fields.empty.evidence)

    def projected(self, i: int) -> Any:
        """The slice a typed projection read of node ``i`` (``None``: the raw output)."""
        return self.fields.projected[i] if self._ready(i) else self.fields.empty.projected

    def jaccard(self, text: str, nodes: IntArray) -> FloatArray:
        """Token Jaccard of ``text`` against each node's body, from the inverted index."""
        fields, index = self.fields, self.view.index
        wanted = tokenize(text)
        with index.lock:  # postings grow under the lock: read them under it too
            fields.token_postings(index)
            hit = [
                fields.postings[fields.vocabulary[t]].prefix()
                for t in wanted
                if t in fields.vocabulary
            ]
            shared = np.zeros(len(nodes), dtype=np.int64)
            if hit:
                owners = np.concatenate(hit)
                shared = (
                    np.bincount(owners, minlength=self.view.n)[nodes] if len(owners) else shared
                )
        # bincount may be longer than the view (outputs of later nodes): only `nodes` are read
        counts = fields.counts.data[nodes]
        waiting = np.flatnonzero(~self.view.ready(nodes))  # scored as an empty output
        if len(waiting):
            counts[waiting] = len(fields.empty_tokens)
            shared[waiting] = len(wanted & fields.empty_tokens)
        union = counts + len(wanted) - shared
        if bool(union.all()):
            jaccard: FloatArray = shared / union
            return jaccard
        safe = np.where(union > 0, union, 1)
        return np.where(union > 0, shared / safe, 0.0)

    def bm25(self, scorer: BM25, text: str, nodes: IntArray) -> FloatArray:
        """The BM25 axis of each node against ``text``, over the scorer's corpus as of the view
        (:mod:`cortex_agents.memory._lexical_postings`)."""
        index = self.view.index
        with index.lock:  # postings grow under the lock: read them under it too
            return self.fields.lexical(index).axis(scorer, text, self.view, nodes)

    def named(self, nodes: IntArray, runs: set[Name]) -> FloatArray:
        """1.0 for each node whose evidence ``runs`` name (:mod:`cortex_agents.memory._entities`)."""
        index = self.view.index
        with index.lock:
            return self.fields.names(index).hits(self.view, nodes, runs)

    def cosine(self, scorer: VectorScorer, text: str, nodes: IntArray) -> FloatArray:
        """``min(max(cos, 0), 1)`` of each node's body vector against ``text``'s vector.

        A node whose body has no vector of the query's width (an empty body,
        or no vector at all) scores 0, as the reference engine scores it.
        """
        index, view = self.view.index, self.view
        with index.lock:
            held = self.fields.vectors(index, scorer)
            rows = held.rows.shared()
            body_ids = self.fields.body_ids.data
            empty = held.empty
        query = scorer.query_vector(text)
        axis = np.zeros(len(nodes), dtype=np.float64)
        ready = np.flatnonzero(view.ready(nodes))
        if rows.dim is not None and rows.dim == query.shape[0]:
            # in chunks: a cone's float64 products at once would be O(cone x d) of
            # scratch memory, and the heap keeps what its largest query took
            for start in range(0, len(ready), _CHUNK):
                chunk = ready[start : start + _CHUNK]
                axis[chunk] = cosine_axis(_body_rows(rows, body_ids[nodes[chunk]]), query)
        if empty is not None and self.fields.empty.body_text and empty.shape[1] == query.shape[0]:
            waiting = np.ones(len(nodes), dtype=bool)
            waiting[ready] = False
            axis[waiting] = cosine_axis(empty, query)[0]
        return np.minimum(axis, 1.0)

    def vectors(self, scorer: VectorScorer) -> Matrix:
        """The ``(n, d)`` body vectors of the view's nodes under ``scorer`` (embedding what is missing).

        Rows of nodes without a vector of the common width (empty bodies) are zeros.
        """
        index, view = self.view.index, self.view
        nodes = np.arange(view.n, dtype=np.int64)
        with index.lock:
            held = self.fields.vectors(index, scorer)
            body_ids = self.fields.body_ids.data[nodes]
            matrix = _body_rows(held.rows, body_ids) if held.rows.dim is not None else None
        if matrix is None:
            return np.zeros((view.n, 1), dtype=np.float32)
        matrix[~view.ready(nodes)] = 0.0
        return matrix

    # Compatibility with the per-snapshot index of earlier versions (benchmarks read these).
    @property
    def bodies(self) -> list[str]:
        """The body text of every node of the view, by ordinal."""
        with self.view.index.lock:
            return [self.body(i) for i in range(self.view.n)]


def _body_rows(rows: Rows, body_ids: IntArray) -> Matrix:
    """The vector of each body id; zeros for an empty body (-1), as the engines score one."""
    empty = body_ids < 0
    matrix = rows.take(np.where(empty, 0, body_ids))
    if empty.any():
        matrix[empty] = 0.0
    return matrix
