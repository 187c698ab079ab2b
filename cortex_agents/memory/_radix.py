"""Stable orders of integer keys without a comparison sort of several keys (``np.lexsort``).

numpy sorts 16-bit integers stably by radix sort, in O(n); wider integers
by a comparison sort. Positions in a cone and depths are small integers, so
ordering a cone (:mod:`cortex_agents.memory._engine`) by them costs one or two
16-bit passes per key (:func:`then_by`).

Two keys and the position of each element fit one ``int64`` when they are
small enough: :func:`pair_order` packs them and sorts the packed values once
(numpy sorts ``int64`` values, not their indices, with vector instructions:
several times faster than a radix pass per 16 bits of key).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["pair_order", "stable_order", "then_by"]

IntArray = npt.NDArray[np.int64]
_PASSES: Final = 4
"""Keys below 2**64 take at most four 16-bit passes (only as many as their maximum needs)."""
_PACKED_BITS: Final = 63
"""Bits of a packed key (``int64``, never negative)."""


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
        # The higher digits of every key are 0 from here: further passes would not move anything.
        if top >> shift == 0:
            break
    return order


def pair_order(major: IntArray, minor: IntArray) -> IntArray:
    """The stable order of the pairs ``(major[i], minor[i])``, ascending.

    What ``then_by(stable_order(minor - minor.min()), major)`` returns, by one
    sort of packed values: ``major``, then ``minor`` less its minimum and its
    trailing zero bits common to every element (order-preserving), then the
    position ``i`` (ties keep their order), each in as many bits as its
    maximum needs. ``minor`` too wide for that is replaced by its stable rank
    first; keys wider still fall back to :func:`then_by`.

    Args:
        major: Non-negative keys.
        minor: Keys whose spread (``max - min``) fits an ``int64``.
    """
    n = len(major)
    if not n:
        return np.zeros(0, dtype=np.int64)
    index_bits = (n - 1).bit_length()
    major_bits = int(major.max()).bit_length()
    spread = minor - minor.min()
    common = int(np.bitwise_or.reduce(spread))
    if common:
        # `common & -common` is the lowest bit set in any element: the zero bits below it are
        # shared by all, and dropping them keeps the order while freeing bits for packing.
        spread >>= (common & -common).bit_length() - 1
    minor_bits = int(spread.max()).bit_length()
    if major_bits + minor_bits + index_bits > _PACKED_BITS:
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(spread, kind="stable")] = np.arange(n, dtype=np.int64)
        spread, minor_bits = rank, index_bits
        if major_bits + minor_bits + index_bits > _PACKED_BITS:
            return then_by(stable_order(spread), major)
    packed: IntArray = (major.astype(np.int64) << (minor_bits + index_bits)) | (
        spread << index_bits
    )
    # The position in the low bits makes every packed value distinct, so numpy's default
    # (unstable) sort gives the stable order; masking then leaves only the positions.
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    packed &= (1 << index_bits) - 1
    return packed
