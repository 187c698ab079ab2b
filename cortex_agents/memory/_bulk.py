"""Building a large structure at once, with the cyclic garbage collector paused.

Building the memory index of a large run (after a restart, or for a snapshot
made by hand) allocates hundreds of thousands of small containers — evidence
tuples, token sets, the Python lists a walk reads. Each few hundred allocations let
CPython's cyclic collector run, and every so often it traverses every object
alive (the run's events, outputs, records): measured at 100,000 nodes, that
tripled the index build. What is built holds no reference cycles, so nothing
is left for the collector to find once it runs again.

Nor is anything left for it to find in what the block allocated: yet the
first young collection after the block would traverse every container it
made (the per-node edge lists it once made: two million at 1,000,000 nodes;
measured at 300,000 nodes, 0.75 s of a 7 s build on a loaded machine). So a block that
ran with the collector enabled before it and left at least
:data:`PROMOTE_AT` young containers alive (a bulk build, not a stage's
bind) moves every tracked object to the oldest generation as it ends
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no traversal),
where only a full collection looks at them — unless the application froze
objects of its own (``gc.get_freeze_count()``): those must stay frozen, so
then nothing is moved. Young objects of other threads move too; a cycle
among them is collected by the next full collection instead of a young one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["PROMOTE_AT", "paused_gc"]

PROMOTE_AT: Final = 100_000
"""Young containers a block must leave alive for them to skip the young collections."""


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
            if gc.get_count()[0] >= PROMOTE_AT and not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
