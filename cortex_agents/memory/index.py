"""Arrays over a snapshot for the vectorised engine, built once in O(V + E).

Nodes are renumbered in *forward canonical order* (longest path from a
source, then node id), so the forward relation's triangular system is
already in topological position order. The transposed relation keeps its
own canonical positions (longest path to a sink, then node id). Both orders
are the ones :mod:`cortex_agents.memory.influence` defines, which is what
makes the two engines agree to the last bit.

Per extractor, the index also caches each node's routing key, body text and
evidence; for the Jaccard scorer an inverted index of body tokens, so a text
query costs one ``bincount`` over the query's postings instead of tokenising
every candidate (DESIGN §9); and for each embedding scorer an ``(n, d)``
matrix of body vectors (filled from the scorer's embedding cache, embedding
only what it misses), so a query embeds only its own text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from cortex_agents.errors import CycleError
from cortex_agents.memory.embedding import Matrix, VectorScorer
from cortex_agents.memory.extract import ExtractedFields, Extractor
from cortex_agents.memory.influence import find_cycle
from cortex_agents.memory.semantic import tokenize
from cortex_agents.substrate.records import SETTLED, NodeId
from cortex_agents.timestamps import to_micros

if TYPE_CHECKING:
    from cortex_agents.memory.snapshot import MemorySnapshot

__all__ = ["FieldsIndex", "RelationIndex", "SnapshotIndex"]

IntArray = npt.NDArray[np.int64]
_EMPTY_FIELDS: Final = ExtractedFields(None, "", ())
_FIELDS_CACHE_SIZE: Final = 8
_VECTORS_CACHE_SIZE: Final = 4


def _longest_path_levels(n: int, src: IntArray, dst: IntArray) -> tuple[IntArray, list[int]]:
    """Longest-path level of every node from a source (Kahn's algorithm).

    Returns the levels and the nodes Kahn's algorithm could not order (on or
    downstream of a cycle; empty for a DAG).
    """
    order = np.argsort(src, kind="stable")
    targets = dst[order].tolist()
    indptr = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    indegree = np.bincount(dst, minlength=n).tolist()
    level = [0] * n
    ready = [v for v in range(n) if indegree[v] == 0]
    done = 0
    while ready:
        u = ready.pop()
        done += 1
        next_level = level[u] + 1
        for v in targets[indptr[u] : indptr[u + 1]]:
            if level[v] < next_level:
                level[v] = next_level
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    stuck = [] if done == n else [v for v in range(n) if indegree[v] > 0]
    return np.asarray(level, dtype=np.int64), stuck


@dataclass(frozen=True, slots=True)
class RelationIndex:
    """One relation (forward or transposed) as arrays.

    Attributes:
        adjacency: CSR matrix, row ``u`` holds the successors of node ``u``.
        outdeg: Out-degree of each node in the relation, as floats.
        position: Canonical topological position of each node in this relation.
        tri_indptr: CSC column pointers of the relation in position space
            (column = source position, rows = successor positions, sorted).
        tri_rows: Row (successor position) of each entry.
        outdeg_at: Out-degree of the node at each position.
    """

    adjacency: sp.csr_array
    outdeg: npt.NDArray[np.float64]
    position: IntArray
    tri_indptr: IntArray
    tri_rows: IntArray
    outdeg_at: npt.NDArray[np.float64]

    @classmethod
    def build(cls, n: int, src: IntArray, dst: IntArray, position: IntArray) -> RelationIndex:
        """Index the relation ``src[i] -> dst[i]`` with the given canonical positions."""
        ones = np.ones(len(src), dtype=np.float64)
        adjacency = sp.csr_array((ones, (src, dst)), shape=(n, n))
        adjacency.sort_indices()
        outdeg = np.bincount(src, minlength=n).astype(np.float64)
        psrc, pdst = position[src], position[dst]
        order = np.lexsort((pdst, psrc))
        tri_indptr = np.searchsorted(psrc[order], np.arange(n + 1)).astype(np.int64)
        outdeg_at = np.empty(n, dtype=np.float64)
        outdeg_at[position] = outdeg
        return cls(adjacency, outdeg, position, tri_indptr, pdst[order].astype(np.int64), outdeg_at)


@dataclass(frozen=True, eq=False)
class FieldsIndex:
    """What one extractor reads of every node, plus the Jaccard inverted index.

    Attributes:
        routing_keys: Routing key per node (the kind when the extractor found none).
        routing_ids: Interned routing key per node.
        routing_lookup: Routing key -> interned id.
        bodies: Body text per node.
        evidence: Evidence strings per node.
        projected: The slice a typed projection read, per node (``None``: the raw output).
    """

    routing_keys: list[str]
    routing_ids: IntArray
    routing_lookup: dict[str, int]
    bodies: list[str]
    evidence: list[tuple[str, ...]]
    projected: list[Any]
    _vectors: dict[str, Matrix] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def vectors(self, scorer: VectorScorer) -> Matrix:
        """The ``(n, d)`` body vectors of ``scorer``, built once per scorer id (up to four kept)."""
        cached = self._vectors.get(scorer.scorer_id)
        if cached is not None:
            return cached
        with self._lock:
            cached = self._vectors.get(scorer.scorer_id)
            if cached is None:
                cached = scorer.document_matrix(self.bodies)
                if len(self._vectors) >= _VECTORS_CACHE_SIZE:
                    self._vectors.pop(next(iter(self._vectors)))
                self._vectors[scorer.scorer_id] = cached
        return cached

    @cached_property
    def tokens(self) -> tuple[dict[str, int], list[IntArray], IntArray]:
        """``(vocabulary, postings per token id, token count per node)``."""
        vocabulary: dict[str, int] = {}
        token_ids: list[int] = []
        owners: list[int] = []
        counts = np.zeros(len(self.bodies), dtype=np.int64)
        for node, body in enumerate(self.bodies):
            tokens = tokenize(body)
            counts[node] = len(tokens)
            for token in tokens:
                token_ids.append(vocabulary.setdefault(token, len(vocabulary)))
                owners.append(node)
        ids = np.asarray(token_ids, dtype=np.int64)
        nodes = np.asarray(owners, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(len(vocabulary) + 1))
        sorted_nodes = nodes[order]
        postings = [sorted_nodes[bounds[t] : bounds[t + 1]] for t in range(len(vocabulary))]
        return vocabulary, postings, counts


class SnapshotIndex:
    """The vectorised view of a :class:`MemorySnapshot`.

    Attributes:
        n: Number of nodes.
        ids: Node id at each index (forward canonical order).
        pos: Node id -> index.
        kind_ids: Interned stage kind per node; ``kind_lookup`` maps kind -> id.
        settled: Whether each node is completed.
        observed_us: ``completed_at`` (else ``captured_at``) in epoch microseconds.
        id_rank: Rank of each node id in code-point order (the sort's last key).
        forward: The edge relation.
        backward: The transposed relation.
    """

    def __init__(self, snapshot: MemorySnapshot) -> None:
        self._snapshot = snapshot
        given = list(snapshot.nodes)
        n = len(given)
        at = {node_id: i for i, node_id in enumerate(given)}
        src = np.fromiter((at[e.source] for e in snapshot.edges), np.int64, len(snapshot.edges))
        dst = np.fromiter((at[e.target] for e in snapshot.edges), np.int64, len(snapshot.edges))

        depth, stuck = _longest_path_levels(n, src, dst)
        if stuck:
            relation: dict[NodeId, list[NodeId]] = {node_id: [] for node_id in given}
            for edge in snapshot.edges:
                relation[edge.source].append(edge.target)
            raise CycleError(find_cycle(relation, {given[i] for i in stuck}))
        height, _ = _longest_path_levels(n, dst, src)

        id_rank = np.empty(n, dtype=np.int64)
        id_rank[sorted(range(n), key=given.__getitem__)] = np.arange(n)
        perm = np.lexsort((id_rank, depth))  # forward canonical order
        renumber = np.empty(n, dtype=np.int64)
        renumber[perm] = np.arange(n)
        src, dst = renumber[src], renumber[dst]
        id_rank, height = id_rank[perm], height[perm]

        self.n = n
        self.ids: list[NodeId] = [given[i] for i in perm.tolist()]
        self.pos: dict[str, int] = {node_id: i for i, node_id in enumerate(self.ids)}
        self.id_rank = id_rank
        backward_position = np.empty(n, dtype=np.int64)
        backward_position[np.lexsort((id_rank, height))] = np.arange(n)
        self.forward = RelationIndex.build(n, src, dst, np.arange(n, dtype=np.int64))
        self.backward = RelationIndex.build(n, dst, src, backward_position)

        nodes = [snapshot.nodes[node_id] for node_id in self.ids]
        self.kind_lookup: dict[str, int] = {}
        self.kind_ids = np.fromiter(
            (self.kind_lookup.setdefault(node.kind, len(self.kind_lookup)) for node in nodes),
            np.int64,
            n,
        )
        self.settled = np.fromiter((node.status == SETTLED for node in nodes), np.bool_, n)
        self.observed_us = np.fromiter((to_micros(node.observed_at) for node in nodes), np.int64, n)
        self.reference_us = to_micros(snapshot.captured_at)
        self._fields: dict[Extractor, FieldsIndex] = {}
        self._lock = threading.Lock()

    def relation(self, name: str) -> RelationIndex:
        """``"descendants"`` -> forward, ``"ancestors"`` -> backward."""
        return self.forward if name == "descendants" else self.backward

    def fields(self, extractor: Extractor) -> FieldsIndex:
        """The fields ``extractor`` reads of every node, computed once per extractor.

        Up to eight extractors are cached; pass the same extractor object
        across queries to benefit.
        """
        cached = self._fields.get(extractor)
        if cached is not None:
            return cached
        built = _extract_all(self._snapshot, self.ids, extractor)
        with self._lock:
            if len(self._fields) >= _FIELDS_CACHE_SIZE:
                self._fields.pop(next(iter(self._fields)))
            self._fields[extractor] = built
        return built


def _extract_all(snapshot: MemorySnapshot, ids: list[NodeId], extractor: Callable) -> FieldsIndex:
    routing_keys: list[str] = []
    bodies: list[str] = []
    evidence: list[tuple[str, ...]] = []
    projected: list[Any] = []
    for node_id in ids:
        node = snapshot.nodes[node_id]
        fields = extractor(node.output) or _EMPTY_FIELDS
        routing_keys.append(fields.routing_key if fields.routing_key is not None else node.kind)
        bodies.append(fields.body_text)
        evidence.append(tuple(fields.evidence))
        projected.append(fields.projected)
    lookup: dict[str, int] = {}
    routing_ids = np.fromiter(
        (lookup.setdefault(key, len(lookup)) for key in routing_keys), np.int64, len(ids)
    )
    return FieldsIndex(routing_keys, routing_ids, lookup, bodies, evidence, projected)
