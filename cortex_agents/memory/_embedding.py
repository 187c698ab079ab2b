"""Embedding scorers: the semantic axis as cosine similarity of text embeddings.

An :class:`Embedder` turns texts into vectors (a static-embedding table, an
ONNX transformer, any LangChain ``Embeddings``: see :mod:`cortex_agents.embeddings`).
:class:`EmbeddingScorer` makes it a semantic scorer the engine can vectorise:

* each node body is embedded once and cached by ``(scorer id, body hash)``
  in an :class:`EmbeddingCache` (in memory by default; over a LangGraph
  ``BaseStore`` with :class:`cortex_agents.embeddings.StoreEmbeddingCache`),
  so a resumed or exported run embeds nothing it embedded before;
* the snapshot index keeps one ``(n, d)`` matrix per scorer id, and a query
  embeds only its own text: the semantic axis of every candidate is one
  row-wise product, not a Python call per candidate.

**The mapping into [0, 1].** Vectors are L2-normalised (float32); the axis is
``max(cos, 0)`` with ``cos = sum(body * query)`` computed in float64, row by
row with numpy's pairwise summation. Negative cosine (texts that point away
from each other) means "unrelated" as much as 0 does, and keeping the
positive half unscaled keeps the axis' full resolution where related texts
lie, so the axis weight means the same thing it means for Jaccard. An empty
text embeds as the zero vector, which scores 0 against everything.

**Determinism.** Same text, same floats: embedders embed each text alone (or
in batches whose result does not depend on the other texts), single-threaded;
the cache stores the exact float32 bytes; the reference engine computes the
same row product on the same vectors, so both engines agree to the last bit.

Nothing here does I/O: the cache and the embedder are injected.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cortex_agents.errors import InvalidArgument

__all__ = [
    "EmbeddingCache",
    "EmbeddingScorer",
    "Embedder",
    "InMemoryEmbeddingCache",
    "RowSource",
    "VectorScorer",
    "body_key",
    "cosine_axis",
]

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]
_QUERY_MEMO: Final = 1024
DEFAULT_CACHE_ENTRIES: Final = 16_384
"""Entries an :class:`InMemoryEmbeddingCache` keeps by default: vectors, or pointers to the
rows of a memory index that holds them (about 17 MB at 256 dimensions if all were vectors).

A live run does not need the cache (the branch index keeps every body's vector); a second
snapshot of the same work does (a CLI query, an export read back, the harness): 16,384 keeps
a 10,000-node snapshot's bodies (``bench_memory --nodes 10000 --scorer wordllama``:
``cached_matrix_ms`` ~49 ms; with 4,096 it re-embeds ~6,000 bodies, ~610 ms). A body an index
holds is kept as a pointer to its row (~0.3 KB instead of ~1.4 KB per entry)."""


def body_key(text: str) -> str:
    """The cache key of a body text: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@runtime_checkable
class Embedder(Protocol):
    """Texts to vectors.

    Attributes:
        model_id: Names the model and its version; vectors cached under one
            id must never change, so a new model (or new weights) needs a new id.
    """

    model_id: str

    def embed_documents(self, texts: Sequence[str]) -> npt.ArrayLike:
        """One vector per text, as an ``(len(texts), d)`` array; each text's vector
        must not depend on the other texts of the call."""
        ...

    def embed_query(self, text: str) -> npt.ArrayLike:
        """The vector of a query text (``(d,)``); may differ from its document vector."""
        ...


@runtime_checkable
class EmbeddingCache(Protocol):
    """Body embeddings by ``(scorer id, body key)``; values are float32 vectors.

    Implementations: :class:`InMemoryEmbeddingCache` here, and
    :class:`cortex_agents.embeddings.StoreEmbeddingCache` over LangGraph's
    ``BaseStore`` (in-memory, SQLite, Postgres).
    """

    def get_many(self, scorer_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        """The cached vectors among ``keys`` (missing keys are absent from the result)."""
        ...

    def put_many(self, scorer_id: str, vectors: Mapping[str, Vector]) -> None:
        """Store ``vectors`` (an existing key keeps its value: vectors never change)."""
        ...


class RowSource(Protocol):
    """What holds body vectors as rows (a memory index's rows of one scorer), lent to a cache.

    Must be weakly referenceable: a cache never keeps a source alive.
    """

    def take(self, rows: Sequence[int]) -> Matrix:
        """A new ``(len(rows), d)`` array of these rows (each written before it was lent,
        never changed after)."""
        ...


class InMemoryEmbeddingCache:
    """A bounded, thread-safe in-process :class:`EmbeddingCache` (least recently used goes first).

    A run's memory index keeps the body vectors of each branch itself (one
    row per distinct body, carried to forks), so this cache only spares a
    *new* index in the same process — a snapshot made by hand, a branch whose
    index was evicted — embedding bodies again; a restarted worker starts
    with an empty one anyway. So the default keeps only the most recent
    :data:`DEFAULT_CACHE_ENTRIES` (16,384: one 10,000-node snapshot's bodies),
    not a second copy of a long run's vectors. A run that must never
    embed a body twice, across processes too, gives its scorer a
    store-backed cache (:class:`cortex_agents.embeddings.StoreEmbeddingCache`).

    Each vector is stored as its own copy: a row of the embedder's batch
    would keep the whole batch alive until its last row was evicted. And a
    vector an index holds is not stored twice: the index *lends* its rows
    (:meth:`lend`), the cache drops its copy and keeps a weak pointer to the
    row, read (copied, the same bytes) while that index lives; once it is
    gone, the entry is a miss.

    Args:
        max_entries: Most entries kept (vectors and lent rows), over every scorer id.
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InvalidArgument("max_entries", "must be an integer >= 1", max_entries)
        self._max = max_entries
        # a vector, or (weak reference to a RowSource, row) for a vector an index holds
        self._vectors: OrderedDict[tuple[str, str], Vector | tuple[weakref.ref[RowSource], int]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get_many(self, scorer_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        """The cached vectors among ``keys`` (a lent row is copied out of its index)."""
        found: dict[str, Vector] = {}
        # by the index's id, the index itself held until its rows are copied: one that goes
        # away meanwhile (another thread drops it) still gives the rows seen here, and a
        # weak reference is never hashed (a dead one never hashed before cannot be)
        lent: dict[int, tuple[RowSource, list[str], list[int]]] = {}
        with self._lock:
            for key in keys:
                entry = self._vectors.get((scorer_id, key))
                if entry is None:
                    continue
                if type(entry) is tuple:
                    pointer, at = entry
                    source = pointer()
                    if source is None:  # the index that held it is gone: a miss
                        del self._vectors[scorer_id, key]
                        continue
                    wanted = lent.get(id(source))
                    if wanted is None:
                        wanted = lent[id(source)] = (source, [], [])
                    wanted[1].append(key)
                    wanted[2].append(at)
                else:
                    found[key] = entry  # type: ignore[assignment]  # a vector
                self._vectors.move_to_end((scorer_id, key))
        for source, lent_keys, rows in lent.values():  # one copy per index, not per row
            found.update(zip(lent_keys, source.take(rows), strict=True))
        return found

    def put_many(self, scorer_id: str, vectors: Mapping[str, Vector]) -> None:
        """Store ``vectors``, evicting the least recently used beyond ``max_entries``."""
        with self._lock:
            for key, vector in vectors.items():
                entry = self._vectors.get((scorer_id, key))
                # a row whose index is gone holds no value any more: the vector takes its place
                if entry is None or (type(entry) is tuple and entry[0]() is None):
                    self._vectors[scorer_id, key] = np.array(vector, dtype=np.float32)
                self._vectors.move_to_end((scorer_id, key))
            self._evict()

    def lend(self, scorer_id: str, rows: Mapping[str, int], source: RowSource) -> None:
        """``source`` holds the vectors of these keys, at these rows: keep pointers, not copies.

        The caller has written the rows (they are the vectors this cache
        gave or would give for those keys: vectors never change).
        """
        pointer = weakref.ref(source)
        with self._lock:
            for key, at in rows.items():
                self._vectors[scorer_id, key] = (pointer, at)
                self._vectors.move_to_end((scorer_id, key))
            self._evict()

    def _evict(self) -> None:
        while len(self._vectors) > self._max:
            self._vectors.popitem(last=False)

    def __len__(self) -> int:
        return len(self._vectors)


@runtime_checkable
class VectorScorer(Protocol):
    """A scorer the engine vectorises: a matrix of body vectors, one query vector.

    Attributes:
        scorer_id: Names the vectors (model and version): the cache key's first half.
    """

    scorer_id: str

    def document_matrix(self, bodies: Sequence[str]) -> Matrix:
        """``(len(bodies), d)`` unit (or zero) float32 rows, one per body."""
        ...

    def query_vector(self, text: str) -> Vector:
        """The query's unit (or zero) float32 vector."""
        ...


def _unit_rows(raw: npt.ArrayLike, count: int, field: str) -> Matrix:
    rows = np.asarray(raw, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[0] != count or rows.shape[1] == 0:
        raise InvalidArgument(field, f"must be a ({count}, d) array", getattr(rows, "shape", rows))
    if not np.isfinite(rows).all():
        raise InvalidArgument(field, "must hold finite numbers only", "non-finite value")
    norms = np.linalg.norm(rows.astype(np.float64), axis=1, keepdims=True)
    unit = np.where(norms > 0, rows / np.where(norms > 0, norms, 1.0), 0.0)
    return np.ascontiguousarray(unit, dtype=np.float32)


def cosine_axis(rows: Matrix, query: Vector) -> npt.NDArray[np.float64]:
    """``max(cos, 0)`` of each row against ``query``: the semantic axis of embedding scorers.

    Both engines call this (the reference with one row), so they agree bit for bit.
    """
    products = np.ascontiguousarray(rows, dtype=np.float64) * query.astype(np.float64)
    axis: npt.NDArray[np.float64] = np.maximum(products.sum(axis=1), 0.0)
    return axis


class EmbeddingScorer:
    """A semantic scorer over an :class:`Embedder`, with cached body embeddings.

    Args:
        embedder: What turns texts into vectors.
        cache: Where body vectors are kept; default: a private in-memory cache.

    Attributes:
        scorer_id: ``embedder.model_id``: vectors are cached under it.
        embedded: How many texts this scorer has sent to its embedder
            (documents and queries), for tests and stats.
    """

    def __init__(self, embedder: Embedder, *, cache: EmbeddingCache | None = None) -> None:
        model_id = getattr(embedder, "model_id", None)
        if not isinstance(model_id, str) or not model_id:
            raise InvalidArgument("embedder.model_id", "must be a non-empty string", model_id)
        self.embedder = embedder
        self.scorer_id = model_id
        self.cache: EmbeddingCache = cache if cache is not None else InMemoryEmbeddingCache()
        self.embedded = 0
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def with_cache(self, cache: EmbeddingCache) -> EmbeddingScorer:
        """The same embedder over another cache (e.g. one over the run's store)."""
        return EmbeddingScorer(self.embedder, cache=cache)

    def document_matrix(self, bodies: Sequence[str]) -> Matrix:
        """Unit rows for ``bodies``: cached ones from the cache, the rest embedded once."""
        keys = [body_key(b) for b in bodies]
        wanted = {k: b for k, b in zip(keys, bodies, strict=True) if b}
        found = self.cache.get_many(self.scorer_id, list(wanted)) if wanted else {}
        missing = [k for k in wanted if k not in found]
        if missing:
            texts = [wanted[k] for k in missing]
            fresh = _unit_rows(self.embedder.embed_documents(texts), len(texts), "embeddings")
            self.embedded += len(texts)
            new = {k: fresh[i] for i, k in enumerate(missing)}
            self.cache.put_many(self.scorer_id, new)
            found = {**found, **new}
        if not found:
            return np.zeros((len(bodies), 1), dtype=np.float32)
        dim = len(next(iter(found.values())))
        matrix = np.zeros((len(bodies), dim), dtype=np.float32)
        for i, key in enumerate(keys):
            vector = found.get(key)
            if vector is not None:
                if len(vector) != dim:
                    raise InvalidArgument(
                        "embeddings", f"must all have {dim} dimensions", len(vector)
                    )
                matrix[i] = vector
        return matrix

    def lend(self, bodies: Sequence[str], source: RowSource, rows: Sequence[int]) -> None:
        """``source`` now holds the vectors of ``bodies`` at ``rows`` (as this scorer made them):
        a cache that can point to them (:meth:`InMemoryEmbeddingCache.lend`) drops its copies.

        A cache that cannot (a store's, which outlives the process) keeps what it stored.
        """
        lend = getattr(self.cache, "lend", None)
        if lend is None:
            return
        lent = {body_key(b): at for b, at in zip(bodies, rows, strict=True) if b}
        if lent:
            lend(self.scorer_id, lent, source)

    def query_vector(self, text: str) -> Vector:
        """The query's unit vector (memoised for the last 1,024 query texts)."""
        with self._lock:
            cached = self._queries.get(text)
        if cached is not None:
            return cached
        if not text:
            return np.zeros(1, dtype=np.float32)
        raw = np.asarray(self.embedder.embed_query(text), dtype=np.float32).reshape(1, -1)
        vector: npt.NDArray[np.float32] = _unit_rows(raw, 1, "query embedding")[0]
        with self._lock:
            self.embedded += 1
            self._queries[text] = vector
            while len(self._queries) > _QUERY_MEMO:
                self._queries.popitem(last=False)
        return vector

    def __call__(self, query_text: str, body_text: str) -> float:
        """``max(cos, 0)`` of the two texts' embeddings (the reference engine's path)."""
        query = self.query_vector(query_text)
        row = self.document_matrix([body_text])
        if row.shape[1] != query.shape[0]:  # a zero query or an empty body
            return 0.0
        return float(cosine_axis(row, query)[0])

    def __repr__(self) -> str:
        return f"EmbeddingScorer({self.scorer_id!r})"
