"""Static word embeddings with WordLlama: a token table and mean pooling, no network.

The ``wordllama`` wheel ships its weights (``weights/l2_supercat_256.safetensors``)
and its tokenizer config; its 0.4 loader looks for the tokenizer in the wrong
folder and then tries to download it, so it is loaded with ``cache_dir`` at
the installed package and ``disable_download=True``. Measured here: ~0.015 ms
a text in batches, one core.

Determinism: WordLlama sums token vectors along the sequence axis (a plain
sequential sum per output element), so the zero padding of a batch changes
no bit: a text's vector does not depend on the other texts of its batch.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cortex_agents.memory.embedding import EmbeddingScorer

__all__ = ["WordLlamaEmbedder", "wordllama_scorer"]

DEFAULT_CONFIG: Final = "l2_supercat"
DEFAULT_DIM: Final = 256


@functools.cache
def _model(config: str, dim: int) -> tuple[Any, str]:
    # importing wordllama calls logging.basicConfig(level=INFO): the application's root
    # logger (and its stderr: vcrpy and httpx at INFO) is put back as it was
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        # wordllama ships no type information (no py.typed, no stubs): its model is Any here.
        import wordllama  # type: ignore[import-untyped]
        from wordllama import WordLlama
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)

    folder = Path(wordllama.__file__).parent
    model = WordLlama.load(config=config, dim=dim, cache_dir=folder, disable_download=True)
    version = getattr(wordllama, "__version__", "0")
    return model, f"wordllama-{config}-{dim}-{version}"


class WordLlamaEmbedder:
    """An :class:`~cortex_agents.memory.embedding.Embedder` over a packaged WordLlama model.

    Args:
        config: The model config shipped in the wheel (``l2_supercat``).
        dim: Its dimensions (the wheel ships 256).

    Raises:
        ImportError, FileNotFoundError: the package or its files are missing
            (the scorer registry turns these into ``ScorerUnavailable``).
    """

    def __init__(self, config: str = DEFAULT_CONFIG, dim: int = DEFAULT_DIM) -> None:
        self._model, self.model_id = _model(config, dim)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Mean-pooled token vectors, one row per text."""
        return np.asarray(self._model.embed(list(texts), norm=False), dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A query embeds like a document."""
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector


def wordllama_scorer() -> EmbeddingScorer:
    """The built-in ``wordllama`` scorer (its body vectors in a private in-memory cache)."""
    return EmbeddingScorer(WordLlamaEmbedder())
