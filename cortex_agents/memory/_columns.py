"""Growable numpy columns whose prefixes stay valid while they grow.

The memory index appends to its columns as events arrive and readers take
prefixes of them without its lock. A column grows by allocating a new array
twice the size and copying (amortised O(1) per append); the old array is left
as it was, so a reader that holds it still reads correct values for every
position it may look at. Values written in place (a tick that says when
something happened) only ever move from "never" to a tick beyond every view
taken so far, so a reader sees either value with the same meaning.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["NEVER", "Column", "Rows"]

NEVER: Final = np.iinfo(np.int64).max
"""The tick of something that has not happened (yet)."""


class Column:
    """A 1-D array that grows at the end.

    Attributes:
        data: The backing array (longer than :attr:`size`; read ``data[:size]``).
        size: How many values were appended.
    """

    __slots__ = ("data", "size")

    def __init__(self, dtype: Any = np.int64, capacity: int = 16) -> None:
        self.data: npt.NDArray[Any] = np.zeros(max(capacity, 1), dtype=dtype)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def append(self, value: Any) -> None:
        """Add one value at the end."""
        if self.size == len(self.data):
            self._grow(self.size + 1)
        self.data[self.size] = value
        self.size += 1

    def extend(self, values: Any) -> None:
        """Append every value of ``values`` (an array or a sequence) at once."""
        count = len(values)
        if not count:
            return
        end = self.size + count
        if end > len(self.data):
            self._grow(end)
        self.data[self.size : end] = values
        self.size = end

    def pad(self, size: int, value: Any) -> None:
        """Append ``value`` until the column holds ``size`` values."""
        if size <= self.size:
            return
        if size > len(self.data):
            self._grow(size)
        self.data[self.size : size] = value
        self.size = size

    def prefix(self, n: int | None = None) -> npt.NDArray[Any]:
        """The first ``n`` values (all of them by default), without copying."""
        return self.data[: self.size if n is None else n]

    def copy(self, n: int) -> Column:
        """A new column holding the first ``n`` values (``n <= size``)."""
        out = Column(self.data.dtype, max(n, 16))
        out.data[:n] = self.data[:n]
        out.size = n
        return out

    def capped(self, n: int, tick: int) -> Column:
        """:meth:`copy` with every tick at or after ``tick`` set back to :data:`NEVER`."""
        out = self.copy(n)
        values = out.data[:n]
        values[values >= tick] = NEVER
        return out

    def _grow(self, needed: int) -> None:
        grown = np.zeros(max(needed, 2 * len(self.data)), dtype=self.data.dtype)
        grown[: self.size] = self.data[: self.size]
        self.data = grown


class Rows:
    """A 2-D float32 array of ``d`` columns that grows by rows (``d`` fixed by the first rows).

    Attributes:
        data: The backing array, ``(capacity, d)``; ``None`` until ``d`` is known.
    """

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data: npt.NDArray[np.float32] | None = None

    @property
    def dim(self) -> int | None:
        """The row width, once known."""
        return None if self.data is None else self.data.shape[1]

    def put(self, at: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> None:
        """Write ``rows`` at row positions ``at`` (growing as needed; new rows are zeros)."""
        if not len(at):
            return
        needed = int(at.max()) + 1
        if self.data is None:
            self.data = np.zeros((max(needed, 16), rows.shape[1]), dtype=np.float32)
        elif needed > len(self.data):
            grown = np.zeros((max(needed, 2 * len(self.data)), self.data.shape[1]), np.float32)
            grown[: len(self.data)] = self.data
            self.data = grown
        self.data[at] = rows

    def shared(self) -> Rows:
        """Rows over the current array: what was written so far, whatever is written later."""
        out = Rows()
        out.data = self.data
        return out

    def copy(self, n: int) -> Rows:
        """New rows holding the first ``n`` of these."""
        out = Rows()
        if self.data is not None:
            out.data = np.zeros((max(n, 16), self.data.shape[1]), dtype=np.float32)
            kept = min(n, len(self.data))
            out.data[:kept] = self.data[:kept]
        return out

    def take(self, at: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The rows at ``at`` (zeros for rows never written)."""
        data = self.data
        assert data is not None
        inside = at < len(data)
        if inside.all():
            return data[at]
        out = np.zeros((len(at), data.shape[1]), dtype=np.float32)
        out[inside] = data[at[inside]]
        return out
