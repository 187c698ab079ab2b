"""Building a large structure at once, with the cyclic garbage collector paused.

Building the memory index of a large run (after a restart, or for a snapshot
made by hand) allocates hundreds of thousands of small containers — per-node
edge lists, extracted fields, token sets. Each few hundred allocations let
CPython's cyclic collector run, and every so often it traverses every object
alive (the run's events, outputs, records): measured at 100,000 nodes, that
tripled the index build. What is built holds no reference cycles, so nothing
is left for the collector to find once it runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector inside the block, if it was enabled, and enable it after.

    Threads may overlap: one that found it enabled enables it when it leaves,
    so the collector is never left disabled by this; another thread's block
    may then run with it enabled (only slower).
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
