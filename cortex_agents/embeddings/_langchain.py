"""Any LangChain ``Embeddings`` as a semantic scorer (``OpenAIEmbeddings``, a local server, ...).

    from langchain_openai import OpenAIEmbeddings
    scorer = langchain_scorer(OpenAIEmbeddings(model="text-embedding-3-small"))
    scorers = BUILTIN_SCORERS.with_scorers(ScorerEntry(name="openai", scorer=scorer))

Body vectors are cached by ``(model id, body hash)`` like every embedding
scorer, so each body is sent to the provider once; put the cache in the
run's store (:class:`~cortex_agents.embeddings.StoreEmbeddingCache`) and a
resumed run sends none again. Determinism is the provider's: the cache
makes repeated queries over the same bodies reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._embedding import EmbeddingCache, EmbeddingScorer

__all__ = ["LangChainEmbedder", "langchain_scorer"]


def _default_id(embeddings: Any) -> str:
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None) or ""
    return f"langchain-{type(embeddings).__name__}-{model}".rstrip("-")


class LangChainEmbedder:
    """An :class:`~cortex_agents.memory._embedding.Embedder` over a LangChain ``Embeddings``.

    Args:
        embeddings: Anything with ``embed_documents(list[str])`` and ``embed_query(str)``.
        model_id: Names the vectors in the cache; default
            ``langchain-<class>-<model>``. Change it when the model changes.
    """

    def __init__(self, embeddings: Any, model_id: str | None = None) -> None:
        for method in ("embed_documents", "embed_query"):
            if not callable(getattr(embeddings, method, None)):
                raise InvalidArgument("embeddings", f"must have a `{method}` method", embeddings)
        self.embeddings = embeddings
        self.model_id = model_id or _default_id(embeddings)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The provider's document vectors, one row per text."""
        return np.asarray(self.embeddings.embed_documents(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The provider's query vector."""
        return np.asarray(self.embeddings.embed_query(text), dtype=np.float32)


def langchain_scorer(
    embeddings: Any, *, model_id: str | None = None, cache: EmbeddingCache | None = None
) -> EmbeddingScorer:
    """A semantic scorer over ``embeddings`` (see :class:`LangChainEmbedder`)."""
    return EmbeddingScorer(LangChainEmbedder(embeddings, model_id), cache=cache)
