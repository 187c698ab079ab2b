"""A deterministic fake embedder for unit tests of the pure core (no model files)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

DIM = 16


class HashEmbedder:
    """Bag of hashed, casefolded ``\\w+`` tokens in 16 signed dimensions.

    Counts every text it embeds, so tests can assert what was (not) embedded.
    """

    def __init__(self, model_id: str = "hash-16") -> None:
        self.model_id = model_id
        self.calls: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(DIM, dtype=np.float32)
        for token in re.findall(r"\w+", text.casefold()):
            digest = hashlib.sha256(token.encode()).digest()
            vector[digest[0] % DIM] += 1.0 if digest[1] % 2 else -1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIM))

    def embed_query(self, text: str) -> np.ndarray:
        self.calls.append(text)
        return self._vector(text)


def noop_stage(ctx: object) -> dict[str, str]:
    """A stage function for wire files in tests."""
    return {}
