"""Integer labels that keep node ids in code-point order as ids keep arriving.

The ranking's last sort key and the influence pass's tie-break compare node
ids by code point. Sorting the ids of a cone on every query costs a Python
sort; instead every id gets an ``int64`` *label* when it enters the index, so
that ``label(a) < label(b)`` exactly when ``a < b``, and numpy compares labels.

A new id takes the midpoint of its neighbours' labels in sorted order. When
two neighbours leave no room, every label is reassigned, evenly spaced
(order maintenance by relabelling): labels change, their order never does,
so a reader holding an older label array still orders every id it knows
correctly. Ids arriving in increasing order (``s000001``, ``s000002``, ...)
take labels at the end and leave room for about eight million more.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from cortex_agents.errors import InvalidArgument

__all__ = ["IdOrder"]

_LOW: Final = -(2**62)
_HIGH: Final = 2**62
_STEP: Final = 2**40
"""Gap left after the last id when ids arrive in increasing order."""


class IdOrder:
    """Order-preserving labels of ids, by position of arrival.

    Not thread-safe by itself: its owner (the memory index) calls :meth:`add`
    under its lock. :attr:`labels` may be read without it.

    Attributes:
        labels: ``labels[i]`` is the label of the ``i``-th id added (the array
            may be longer than the number of ids; read only the first ones).
    """

    __slots__ = ("_count", "_sorted", "_sorted_at", "labels")

    def __init__(self) -> None:
        self._sorted: list[str] = []  # every id, in code-point order
        self._sorted_at: list[int] = []  # the arrival position of each id in `_sorted`
        self._count = 0
        self.labels: npt.NDArray[np.int64] = np.zeros(16, dtype=np.int64)

    def __len__(self) -> int:
        return self._count

    def add(self, node_id: str) -> None:
        """Give ``node_id`` (not added before) the next arrival position and its label."""
        slot = bisect_left(self._sorted, node_id)
        labels = self.labels
        low = int(labels[self._sorted_at[slot - 1]]) if slot else _LOW
        if slot < len(self._sorted):
            high = int(labels[self._sorted_at[slot]])
            label = low + (high - low) // 2
        else:  # after every id: leave room for more increasing ids
            high, label = _HIGH, min(low + _STEP, low + (_HIGH - low) // 2)
        position = self._count
        self._sorted.insert(slot, node_id)
        self._sorted_at.insert(slot, position)
        if position == len(labels):
            grown = np.zeros(2 * len(labels), dtype=np.int64)
            grown[:position] = labels[:position]
            labels = grown
        self._count += 1
        if not low < label < high:
            self._relabel(labels)  # no room between the neighbours: spread every label out
            return
        labels[position] = label
        self.labels = labels

    def extend(self, node_ids: Sequence[str]) -> None:
        """Add ``node_ids`` (none added before, no repeats), in that order of arrival.

        A few ids take their labels one by one (:meth:`add`). Many at once —
        an index built from a whole run, after a restart or for a snapshot made
        by hand — are sorted once, merged with the ids held (two sorted runs:
        one linear merge) and every id is labelled anew, in order: O(n) list
        work instead of one ``insert`` per id.
        """
        if len(node_ids) * 16 < self._count or len(node_ids) < 32:
            for node_id in node_ids:
                self.add(node_id)
            return
        start = self._count
        count = start + len(node_ids)
        if not start:  # the first ids (an index built at once): their order is their sort
            order = sorted(range(count), key=node_ids.__getitem__)
            self._sorted = list(map(node_ids.__getitem__, order))
            self._sorted_at = order
        else:
            merged = self._sorted + sorted(node_ids)
            arrival = dict(zip(node_ids, range(start, count), strict=True))
            order = sorted(range(count), key=merged.__getitem__)  # timsort merges the two runs
            self._sorted = [merged[i] for i in order]
            held = self._sorted_at
            self._sorted_at = [held[i] if i < start else arrival[merged[i]] for i in order]
        self._count = count
        labels = np.zeros(max(16, 2 * count), dtype=np.int64)
        if (count + 1) * _STEP < _HIGH:  # as increasing ids would have been: room after them
            spaced = _LOW + _STEP * np.arange(1, count + 1, dtype=np.int64)
        else:
            spaced = _LOW + (_HIGH - _LOW) // (count + 1) * np.arange(1, count + 1, dtype=np.int64)
        labels[np.asarray(self._sorted_at, dtype=np.int64)] = spaced
        self.labels = labels  # a new array: readers of the old one keep a consistent order

    def fork(self, count: int, later: Sequence[str]) -> IdOrder:
        """A new order holding the first ``count`` ids added, with their labels.

        ``later`` are the ids added after those (their owner keeps them in
        arrival order). A fork near the end — a retried step, parallel tool
        calls on one state — copies the sorted lists and takes those few out;
        an older one keeps what it needs in one pass.
        """
        other = IdOrder()
        if len(later) != self._count - count:
            raise InvalidArgument(
                "later", f"must hold the {self._count - count} ids added after {count}", len(later)
            )
        if len(later) * 16 <= count:
            other._sorted, other._sorted_at = list(self._sorted), list(self._sorted_at)
            for node_id in later:
                slot = bisect_left(other._sorted, node_id)
                del other._sorted[slot]
                del other._sorted_at[slot]
        else:
            kept = [(i, p) for i, p in zip(self._sorted, self._sorted_at, strict=True) if p < count]
            other._sorted = [i for i, _ in kept]
            other._sorted_at = [p for _, p in kept]
        other._count = count
        other.labels = np.zeros(max(16, len(self.labels)), dtype=np.int64)
        other.labels[:count] = self.labels[:count]
        return other

    def _relabel(self, into: npt.NDArray[np.int64]) -> None:
        spacing = (_HIGH - _LOW) // (self._count + 1)
        fresh = np.zeros(len(into), dtype=np.int64)
        order = np.asarray(self._sorted_at, dtype=np.int64)
        fresh[order] = _LOW + spacing * np.arange(1, self._count + 1, dtype=np.int64)
        self.labels = fresh  # a new array: readers of the old one keep a consistent order
