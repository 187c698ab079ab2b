"""Body embeddings in a LangGraph ``BaseStore``: a resumed or exported run embeds nothing again.

Namespace ``("cortex", "embeddings", <scorer id>)`` (periods in the id are
written ``%2E``: store labels may not hold them), key = the body's SHA-256,
value ``{"dim": d, "f32": <base64 of the little-endian float32 bytes>}``,
never indexed for the store's own vector search. The exact bytes round-trip,
so a vector read back is the vector that was written.

Wire it into a run in one line (the wire's presets carry their scorers)::

    wire = dataclasses.replace(
        wire, presets=wire.presets.with_embedding_cache(StoreEmbeddingCache(store))
    )
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["NAMESPACE", "StoreEmbeddingCache"]

NAMESPACE: Final = ("cortex", "embeddings")


def _label(scorer_id: str) -> str:
    return scorer_id.replace("%", "%25").replace(".", "%2E")


class StoreEmbeddingCache:
    """An :class:`~cortex_agents.memory._embedding.EmbeddingCache` over a LangGraph ``BaseStore``.

    Args:
        store: ``InMemoryStore``, ``SqliteStore``, ``PostgresStore`` or any ``BaseStore``.
        namespace: The prefix its namespaces start with.

    Attributes:
        reads: Vectors found in the store (for tests and stats).
        writes: Vectors written to the store.
    """

    def __init__(self, store: Any, namespace: tuple[str, ...] = NAMESPACE) -> None:
        self.store = store
        self.namespace = tuple(namespace)
        self.reads = 0
        self.writes = 0

    def _namespace(self, scorer_id: str) -> tuple[str, ...]:
        return (*self.namespace, _label(scorer_id))

    def get_many(self, scorer_id: str, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors among ``keys``, in one store batch."""
        from langgraph.store.base import GetOp

        if not keys:
            return {}
        namespace = self._namespace(scorer_id)
        items = self.store.batch([GetOp(namespace, key, refresh_ttl=False) for key in keys])
        found: dict[str, npt.NDArray[np.float32]] = {}
        for key, item in zip(keys, items, strict=True):
            if item is None:
                continue
            raw = base64.b64decode(item.value["f32"])
            vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
            if vector.shape[0] == item.value.get("dim"):
                found[key] = vector
        self.reads += len(found)
        return found

    def put_many(self, scorer_id: str, vectors: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """Write ``vectors``, in one store batch."""
        from langgraph.store.base import PutOp

        if not vectors:
            return
        namespace = self._namespace(scorer_id)
        ops = [
            PutOp(
                namespace,
                key,
                {
                    "dim": int(vector.shape[0]),
                    "f32": base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii"),
                },
                index=False,
            )
            for key, vector in vectors.items()
        ]
        self.store.batch(ops)
        self.writes += len(ops)
