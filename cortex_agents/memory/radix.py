"""Stable orders of non-negative integer keys by 16-bit radix passes.

numpy sorts 16-bit integers stably by radix sort, in O(n); wider integers
by a comparison sort. Positions in a cone and depths are small integers, so
ordering a cone (:mod:`cortex_agents.memory.engine`) by them costs one or two
16-bit passes per key instead of a comparison sort (``np.lexsort``).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["stable_order", "then_by"]

IntArray = npt.NDArray[np.int64]
_PASSES: Final = 4
"""Keys below 2**64 take at most four 16-bit passes (only as many as their maximum needs)."""


def stable_order(keys: IntArray) -> IntArray:
    """``np.argsort(keys, kind="stable")`` for non-negative integer keys, by radix passes."""
    return then_by(np.arange(len(keys), dtype=np.int64), keys)


def then_by(order: IntArray, keys: IntArray) -> IntArray:
    """``order`` re-sorted stably by ``keys[order]``: ties keep their order in ``order``.

    With ``order`` already sorted by a secondary key, the result is sorted by
    (``keys``, secondary key) — one more key of a least-significant-first sort.
    """
    if not len(order):
        return order
    sorted_keys = keys[order]
    top = int(sorted_keys.max())
    shift = 0
    for _ in range(_PASSES):
        digit = ((sorted_keys >> shift) & 0xFFFF).astype(np.uint16)
        step = np.argsort(digit, kind="stable")
        order, sorted_keys = order[step], sorted_keys[step]
        shift += 16
        if top >> shift == 0:
            break
    return order
