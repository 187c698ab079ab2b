"""Copy a thread, prune it, delete the checkpoints of some runs: LangGraph's optional capabilities.

LangGraph's own savers implement these unevenly (in this version only the
Postgres ones prune), and none knows the substrate tables, so
:class:`~cortex_agents.persistence._saver.CortexSaver` implements them once,
over any inner saver, through the checkpointer API itself:

* **copy** reads every checkpoint of the source (all namespaces, oldest
  first, substrate rehydrated, pending writes included) and puts each on
  the target with its id, parent, metadata and writes; the target's
  substrate is appended at O(new events) per checkpoint, as in a run.
* **prune** and **delete for runs** rebuild an affected thread from the
  checkpoints it keeps: the thread is deleted and the kept checkpoints are
  put back, with their ids, metadata and writes.

On the SQL backends every write of one operation — deletions and re-puts,
checkpoints and substrate rows — is one transaction
(:meth:`SqliteSubstrateStore.atomic` / :meth:`PostgresSubstrateStore.atomic`):
a crash or an error leaves the thread as it was. The in-memory backend has
nothing to half-commit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from cortex_agents.errors import InvalidArgument

__all__ = ["ThreadSaver", "copy_thread", "delete_for_runs", "prune"]


class ThreadSaver(Protocol):
    """What these operations use of a saver: a :class:`CortexSaver`, named by its shape.

    ``CortexSaver.copy_thread`` (and ``delete_for_runs``, ``prune``) delegate
    here, so :mod:`~cortex_agents.persistence._saver` imports this module; were
    this module to import the class back, the two would form an import cycle.
    The operations need no more of the class than this, and the one thing only
    the class can do — build a saver over a transaction — is its
    ``_transaction()``.
    """

    @property
    def inner(self) -> BaseCheckpointSaver[str]:
        """The LangGraph saver that stores the checkpoints."""
        ...

    def list(self, config: RunnableConfig | None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, each with its substrate rehydrated."""
        ...

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (its substrate as rows)."""
        ...

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> None:
        """Store a task's pending writes."""
        ...

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and substrate."""
        ...

    def forget_thread(self, thread_id: str) -> None:
        """Drop what the saver remembers of a thread."""
        ...

    def _transaction(self) -> AbstractContextManager[ThreadSaver]:
        """A saver over the same store whose writes in the block commit together, or not at all."""
        ...


def _history(saver: ThreadSaver, thread_id: str) -> list[CheckpointTuple]:
    """Every checkpoint of a thread, all namespaces, oldest first (parents before children)."""
    newest_first = list(saver.list({"configurable": {"thread_id": str(thread_id)}}))
    # LangGraph's checkpoint ids are time-ordered UUIDs (uuid6), so id order is the order
    # they were written in, and a parent always comes before its children.
    return sorted(newest_first, key=lambda t: t.checkpoint["id"])


def _put_all(target: ThreadSaver, thread_id: str, tuples: Sequence[CheckpointTuple]) -> None:
    for tup in tuples:
        namespace = tup.config["configurable"].get("checkpoint_ns", "")
        configurable: dict[str, Any] = {"thread_id": str(thread_id), "checkpoint_ns": namespace}
        if tup.parent_config is not None:
            # `put` records the config's checkpoint_id as the new checkpoint's parent: callers
            # pass tuples oldest first, so that parent is already in the target.
            configurable["checkpoint_id"] = tup.parent_config["configurable"]["checkpoint_id"]
        versions = dict(tup.checkpoint.get("channel_versions", {}))
        stored = target.put({"configurable": configurable}, tup.checkpoint, tup.metadata, versions)
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in tup.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            target.put_writes(stored, writes, task_id)


def _rebuild(saver: ThreadSaver, thread_id: str, keep: Sequence[CheckpointTuple]) -> None:
    with saver._transaction() as target:
        target.delete_thread(thread_id)
        _put_all(target, thread_id, keep)
    # After the commit: the saver's remembered state of the thread (its cursors) describes
    # the checkpoints just replaced.
    saver.forget_thread(thread_id)


def copy_thread(saver: ThreadSaver, source_thread_id: str, target_thread_id: str) -> None:
    """Copy every checkpoint and pending write of one thread to another (substrate included).

    A source without checkpoints copies nothing.

    Raises:
        InvalidArgument: the target thread already has checkpoints, or is the source.
    """
    if str(source_thread_id) == str(target_thread_id):
        raise InvalidArgument("target_thread_id", "must differ from the source", target_thread_id)
    if saver.inner.get_tuple({"configurable": {"thread_id": str(target_thread_id)}}):
        raise InvalidArgument("target_thread_id", "already has checkpoints", target_thread_id)
    history = _history(saver, source_thread_id)
    if not history:
        return
    with saver._transaction() as target:
        _put_all(target, target_thread_id, history)
    saver.forget_thread(str(target_thread_id))


def prune(saver: ThreadSaver, thread_ids: Sequence[str], strategy: str = "keep_latest") -> None:
    """``keep_latest``: keep each namespace's newest checkpoint and its writes; ``delete``: all.

    Raises:
        InvalidArgument: an unknown strategy.
    """
    if strategy not in ("keep_latest", "delete"):
        raise InvalidArgument("strategy", "must be 'keep_latest' or 'delete'", strategy)
    for thread_id in thread_ids:
        if strategy == "delete":
            saver.delete_thread(thread_id)
            continue
        history = _history(saver, thread_id)
        newest: dict[str, CheckpointTuple] = {}
        for tup in history:  # oldest first: the last one seen per namespace is the newest
            newest[tup.config["configurable"].get("checkpoint_ns", "")] = tup
        if len(newest) < len(history):
            _rebuild(saver, thread_id, sorted(newest.values(), key=lambda t: t.checkpoint["id"]))


def delete_for_runs(saver: ThreadSaver, run_ids: Sequence[str]) -> None:
    """Delete the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
    doomed = {str(r) for r in run_ids}
    threads: set[str] = set()
    for run_id in doomed:
        for tup in saver.inner.list(None, filter={"run_id": run_id}):
            threads.add(str(tup.config["configurable"]["thread_id"]))
    for thread_id in sorted(threads):
        history = _history(saver, thread_id)
        keep = [t for t in history if str((t.metadata or {}).get("run_id")) not in doomed]
        if len(keep) < len(history):
            _rebuild(saver, thread_id, keep)
