"""Static word embeddings with WordLlama: a token table and mean pooling, no network.

The ``wordllama`` wheel ships its weights (``weights/l2_supercat_256.safetensors``)
and its tokenizer config; its 0.4 loader looks for the tokenizer in the wrong
folder and then tries to download it, so it is loaded with ``cache_dir`` at
the installed package and ``disable_download=True``. Measured here: ~0.015 ms
a text in batches, one core.

**Loaded on first embedding.** Importing ``wordllama`` and reading its table
takes ~0.2 s, and a query without text (most tool calls) embeds nothing. So
:class:`WordLlamaEmbedder` only checks, when made, that the package and its
weights file are installed (without importing it) and names its vectors from
the installed version; the model is loaded, once per process, by the first
text that must be embedded. A model that fails to load then raises
:class:`~cortex_agents.errors.ScorerUnavailable`, as loading the scorer would
have.

Determinism: WordLlama sums token vectors along the sequence axis (a plain
sequential sum per output element), so the zero padding of a batch changes
no bit: a text's vector does not depend on the other texts of its batch.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cortex_agents.errors import ScorerUnavailable
from cortex_agents.memory._embedding import EmbeddingScorer

__all__ = ["WordLlamaEmbedder", "wordllama_scorer"]

DEFAULT_CONFIG: Final = "l2_supercat"
DEFAULT_DIM: Final = 256
_INSTALL: Final = "pip install wordllama"
_LOADING: Final = threading.Lock()
MODELS_KEPT: Final = 2
"""WordLlama models kept loaded per process (least recently used out)."""


# Bounded although only installed weights files are cached (a miss raises, and raising is not
# cached): `config` is not checked against a closed set, so `./l2_supercat` is another key for the same file.
@functools.lru_cache(maxsize=16)
def _installed(config: str, dim: int) -> tuple[Path, str]:
    """The installed package's folder and the model id, without importing the package.

    Raises:
        ScorerUnavailable: ``wordllama`` is not installed, or its wheel holds no weights
            for ``config`` and ``dim``.
    """
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ScorerUnavailable("wordllama", "the `wordllama` package is not installed", _INSTALL)
    folder = Path(spec.origin).parent
    weights = folder / "weights" / f"{config}_{dim}.safetensors"
    if not weights.is_file():
        raise ScorerUnavailable("wordllama", f"no weights file {str(weights)!r}", _INSTALL)
    # the distribution's version is the package's `__version__` (setuptools-scm writes both)
    version = importlib.metadata.version("wordllama")
    return folder, f"wordllama-{config}-{dim}-{version}"


@functools.lru_cache(maxsize=MODELS_KEPT)  # bounded: see _installed; an evicted model loads again
def _model(config: str, dim: int) -> Any:
    # importing wordllama calls logging.basicConfig(level=INFO): the application's root
    # logger (and its stderr: vcrpy and httpx at INFO) is put back as it was
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        # wordllama ships no type information (no py.typed, no stubs): its model is Any here.
        from wordllama import WordLlama  # type: ignore[import-untyped]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)

    folder, _ = _installed(config, dim)
    return WordLlama.load(config=config, dim=dim, cache_dir=folder, disable_download=True)


class WordLlamaEmbedder:
    """An :class:`~cortex_agents.memory._embedding.Embedder` over a packaged WordLlama model.

    The model is loaded by the first text embedded (see the module docstring).

    Args:
        config: The model config shipped in the wheel (``l2_supercat``).
        dim: Its dimensions (the wheel ships 256).

    Raises:
        ScorerUnavailable: the package or its weights are missing.
    """

    def __init__(self, config: str = DEFAULT_CONFIG, dim: int = DEFAULT_DIM) -> None:
        _, self.model_id = _installed(config, dim)
        self._config, self._dim = config, dim

    @property
    def model(self) -> Any:
        """The WordLlama model, loaded on first use (once per process).

        Raises:
            ScorerUnavailable: it cannot be loaded (a corrupt or missing file).
        """
        with _LOADING:  # one thread loads it; the others wait for that model
            try:
                return _model(self._config, self._dim)
            except Exception as exc:
                raise ScorerUnavailable(
                    "wordllama", f"{type(exc).__name__}: {exc}", _INSTALL
                ) from None

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Mean-pooled token vectors, one row per text."""
        return np.asarray(self.model.embed(list(texts), norm=False), dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A query embeds like a document."""
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector


def wordllama_scorer() -> EmbeddingScorer:
    """The built-in ``wordllama`` scorer (its body vectors in a private in-memory cache)."""
    return EmbeddingScorer(WordLlamaEmbedder())
