"""Solo writes: a task alone in its superstep commits with the checkpoint that follows it.

LangGraph stores a finished task's pending writes (``put_writes``) at once,
then the superstep's checkpoint (``put``), each in its own transaction. When
a task is alone in its superstep, its writes and the next checkpoint record
the same step, and nothing can read the one without the other mattering: so a
lock holder's saver may hold the writes and store them inside the next
checkpoint's transaction — one commit per stage instead of two, with the same
rows.

What is held (:meth:`SoloWrites.offer`): only the writes of a task the runtime
registered as solo (:meth:`SoloWrites.expect`) for the checkpoint it ran at,
only while the saver holds the thread's writer lock (the commit is fenced), and
never a write to one of LangGraph's special channels (an error, an interrupt,
a resume, a scheduled task): those are stored at once, as before.

When it is stored: inside the transaction of the ``put`` whose parent is the
checkpoint the task ran at (:meth:`SoloWrites.take`); LangGraph runs the two
calls in a background pool, so the put waits a bounded time for writes it
was told to expect. Anything still held when an invocation ends, or when the
lock is released, is stored alone (:meth:`SoloWrites.drain`); once the lock's
last flush is done, no task registers (:meth:`SoloWrites.open`), so nothing is
held that no flush would see. If the merged
commit fails, the writes are stored alone, and that failure is a note on
the put's error.

Crash semantics: a crash between the task's end and the merged commit loses
the writes together with the checkpoint, which is what a crash just before the
task ended loses: the thread resumes from the checkpoint the task ran at, and
LangGraph runs the task again (stage bodies run at least once).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP

__all__ = ["EXPECT_TIMEOUT", "HeldWrites", "SoloWrites"]

EXPECT_TIMEOUT: Final = 2.0
"""Seconds a checkpoint waits for the writes of its parent's solo task.

They are normally on their way already (LangGraph submits them before the
checkpoint); the bound only matters if they never come, and then the
checkpoint is stored without them and they are stored alone when they do.
"""

_Key = tuple[str, str]  # (thread id, checkpoint id the task ran at)


@dataclass(frozen=True, slots=True)
class HeldWrites:
    """One ``put_writes`` call, held: its arguments as LangGraph gave them."""

    config: RunnableConfig
    writes: Sequence[tuple[str, Any]]
    task_id: str
    task_path: str


class SoloWrites:
    """The solo tasks a saver expects writes from, and the writes it holds (thread-safe)."""

    def __init__(self, timeout: float = EXPECT_TIMEOUT) -> None:
        self._changed = threading.Condition()
        self._expected: dict[_Key, str] = {}  # -> the task id
        self._held: dict[_Key, HeldWrites] = {}
        self._open: set[str] = set()  # threads whose lock is held, until its last flush
        self._timeout = timeout

    def __len__(self) -> int:
        """Expected and held entries (both bounded by the threads being run)."""
        return len(self._expected) + len(self._held)

    def open(self, thread_id: str) -> None:
        """The thread's lock is held: its tasks may register until ``drain(..., close=True)``."""
        with self._changed:
            self._open.add(thread_id)

    def expect(self, thread_id: str, checkpoint_id: str, task_id: str) -> bool:
        """The task that ran at this checkpoint is alone in its superstep: hold its writes.

        Returns:
            Whether they will be held: not once the lock's last flush is done (a
            task still running then, e.g. of a stream its consumer left, would
            otherwise register writes that no flush stores).
        """
        with self._changed:
            if thread_id not in self._open:
                return False
            self._expected[(thread_id, checkpoint_id)] = task_id
            return True

    def offer(self, thread_id: str, held: HeldWrites) -> tuple[bool, HeldWrites | None]:
        """Hold ``held`` if its task is expected: ``(held?, earlier writes to store first)``.

        A second call for a task already holding writes is stored as it comes,
        the first one just before it (the order LangGraph gave them).
        """
        if not self._expected:  # the common case without solo tasks: no lock taken
            return False, None
        checkpoint_id = held.config.get("configurable", {}).get("checkpoint_id")
        key = (thread_id, str(checkpoint_id))
        with self._changed:
            if self._expected.get(key) != held.task_id:
                return False, None
            if key in self._held or any(c in WRITES_IDX_MAP for c, _ in held.writes):
                del self._expected[key]
                self._changed.notify_all()
                return False, self._held.pop(key, None)
            self._held[key] = held
            self._changed.notify_all()
            return True, None

    def take(self, thread_id: str, parent_id: str | None) -> HeldWrites | None:
        """The held writes of the task that ran at ``parent_id`` (waiting for them if expected).

        The registration ends here: writes that come later are stored alone.
        """
        if parent_id is None or not self._expected:
            return None
        key = (thread_id, parent_id)
        with self._changed:
            if key not in self._expected:
                return None
            self._changed.wait_for(
                lambda: key in self._held or key not in self._expected, self._timeout
            )
            self._expected.pop(key, None)
            return self._held.pop(key, None)

    def drain(self, thread_id: str, *, close: bool = False) -> list[HeldWrites]:
        """End every registration of the thread; the writes held for it, in the order held.

        ``close``: the lock's last flush; no task of the thread registers after it.
        """
        with self._changed:
            if close:
                self._open.discard(thread_id)
            for key in [k for k in self._expected if k[0] == thread_id]:
                del self._expected[key]
            held = [k for k in self._held if k[0] == thread_id]
            self._changed.notify_all()
            return [self._held.pop(k) for k in held]
