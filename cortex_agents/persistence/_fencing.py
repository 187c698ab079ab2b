"""Fencing: a writer that lost its thread's lock never writes over the writer that took it.

The writer lock (:mod:`cortex_agents.persistence._locks`) can go away under
its holder — the lock file deleted, the advisory lock's connection
terminated — without the holder being told. A second writer then gets in,
and both advance the thread: without fencing, stages the first had completed
end with the second's output.

So every lock holder has an **epoch**: taking the lock raises the thread's
row in ``cortex_writers`` by one (:meth:`SubstrateStore.claim_writer`), after
the lock is held and before anything is read, and the holder keeps the value
(a :class:`Fence`). Every commit of a lock holder — a checkpoint with its
substrate events (``put``), a task's pending writes (``put_writes``) — runs in
one transaction that first reads the row and writes nothing unless it still
holds the holder's epoch (:class:`~cortex_agents.errors.WriterFenced`
otherwise). On Postgres the runtime's commits do not wait for that read: the
statement itself fails unless the epoch holds, and the server then skips the
writes sent behind it and rolls the transaction back, so a commit waits for
the server once, at its end. The read cannot pass a claim that commits before it: on SQLite
both are write transactions, which the database runs one at a time; on
Postgres the read is ``SELECT ... FOR SHARE``, so a claim's ``UPDATE`` of the
row waits for the commit, and a commit waits for a claim in progress and then
sees its epoch. Hence the order is total: every commit of the old writer
lands before the new writer's claim, and the new writer reads the thread
after its claim — it starts from everything the old one committed, and
nothing the old one writes afterwards lands.

A commit through LangGraph's savers would run on the saver's own connection,
where no check can join it; so a lock holder's commits go through the
substrate store's ``atomic`` block instead (a LangGraph saver on the store's
connection, the same tables), whatever the inner saver.

Early stop: the runtime calls :meth:`CortexSaver.check_writer` before each
stage body, which asks the lock's :class:`~cortex_agents.persistence._locks.Lease`
whether the lock is still there. A writer whose lock went away stops before
it runs another stage body, even before another writer takes the thread.

The guarantee, with both: a stage body in flight when the lock is lost may
run again (bodies run at least once), but no completed stage's committed
output, and no checkpoint of the thread, is ever replaced by a writer that
lost its lock. Writes outside the checkpointer are not fenced: a body in
flight may still write its scratch memory. The in-memory backend's locks
cannot be lost. Writes made without holding the lock are not fenced either:
hold :meth:`CortexSaver.lock` around every invocation.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cortex_agents.errors import WriterFenced
from cortex_agents.persistence._locks import Lease

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = ["Fence", "JointStore", "Writers", "fenced"]


@dataclass(frozen=True, slots=True)
class Fence:
    """What a lock holder proves at each commit.

    Attributes:
        thread_id: The thread.
        epoch: The writer epoch it claimed (``None``: the store keeps no
            writer rows, and its commits are not checked).
        lease: The lock it holds.
    """

    thread_id: str
    epoch: int | None
    lease: Lease

    def check_lease(self) -> None:
        """Raise :class:`WriterFenced` if the lock went away (no database read)."""
        reason = self.lease.lost()
        if reason is not None:
            raise WriterFenced(self.thread_id, reason)


def fenced(fence: Fence, found: int | None) -> WriterFenced:
    """The error of a commit that found epoch ``found`` instead of the fence's."""
    if found is None:
        reason = "the thread's writer row is gone, so another writer may hold the thread"
    else:
        reason = (
            f"another writer took the thread (writer epoch {found}; this writer held "
            f"{fence.epoch}), so its lock had been lost"
        )
    return WriterFenced(fence.thread_id, reason)


class JointStore(Protocol):
    """A substrate store whose transaction a checkpoint write can join (the SQL stores).

    A lock holder's commits go through its ``atomic`` block (see the module).
    """

    def atomic(
        self,
        serde: Any,
        *,
        fence: Fence | None = None,
        doing: str = "import",
        pipelined: bool = False,
    ) -> AbstractContextManager[BaseCheckpointSaver[str]]:
        """One transaction for substrate rows and checkpoints (a saver whose writes join it)."""
        ...


class Writers:
    """The fences a saver's lock holders hold, by thread (shared by the saver's copies)."""

    def __init__(self) -> None:
        self._fences: dict[str, Fence] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._fences)

    def get(self, thread_id: str) -> Fence | None:
        """The fence held for a thread, if this saver holds its lock."""
        return self._fences.get(thread_id) if self._fences else None

    @contextmanager
    def holding(self, fence: Fence) -> Iterator[None]:
        """Register the fence for the block (the lock is held around it)."""
        with self._lock:
            self._fences[fence.thread_id] = fence
        try:
            yield
        finally:
            with self._lock:
                # Only our own: a later holder of the thread may have registered its fence since.
                if self._fences.get(fence.thread_id) is fence:
                    del self._fences[fence.thread_id]
