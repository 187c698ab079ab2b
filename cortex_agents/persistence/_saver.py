"""CortexSaver: LangGraph's own checkpointers, with the substrate stored as rows.

LangGraph re-serialises a changing channel in full at every checkpoint, so an
append-only log in the graph state costs O(N) bytes per step. This saver
wraps any LangGraph saver (``SqliteSaver``, ``AsyncSqliteSaver``,
``PostgresSaver``, ``AsyncPostgresSaver``, ``InMemorySaver``) and, on
``put``, appends only the events the checkpoint adds to the substrate tables
and stores a small cursor string in the checkpoint in their place. Reads
rehydrate the log from the cursor. Everything else — versions, pending
writes, metadata, history — is LangGraph's, untouched.

Properties:

* **O(new events) per step.** The parent's cursor is remembered per
  checkpoint id; a put writes only ``log[parent.seq:]``. Only the cursor and
  the chain hash of its log are remembered, never the log: a log is read
  through the store, whose cached buffer is its branch, so no branch (and
  nothing derived from it) is kept alive by this saver.
* **Crash ordering.** Events are committed first, the checkpoint second.
  If a crash falls between them, the events lie beyond every committed
  cursor: invisible. The re-executed step writes on a new branch.
* **Time travel and forks.** A put whose parent cursor is not its branch's
  head starts a new branch based at that cursor, so a fork and its original
  never see each other's later events.
* **Thread isolation.** Branches belong to one ``(thread, namespace)``; a
  cursor of another thread is refused.
* **Fencing.** While this saver holds a thread's lock (:meth:`CortexSaver.lock`),
  each of its commits for the thread — ``put`` and ``put_writes``, events and
  checkpoint together — runs in one transaction of the substrate store that
  first checks the thread's writer epoch, and writes nothing if another
  writer took the thread (:class:`~cortex_agents.errors.WriterFenced`); see
  :mod:`cortex_agents.persistence._fencing`.
* **Solo writes.** Under the lock, the pending writes of a task the runtime
  registered as alone in its superstep (:meth:`CortexSaver.expect_solo_writes`)
  are stored in the transaction of the checkpoint that follows it: one commit
  per stage; see :mod:`cortex_agents.persistence._solo`.

One line from any saver LangGraph ships: ``CortexSaver.wrap(saver)`` builds the
matching substrate store (see :mod:`cortex_agents.persistence._wrap`). A plain
saver alone cannot hold the substrate: a stage run under one fails at once
with :class:`~cortex_agents.errors.UnsupportedCheckpointer`, which names
``CortexSaver.wrap``.

The substrate channel only grows through :func:`append_events`. A value that
does not extend its parent checkpoint's log (compared by chain hash: see
:attr:`SubstrateLog.digest`) is stored as a new root branch rather than
silently spliced.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence import _thread_ops as thread_ops
from cortex_agents.persistence._fencing import Fence, JointStore, Writers
from cortex_agents.persistence._locks import ProcessLocks, ThreadLocks
from cortex_agents.persistence._solo import HeldWrites, SoloWrites
from cortex_agents.persistence._store import EMPTY_CURSOR, Cursor, SubstrateStore
from cortex_agents.persistence._wrap import substrate_store
from cortex_agents.substrate._log import SubstrateLog

__all__ = ["DEFAULT_CHANNEL", "CortexSaver"]

DEFAULT_CHANNEL = "substrate"
_Key = tuple[str, str, str]
# a checkpoint's cursor, and the chain hash of its log when known (``None``: read it)
_Parent = tuple[Cursor, bytes | None]


def _ids(config: RunnableConfig) -> tuple[str, str, str | None]:
    configurable = config.get("configurable", {})
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        raise InvalidArgument("configurable.thread_id", "is required by the checkpointer", None)
    return str(thread_id), configurable.get("checkpoint_ns", ""), configurable.get("checkpoint_id")


class CortexSaver(BaseCheckpointSaver[str]):
    """A checkpointer that persists the substrate channel at O(new events) per step.

    Args:
        inner: The LangGraph saver that stores checkpoints.
        store: The substrate store, normally in the same database.
        channel: The state key holding the :class:`SubstrateLog`.
        locks: Per-thread writer locks (see :meth:`lock`).
        cursor_cache: How many checkpoint cursors to remember (least recently
            used out; a forgotten one is read back from the inner saver).
        owns_store: Whether :meth:`close` closes ``store`` (true for a saver
            :meth:`wrap` built).
        writers: The fences of this saver's lock holders (shared with the
            copies :meth:`with_allowlist` makes).
        solo: The solo tasks' held writes (shared with those copies too; see
            :meth:`expect_solo_writes`).
    """

    def __init__(
        self,
        inner: BaseCheckpointSaver[str],
        store: SubstrateStore,
        *,
        channel: str = DEFAULT_CHANNEL,
        locks: ThreadLocks | None = None,
        cursor_cache: int = 256,
        owns_store: bool = False,
        writers: Writers | None = None,
        solo: SoloWrites | None = None,
    ) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.store = store
        self.channel = channel
        self.locks = locks if locks is not None else ProcessLocks()
        self._cursors: OrderedDict[_Key, _Parent] = OrderedDict()
        self._cursor_cache = cursor_cache
        self._guard = threading.Lock()
        self._owns_store = owns_store
        self._writers = writers if writers is not None else Writers()
        self._solo = solo if solo is not None else SoloWrites()
        self._joint = self._joint_store()
        # where a lock holder's commits go: any store that can join a checkpoint write
        self._fencing = cast(JointStore, store) if hasattr(store, "atomic") else None

    @classmethod
    def wrap(
        cls,
        saver: BaseCheckpointSaver[str],
        *,
        channel: str = DEFAULT_CHANNEL,
        database: str | None = None,
    ) -> CortexSaver:
        """A CortexSaver over one of LangGraph's savers, its substrate in the same database.

        ``InMemorySaver``, ``SqliteSaver`` (sharing its connection and lock),
        ``AsyncSqliteSaver``, ``PostgresSaver`` (connection or pool) and
        ``AsyncPostgresSaver``; a CortexSaver is returned as it is. The
        substrate tables are set up at once; :meth:`close` closes what this
        opened (never ``saver``)::

            app = graph.compile(checkpointer=CortexSaver.wrap(InMemorySaver()))

        Args:
            saver: The LangGraph saver.
            channel: The state key holding the substrate.
            database: An ``AsyncSqliteSaver``'s SQLite file, when its
                connection does not tell.

        Raises:
            InvalidArgument: a saver it does not know (build ``CortexSaver(saver, store)``).
            MissingExtra: a Postgres saver without the ``[postgres]`` extra.
        """
        if isinstance(saver, CortexSaver):
            if saver.channel != channel:
                raise InvalidArgument(
                    "channel",
                    f"must be {saver.channel!r}, the channel this CortexSaver already stores",
                    channel,
                )
            return saver
        store, locks = substrate_store(saver, database)  # wrap.py picks it; the saver is built here
        return CortexSaver(saver, store, channel=channel, locks=locks, owns_store=True)

    def stores_substrate(self, channel: str) -> bool:
        """Whether this saver stores ``channel`` as substrate rows."""
        return channel == self.channel

    def setup(self) -> None:
        """Set up the inner saver's tables (its ``setup()``, if any) and the substrate's.

        Raises:
            InvalidArgument: the inner saver sets up asynchronously (use :meth:`asetup`).
        """
        setup = getattr(self.inner, "setup", None)
        if inspect.iscoroutinefunction(setup):
            raise InvalidArgument(
                "setup", "is async for this saver: await saver.asetup()", type(self.inner).__name__
            )
        if setup is not None:
            setup()
        self.store.setup()

    async def asetup(self) -> None:
        """:meth:`setup` from async code (an async ``setup()`` is awaited, a sync one runs off the loop)."""
        setup = getattr(self.inner, "setup", None)
        if inspect.iscoroutinefunction(setup):
            await setup()
        elif setup is not None:
            await asyncio.to_thread(setup)
        await asyncio.to_thread(self.store.setup)

    def close(self) -> None:
        """Close the substrate store and locks if this saver opened them (the inner saver is the caller's)."""
        if self._owns_store:
            self.store.close()
            self.locks.close()

    # -- delegation ----------------------------------------------------------------------
    @property
    def config_specs(self) -> list[Any]:
        """The inner saver's configurable fields."""
        return self.inner.config_specs

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The inner saver's version scheme (mixing schemes breaks LangGraph)."""
        return self.inner.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> CortexSaver:
        """A saver whose inner saver deserialises the extra types too."""
        return CortexSaver(
            self.inner.with_allowlist(extra_allowlist),
            self.store,
            channel=self.channel,
            locks=self.locks,
            cursor_cache=self._cursor_cache,
            writers=self._writers,
            solo=self._solo,
        )  # the store stays this saver's to close

    # -- cursor bookkeeping --------------------------------------------------------------
    def _remember(self, key: _Key, cursor: Cursor, digest: bytes | None) -> None:
        with self._guard:
            self._cursors[key] = (cursor, digest)
            self._cursors.move_to_end(key)
            while len(self._cursors) > self._cursor_cache:
                self._cursors.popitem(last=False)

    def _recall(self, key: _Key) -> _Parent | None:
        with self._guard:
            known = self._cursors.get(key)
            if known is not None:
                self._cursors.move_to_end(key)
            return known

    def cache_sizes(self) -> dict[str, int]:
        """Entries of each in-memory cache: cursors, the store's, the lock map (all bounded)."""
        with self._guard:
            sizes = {"cursors": len(self._cursors)}
        sizes.update(self.store.cache_sizes())
        sizes["locks"] = self.locks.held()
        sizes["solo"] = len(self._solo)
        return sizes

    def _rehydrate(self, tup: CheckpointTuple | None) -> CheckpointTuple | None:
        return None if tup is None else self._rehydrate_one(tup)

    def _rehydrate_one(self, tup: CheckpointTuple) -> CheckpointTuple:
        values = tup.checkpoint["channel_values"]
        cursor = Cursor.decode(values.get(self.channel))
        if cursor is None:
            return tup
        thread_id, ns, checkpoint_id = _ids(tup.config)
        log = self.store.read(thread_id, ns, cursor)
        if checkpoint_id is not None:  # its hash is not computed for a read: maybe never needed
            self._remember((thread_id, ns, checkpoint_id), cursor, None)
        checkpoint: Checkpoint = {**tup.checkpoint, "channel_values": {**values, self.channel: log}}
        return tup._replace(checkpoint=checkpoint)

    def _parent_from(self, key: _Key, tup: CheckpointTuple | None) -> _Parent | None:
        cursor = (
            None
            if tup is None
            else Cursor.decode(tup.checkpoint["channel_values"].get(self.channel))
        )
        if cursor is None:
            return None
        self._remember(key, cursor, None)
        return cursor, None

    def _parent_config(self, key: _Key) -> RunnableConfig:
        return {
            "configurable": {"thread_id": key[0], "checkpoint_ns": key[1], "checkpoint_id": key[2]}
        }

    def _store_value(
        self, thread_id: str, ns: str, checkpoint: Checkpoint, parent: _Parent | None
    ) -> Checkpoint:
        """Append the checkpoint's new events; return the checkpoint with a cursor in place of the log.

        ``parent`` is the parent checkpoint's cursor and the chain hash of its
        log (``None``: no parent, or one without a substrate).
        """
        value = checkpoint["channel_values"][self.channel]
        base = EMPTY_CURSOR
        if parent is not None and self._extends(thread_id, ns, value, parent):
            base = parent[0]  # otherwise a new root branch, never a splice
        # the dicts the step made checking its events: each is converted once, not per use
        cursor = self.store.append(
            thread_id, ns, base, value.since(base.seq), value.event_dicts(base.seq), value
        )
        self._remember((thread_id, ns, checkpoint["id"]), cursor, value.digest)
        values = {**checkpoint["channel_values"], self.channel: cursor.encode()}
        return {**checkpoint, "channel_values": values}

    def _extends(self, thread_id: str, ns: str, value: SubstrateLog, parent: _Parent) -> bool:
        """Whether ``value`` starts with exactly the parent's log (compared by chain hash).

        Two forks of one thread with equal lengths and equal last events differ
        in their chain hashes, so a value is never spliced onto the wrong fork.
        A parent whose hash is not remembered is read through the store.
        """
        cursor, digest = parent
        if digest is None:
            return value.extends(self.store.read(thread_id, ns, cursor))
        return len(value) >= cursor.seq and value.prefix(cursor.seq).digest == digest

    def _substrate_value(self, checkpoint: Checkpoint) -> SubstrateLog | None:
        value = checkpoint["channel_values"].get(self.channel)
        if value is None or isinstance(value, SubstrateLog):
            return value
        raise InvalidArgument(
            f"channel_values.{self.channel}",
            "must hold a SubstrateLog (declare the key as Annotated[SubstrateLog, append_events])",
            type(value).__name__,
        )

    # -- sync API ------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint, with its substrate rehydrated."""
        return self._rehydrate(self.inner.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, each with its substrate rehydrated."""
        for tup in list(self.inner.list(config, filter=filter, before=before, limit=limit)):
            yield self._rehydrate(tup)  # type: ignore[misc]

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Append the substrate's new events, then store the checkpoint with a cursor.

        Raises:
            WriterFenced: this saver holds the thread's lock, and another writer
                took the thread since (nothing was written).
        """
        fence = self._fence(config)
        has_substrate = self._substrate_value(checkpoint) is not None
        if not has_substrate and fence is None:
            return self.inner.put(config, checkpoint, metadata, new_versions)
        thread_id, ns, parent_id = _ids(config)
        parent = None
        if parent_id is not None and has_substrate:
            key = (thread_id, ns, parent_id)
            parent = self._recall(key) or self._parent_from(
                key, self.inner.get_tuple(self._parent_config(key))
            )
        return self._put(fence, has_substrate, config, checkpoint, metadata, new_versions, parent)

    def _put(
        self,
        fence: Fence | None,
        has_substrate: bool,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        parent: _Parent | None,
    ) -> RunnableConfig:
        """Store the events and the checkpoint: in one transaction when the store can join it.

        A lock holder's checkpoint also stores, in that transaction, the held writes
        of the solo task that ran at its parent (:mod:`cortex_agents.persistence._solo`).
        """
        thread_id, ns, parent_id = _ids(config)
        joint = self._joint if fence is None else self._fencing
        held = None
        if fence is not None and joint is not None:
            held = self._solo.take(thread_id, parent_id)
        if joint is not None:
            try:
                # one transaction, one sync: the fence check, the events, the checkpoint
                # and the writes of the task that led to it
                with joint.atomic(
                    self.inner.serde, fence=fence, doing="checkpoint", pipelined=True
                ) as saver:
                    if has_substrate:
                        checkpoint = self._store_value(thread_id, ns, checkpoint, parent)
                    stored = saver.put(config, checkpoint, metadata, new_versions)
                    if held is not None:
                        saver.put_writes(held.config, held.writes, held.task_id, held.task_path)
                    return stored
            except BaseException as exc:
                if held is not None:  # the task's writes stay durable, whatever the checkpoint's
                    self._store_held(fence, [held], cause=exc)
                raise
        if has_substrate:
            checkpoint = self._store_value(thread_id, ns, checkpoint, parent)
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def _store_held(
        self, fence: Fence | None, held: Sequence[HeldWrites], cause: BaseException | None
    ) -> None:
        """Store held writes alone, in one fenced transaction; a failure is a note on ``cause``."""
        try:
            if self._fencing is None or fence is None:  # (never held so: a lock holder's only)
                for h in held:
                    self.inner.put_writes(h.config, h.writes, h.task_id, h.task_path)
                return
            with self._fencing.atomic(
                self.inner.serde, fence=fence, doing="writes", pipelined=True
            ) as saver:
                for h in held:
                    saver.put_writes(h.config, h.writes, h.task_id, h.task_path)
        except Exception as failed:
            if cause is None:
                raise
            cause.add_note(f"storing a solo task's held writes alone also failed: {failed!r}")

    def _fence(self, config: RunnableConfig) -> Fence | None:
        """The fence this saver holds for the config's thread, if it holds the thread's lock."""
        if not len(self._writers):
            return None
        thread_id = config.get("configurable", {}).get("thread_id")
        return None if thread_id is None else self._writers.get(str(thread_id))

    def _joint_store(self) -> JointStore | None:
        """The store, if it shares the inner saver's connection (:func:`open_saver`'s SQLite pair).

        Then every put joins the store's transaction, lock or not: one commit instead of two.
        """
        conn = getattr(self.store, "conn", None)
        if (
            conn is not None
            and hasattr(self.store, "atomic")
            and getattr(self.inner, "conn", None) is conn
        ):
            return cast(JointStore, self.store)
        return None

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Pending writes are per-task deltas already: stored as they are (fenced under the lock).

        Raises:
            WriterFenced: this saver holds the thread's lock, and another writer
                took the thread since (nothing was written).
        """
        fence = self._fence(config)
        if fence is not None and self._fencing is not None:
            offered = HeldWrites(config, writes, task_id, task_path)
            kept, earlier = self._solo.offer(_ids(config)[0], offered)
            if not kept:  # else stored with the next checkpoint (see persistence/solo.py)
                self._store_fenced(fence, offered, earlier)
            return
        self.inner.put_writes(config, writes, task_id, task_path)

    def _store_fenced(self, fence: Fence, writes: HeldWrites, earlier: HeldWrites | None) -> None:
        """Store a lock holder's writes in one fenced transaction (``earlier`` ones first)."""
        assert self._fencing is not None
        with self._fencing.atomic(
            self.inner.serde, fence=fence, doing="writes", pipelined=True
        ) as saver:
            for w in (earlier, writes):
                if w is not None:
                    saver.put_writes(w.config, w.writes, w.task_id, w.task_path)

    def expect_solo_writes(self, thread_id: str, checkpoint_id: str, task_id: str) -> bool:
        """Hold the writes of a task alone in its superstep, to store them with the next checkpoint.

        The runtime calls this from a stage it sent alone, just before the task
        ends. Only a lock holder's saver holds anything (its commits are fenced);
        what it holds is stored at the latest when the invocation's lock is
        released. See :mod:`cortex_agents.persistence._solo`.

        Args:
            thread_id: The thread.
            checkpoint_id: The checkpoint the task ran at (its writes' ``checkpoint_id``).
            task_id: The task.

        Returns:
            Whether the writes will be held.
        """
        thread_id = str(thread_id)
        if self._fencing is None or self._writers.get(thread_id) is None:
            return False
        return self._solo.expect(thread_id, checkpoint_id, task_id)

    def flush_solo_writes(self, thread_id: str, *, cause: BaseException | None = None) -> None:
        """Store alone what is still held for the thread, and end its solo registrations.

        Args:
            thread_id: The thread.
            cause: The error the invocation ends with, if any: a failure to store
                is then a note on it, never raised in its place.

        Raises:
            StorageError, WriterFenced: storing failed and there was no ``cause``.
        """
        self._flush_solo(str(thread_id), cause, close=False)

    def _flush_solo(self, thread_id: str, cause: BaseException | None, *, close: bool) -> None:
        """:meth:`flush_solo_writes`; ``close``: the lock's last, after which no task registers."""
        held = self._solo.drain(thread_id, close=close)
        if held:
            self._store_held(self._writers.get(thread_id), held, cause)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and substrate.

        ``thread_id`` may be any value LangGraph accepts (a UUID, an int): rows
        are keyed by its string, as when they were written.
        """
        self.inner.delete_thread(thread_id)
        self.store.delete_thread(str(thread_id))
        self._forget(str(thread_id))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Delegated: the substrate channel is not a delta channel."""
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    # -- async API -----------------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint, with its substrate rehydrated."""
        return await asyncio.to_thread(self._rehydrate, await self.inner.aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first, each with its substrate rehydrated."""
        # materialise first: some inner savers hold their lock while yielding
        tuples = [
            t async for t in self.inner.alist(config, filter=filter, before=before, limit=limit)
        ]
        for tup in tuples:
            yield await asyncio.to_thread(self._rehydrate_one, tup)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Append the substrate's new events, then store the checkpoint with a cursor.

        Raises:
            WriterFenced: this saver holds the thread's lock, and another writer
                took the thread since (nothing was written).
        """
        fence = self._fence(config)
        has_substrate = self._substrate_value(checkpoint) is not None
        if not has_substrate and fence is None:
            return await self.inner.aput(config, checkpoint, metadata, new_versions)
        thread_id, ns, parent_id = _ids(config)
        parent = None
        if parent_id is not None and has_substrate:
            key = (thread_id, ns, parent_id)
            known = self._recall(key)
            parent = (
                known
                if known is not None
                else await asyncio.to_thread(
                    self._parent_from,
                    key,
                    await self.inner.aget_tuple(self._parent_config(key)),
                )
            )
        if fence is not None and self._fencing is not None:  # the store's transaction: off the loop
            return await asyncio.to_thread(
                self._put, fence, has_substrate, config, checkpoint, metadata, new_versions, parent
            )
        if has_substrate:
            checkpoint = await asyncio.to_thread(
                self._store_value, thread_id, ns, checkpoint, parent
            )
        return await self.inner.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Pending writes are per-task deltas already: stored as they are (fenced under the lock)."""
        fence = self._fence(config)
        if fence is not None and self._fencing is not None:
            # Offered on the event loop, not in a worker thread: a checkpoint waiting (in a
            # worker thread) for these writes never depends on the loop's small thread pool.
            offered = HeldWrites(config, writes, task_id, task_path)
            kept, earlier = self._solo.offer(_ids(config)[0], offered)
            if not kept:  # the store's transaction: off the loop
                await asyncio.to_thread(self._store_fenced, fence, offered, earlier)
            return
        await self.inner.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and substrate."""
        await self.inner.adelete_thread(thread_id)
        await asyncio.to_thread(self.store.delete_thread, str(thread_id))
        self._forget(str(thread_id))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Delegated: the substrate channel is not a delta channel."""
        return await self.inner.aget_delta_channel_history(config=config, channels=channels)

    def _forget(self, thread_id: str) -> None:
        with self._guard:
            for key in [k for k in self._cursors if k[0] == thread_id]:
                del self._cursors[key]

    # -- optional capabilities: persistence/thread_ops.py, which types a saver by a Protocol --
    def forget_thread(self, thread_id: str) -> None:
        """Drop what this saver remembers of a thread (its rows were rewritten elsewhere)."""
        self._forget(str(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, pending write and substrate event of a thread to a new one."""
        thread_ops.copy_thread(self, source_thread_id, target_thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) of these runs (``metadata.run_id``)."""
        thread_ops.delete_for_runs(self, run_ids)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``), or none (``delete``)."""
        thread_ops.prune(self, thread_ids, strategy)

    @contextmanager
    def _transaction(self) -> Iterator[CortexSaver]:
        """A saver over the same store whose writes in the block commit together, or not at all."""
        if self._fencing is None:  # the in-memory twin: every write is already applied whole
            yield self
            return
        with self._fencing.atomic(self.inner.serde) as inner:
            yield CortexSaver(inner, self.store, channel=self.channel, locks=self.locks)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread`, off the event loop."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs`, off the event loop."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune`, off the event loop."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    # -- substrate access and locking ----------------------------------------------------
    def substrate(self, config: RunnableConfig) -> SubstrateLog | None:
        """The substrate of a checkpoint (the thread's latest when no ``checkpoint_id``)."""
        tup = self.get_tuple(config)
        return None if tup is None else tup.checkpoint["channel_values"].get(self.channel)

    @contextmanager
    def lock(self, thread_id: str, *, timeout: float | None = 0.0) -> Iterator[None]:
        """Hold the thread's writer lock around an invocation.

        Once the lock is held, the thread's writer epoch is raised, and until
        the block ends every commit of this saver for the thread checks it
        (fencing: :mod:`cortex_agents.persistence._fencing`).

        Raises:
            ThreadBusy: another writer held it past ``timeout`` seconds.
        """
        thread_id = str(thread_id)
        with self.locks.hold(thread_id, timeout) as lease:
            epoch = self.store.claim_writer(thread_id)
            with self._writers.holding(Fence(thread_id, epoch, lease)):
                self._solo.open(thread_id)
                try:
                    yield
                except BaseException as exc:
                    self._flush_solo(thread_id, exc, close=True)
                    raise
                self._flush_solo(thread_id, None, close=True)  # under the fence still

    @asynccontextmanager
    async def alock(self, thread_id: str, *, timeout: float | None = 0.0) -> AsyncIterator[None]:
        """:meth:`lock` for async code (waiting happens off the event loop)."""
        manager = self.lock(thread_id, timeout=timeout)
        await asyncio.to_thread(manager.__enter__)
        try:
            yield
        except BaseException as exc:  # the lock's exit sees it: a flush failure becomes its note
            await asyncio.to_thread(manager.__exit__, type(exc), exc, exc.__traceback__)
            raise
        await asyncio.to_thread(manager.__exit__, None, None, None)

    def check_writer(self, thread_id: str) -> None:
        """Raise :class:`WriterFenced` if this saver holds the thread's lock and the lock went away.

        Cheap (a ``stat`` of the lock file; a ``poll`` of the lock's Postgres
        connection, which is asked only when the server sent it something),
        and a no-op when this saver does not hold the thread. The runtime
        calls it before each stage body.
        """
        fence = self._writers.get(str(thread_id))
        if fence is not None:
            fence.check_lease()

    async def acheck_writer(self, thread_id: str) -> None:
        """:meth:`check_writer` for async code (off the event loop when it asks a server)."""
        fence = self._writers.get(str(thread_id))
        if fence is not None:
            await asyncio.to_thread(fence.check_lease)
