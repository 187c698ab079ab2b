"""Atomic read-modify-write on a LangGraph store: one scratch writer per namespace at a time.

LangGraph's :class:`~langgraph.store.base.BaseStore` has no compare-and-set,
no version and no transaction hook, and ``batch`` runs its reads before its
writes, so ``get`` then ``put`` loses updates when two writers interleave
(measured: 4 processes x 50 increments keep about 50 of 200 on SQLite and on
Postgres). A :class:`WriteGuard` closes that gap: scratch memory runs every
append, update and delete inside ``guard.hold(namespace)``, which excludes
every other scratch writer of the namespace, in this process and in others,
and yields the store to read and write through.

How each backend is guarded (:func:`guard_for` builds one):

- ``InMemoryStore``, and a ``SqliteStore`` on an in-memory database: a
  :class:`threading.Lock` owned by the guard. Nothing outside the process can
  reach such a store, but every writer must share the one guard object, so a
  :class:`~cortex_agents.scratch.ScratchBackend` owns it and passes it to
  every memory it binds. No lock lives in module state.
- ``SqliteStore`` on a file: an exclusive ``flock`` on a sidecar file
  ``<database>.scratch-lock``. ``flock`` belongs to the open file
  description, so it excludes threads of this process as well as other
  processes; SQLite files are only shared on one host. The guarded ``get``
  and ``put`` are then ordinary store calls, and a multi-key write (deleting
  a directory) is one ``batch``, which SqliteStore runs in one transaction.
  POSIX only (``fcntl``).
- ``PostgresStore``: a transaction on one connection (the store's own
  connection, or one checked out of the store's pool) that first takes
  ``pg_advisory_xact_lock`` on a 64-bit hash of the namespace; the guarded
  operations run through a short-lived ``PostgresStore`` bound to that
  connection, so they are inside the transaction and commit or roll back
  together. With a single shared connection the guard also holds the
  store's ``lock`` attribute (the ``threading.Lock`` PostgresStore itself
  takes around each batch on that connection) so that no other thread's
  statements land inside the transaction. That attribute is the one piece
  of LangGraph implementation detail used here; it is not underscored, and
  the tests pin the behaviour. A store opened with ``pipeline=True`` is
  refused, because it does not take that lock. The short-lived store is
  built from the connection alone, so it has no ``ttl``, ``index`` or custom
  ``deserializer``: scratch items are plain ``{"content": ...}`` values
  written with ``index=False`` and need none. ``PostgresStore.sweep_ttl``
  does not take ``lock``, so do not run a TTL sweeper on a store shared with
  scratch memory.

Every scratch writer of a namespace must go through the same kind of guard.
Readers take no lock: every write is one ``put`` or one ``batch``, so a
reader sees the memory before or after a write, never half of one.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore

from cortex_agents.errors import InvalidArgument

__all__ = [
    "PostgresAdvisoryGuard",
    "ProcessLockGuard",
    "SqliteFileGuard",
    "WriteGuard",
    "guard_for",
]

Namespace = tuple[str, ...]


@runtime_checkable
class WriteGuard(Protocol):
    """Serialises scratch writers of one namespace, across threads and processes."""

    def hold(self, namespace: Namespace) -> AbstractContextManager[BaseStore]:
        """Exclude other writers of ``namespace`` while the block runs.

        Args:
            namespace: The store namespace about to be read and written.

        Returns:
            A context manager yielding the store to read and write through
            inside the block. When the block raises, whatever the backend
            can undo is undone and the exception propagates.
        """
        ...


@dataclass(frozen=True, slots=True)
class ProcessLockGuard:
    """A process-local lock; enough for stores no other process can reach.

    Every writer of the store must hold the *same* guard object: two guards
    built for one store have two locks and exclude nothing. A
    :class:`~cortex_agents.scratch.ScratchBackend` owns one guard and hands it
    to every memory it binds.

    Attributes:
        store: The guarded store (``InMemoryStore`` or in-memory SQLite).
        lock: The lock every writer holds; a new one per guard by default. Two
            guards are equal only when they share it.
    """

    store: BaseStore
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextmanager
    def hold(self, namespace: Namespace) -> Iterator[BaseStore]:
        """See :meth:`WriteGuard.hold`. Excludes writers of every namespace of the store."""
        with self.lock:
            yield self.store


@dataclass(frozen=True, slots=True)
class SqliteFileGuard:
    """An exclusive ``flock`` on ``<database>.scratch-lock`` beside a SQLite file.

    Attributes:
        store: The guarded ``SqliteStore``.
        lock_path: The sidecar file; created on first use and left in place.
    """

    store: BaseStore
    lock_path: str

    @contextmanager
    def hold(self, namespace: Namespace) -> Iterator[BaseStore]:
        """See :meth:`WriteGuard.hold`. Locks the whole database file."""
        import fcntl  # POSIX only; imported here so the package imports everywhere

        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield self.store
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _advisory_key(namespace: Namespace) -> int:
    """The signed 64-bit Postgres advisory-lock key of a scratch namespace."""
    # NUL joins the labels (ids cannot hold one), so distinct namespaces hash
    # distinct texts; the prefix keeps the keys apart from other advisory locks
    # taken on the same database.
    text = "cortex-agents/scratch\x00" + "\x00".join(namespace)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    # Signed: pg_advisory_xact_lock takes a bigint, and an unsigned 64-bit value
    # could overflow it.
    return int.from_bytes(digest, "big", signed=True)


@dataclass(frozen=True, slots=True)
class PostgresAdvisoryGuard:
    """A transaction holding ``pg_advisory_xact_lock`` on the namespace's key.

    Attributes:
        store: The guarded ``PostgresStore`` (one connection or a pool).
    """

    store: Any  # a PostgresStore; typed loosely so this module imports without psycopg

    @contextmanager
    def hold(self, namespace: Namespace) -> Iterator[BaseStore]:
        """See :meth:`WriteGuard.hold`. Commits on success, rolls back on error."""
        from psycopg import Connection

        if isinstance(self.store.conn, Connection):
            # The shared connection: keep other threads' statements out of the
            # transaction by holding the lock PostgresStore takes around its batches.
            with self.store.lock, self._transaction(self.store.conn, namespace) as store:
                yield store
        else:
            with self.store.conn.connection() as conn, self._transaction(conn, namespace) as store:
                yield store

    @staticmethod
    @contextmanager
    def _transaction(conn: Any, namespace: Namespace) -> Iterator[BaseStore]:
        from langgraph.store.postgres import PostgresStore

        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_advisory_key(namespace),))
            yield PostgresStore(conn)


def _is_postgres_store(store: object) -> bool:
    """Whether ``store`` is a ``PostgresStore`` (never, without the [postgres] extra)."""
    try:
        from langgraph.store.postgres import PostgresStore
    except ImportError:
        return False
    return isinstance(store, PostgresStore)


def guard_for(store: BaseStore) -> WriteGuard:
    """The write guard that makes read-modify-write atomic on ``store``.

    Args:
        store: An ``InMemoryStore``, ``SqliteStore`` or ``PostgresStore``
            (subclasses included).

    Returns:
        A new guard for that backend (see the module docstring). Call this
        once per store and share the result: a process-local guard excludes
        only the writers that hold the same guard object.

    Raises:
        InvalidArgument: ``store`` is another kind of store (build a
            :class:`~cortex_agents.scratch.ScratchBackend` from it and your own
            :class:`WriteGuard` instead), or a ``PostgresStore`` opened with
            ``pipeline=True``.
    """
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    if isinstance(store, InMemoryStore):
        return ProcessLockGuard(store)
    if isinstance(store, SqliteStore):
        rows = store.conn.execute("PRAGMA database_list").fetchall()
        # SQLite reports an empty file name for an in-memory or temporary database:
        # nothing outside this process can reach it, so a process lock suffices.
        main_file = next((row[2] for row in rows if row[1] == "main"), "")
        if not main_file:
            return ProcessLockGuard(store)
        return SqliteFileGuard(store, main_file + ".scratch-lock")
    if _is_postgres_store(store):
        if getattr(store, "pipe", None) is not None:
            raise InvalidArgument(
                "store",
                "is a PostgresStore opened with `pipeline=True`, whose writes cannot be "
                "guarded; open it without `pipeline` (one connection) or with `pool_config`",
                type(store).__name__,
            )
        return PostgresAdvisoryGuard(store)
    raise InvalidArgument(
        "store",
        "must be an InMemoryStore, SqliteStore or PostgresStore; for another store, build "
        "`ScratchBackend(store, guard)` with a WriteGuard that makes read-modify-write "
        "atomic on it",
        type(store).__name__,
    )
