"""Drive a saver's *sync* methods through the async API langgraph-checkpoint-conformance calls.

The conformance suite (0.0.2) only calls ``aput``, ``aget_tuple``, ... . Wrapping a
saver so that each of those runs the matching sync method in a worker thread puts the
sync code paths under the same suite. Optional capabilities are wrapped only when the
saver has them, so the suite detects exactly what the saver offers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = ["fenced_writes", "sync_driven"]


def fenced_writes(saver: Any) -> Any:
    """``saver``, every write of which takes the fenced path a lock holder's writes take.

    Each thread written is claimed (its writer epoch raised) at its first write, as
    :meth:`CortexSaver.lock` does, without holding a lock (the suite uses many
    threads); from then on every ``put`` and ``put_writes`` of the thread checks
    the epoch inside the store's transaction.
    """
    from cortex_agents.persistence import Lease
    from cortex_agents.persistence._fencing import Fence, Writers

    class Claiming(Writers):
        def __len__(self) -> int:
            return 1

        def get(self, thread_id: str) -> Fence | None:
            fence = super().get(thread_id)
            if fence is None:
                fence = Fence(thread_id, saver.store.claim_writer(thread_id), Lease())
                self.holding(fence).__enter__()  # held for the saver's life
            return fence

    saver._writers = Claiming()
    return saver


def sync_driven(saver: Any) -> BaseCheckpointSaver:
    """A saver whose async API runs ``saver``'s sync methods."""

    class SyncDriven(BaseCheckpointSaver):
        def __init__(self) -> None:
            super().__init__(serde=saver.serde)

        def get_next_version(self, current: Any, channel: Any) -> Any:
            return saver.get_next_version(current, channel)

        async def aget_tuple(self, config: Any) -> Any:
            return await asyncio.to_thread(saver.get_tuple, config)

        async def alist(self, config: Any, **kwargs: Any) -> Any:
            for tup in await asyncio.to_thread(lambda: list(saver.list(config, **kwargs))):
                yield tup

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            return await asyncio.to_thread(saver.put, config, checkpoint, metadata, versions)

        async def aput_writes(
            self, config: Any, writes: Any, task_id: str, task_path: str = ""
        ) -> None:
            await asyncio.to_thread(saver.put_writes, config, writes, task_id, task_path)

        async def adelete_thread(self, thread_id: str) -> None:
            await asyncio.to_thread(saver.delete_thread, thread_id)

    optional = {
        "acopy_thread": lambda self, source, target: asyncio.to_thread(
            saver.copy_thread, source, target
        ),
        "adelete_for_runs": lambda self, run_ids: asyncio.to_thread(saver.delete_for_runs, run_ids),
        "aprune": lambda self, thread_ids, *, strategy="keep_latest": asyncio.to_thread(
            saver.prune, thread_ids, strategy=strategy
        ),
    }
    for name, method in optional.items():
        sync_name = name[1:]
        if getattr(type(saver), sync_name) is not getattr(BaseCheckpointSaver, sync_name):
            setattr(SyncDriven, name, _coroutine(method))
    return SyncDriven()


def _coroutine(method: Any) -> Any:
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await method(self, *args, **kwargs)

    return call
