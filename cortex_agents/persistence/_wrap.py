"""``CortexSaver.wrap(saver)``: the substrate store that belongs with a LangGraph saver.

One line turns any saver LangGraph ships into a :class:`CortexSaver` whose
substrate rows live where its checkpoints live:

=============================  ==============================================================
``InMemorySaver``              :class:`InMemorySubstrateStore` (process memory, like the
                               saver; one per saver, so wrapping it again reads the same events)
``SqliteSaver(conn)``          :class:`SqliteSubstrateStore` on ``conn`` itself, under the
                               saver's lock: events and checkpoint commit in one transaction
``AsyncSqliteSaver(conn)``     :class:`SqliteSubstrateStore` on its own connection to the same
                               file (run off the event loop); in memory for ``:memory:``
``PostgresSaver(conn|pool)``   :class:`PostgresSubstrateStore` on its own connection to the
                               same database (the connection's or pool's settings, password
                               included)
``AsyncPostgresSaver(...)``    the same, for an ``AsyncConnection`` or ``AsyncConnectionPool``
=============================  ==============================================================

The substrate tables are created (or migrated) at once; the saver's own
tables are set up by its ``setup()`` as LangGraph documents (or by
:meth:`CortexSaver.setup` / :meth:`CortexSaver.asetup`, which do both). Writer
locks follow the database: a sidecar lock file for a SQLite file, advisory
locks for Postgres, in-process locks for memory.

This module picks the store (:func:`substrate_store`); :meth:`CortexSaver.wrap`
builds the saver over it. The dependency points one way, from the saver down
to here: this module names no saver class, so it never imports
:mod:`~cortex_agents.persistence._saver` back (no import cycle, issue 25).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence._inmemory import InMemorySubstrateStore
from cortex_agents.persistence._locks import FileLocks, PostgresLocks, ProcessLocks, ThreadLocks
from cortex_agents.persistence._misuse import RefusingSaver
from cortex_agents.persistence._store import SubstrateStore
from cortex_agents.persistence._urls import require_postgres_extra

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = ["SUPPORTED_SAVERS", "require_substrate_saver", "substrate_store"]

SUPPORTED_SAVERS = (
    "InMemorySaver",
    "SqliteSaver",
    "AsyncSqliteSaver",
    "PostgresSaver",
    "AsyncPostgresSaver",
)
"""The LangGraph savers :func:`substrate_store` knows (and their subclasses)."""

# Connection settings that are not part of a libpq connection string.
_NOT_CONNINFO = frozenset({"autocommit", "prepare_threshold", "row_factory", "cursor_factory"})


def substrate_store(
    saver: BaseCheckpointSaver[str], database: str | Path | None = None
) -> tuple[SubstrateStore, ThreadLocks]:
    """The substrate store (set up) and writer locks that belong with ``saver`` (see the module).

    :meth:`CortexSaver.wrap` builds its saver over what this returns; the store
    is the new saver's to close.

    Args:
        saver: One of LangGraph's savers (:data:`SUPPORTED_SAVERS`) or a subclass.
        database: For an ``AsyncSqliteSaver`` whose file cannot be read from
            its connection: the SQLite file it uses.

    Raises:
        InvalidArgument: ``saver`` is not a saver this function knows.
        MissingExtra: a Postgres saver without the ``[postgres]`` extra.
    """
    if isinstance(saver, RefusingSaver):
        raise saver.misuse()  # open_saver(db) where `with open_saver(db) as saver` was meant
    kind = _kind(saver)
    if kind is None:
        raise InvalidArgument(
            "saver",
            f"must be one of LangGraph's savers ({', '.join(SUPPORTED_SAVERS)}) or a subclass; "
            "for another saver build CortexSaver(saver, store) with a SubstrateStore in the "
            "same database",
            type(saver).__name__,
        )
    store, locks = _STORES[kind](saver, database)
    try:
        store.setup()
    except BaseException:
        store.close()
        raise
    return store, locks


def _kind(saver: Any) -> str | None:
    """Which shipped saver ``saver`` is (its nearest shipped base class)."""
    for cls in type(saver).__mro__:
        if cls.__name__ in SUPPORTED_SAVERS and cls.__module__.startswith("langgraph.checkpoint."):
            return cls.__name__
    return None


# One substrate store per InMemorySaver: wrapping the same saver again (a graph compiled
# twice, a second Runtime) must read the events the first wrapper wrote.
_MEMORY_STORES: weakref.WeakKeyDictionary[Any, InMemorySubstrateStore] = weakref.WeakKeyDictionary()
_MEMORY_GUARD = threading.Lock()


def _memory(saver: Any, database: str | Path | None) -> tuple[SubstrateStore, ThreadLocks]:
    with _MEMORY_GUARD:
        store = _MEMORY_STORES.get(saver)
        if store is None:
            store = _MEMORY_STORES[saver] = InMemorySubstrateStore()
    return store, ProcessLocks()


def _sqlite(saver: Any, database: str | Path | None) -> tuple[SubstrateStore, ThreadLocks]:
    """The saver's own connection and lock: one transaction for events and checkpoint."""
    from cortex_agents.persistence._sql import SqliteSubstrateStore

    conn: sqlite3.Connection = saver.conn
    with saver.lock:
        path = _sqlite_file(conn)
        # The substrate tables declare foreign keys; SQLite checks them only when asked to.
        if not conn.in_transaction:
            conn.execute("PRAGMA foreign_keys=ON")
    # The atomic put writes checkpoints with a SqliteSaver of its own: the tables must exist.
    saver.setup()
    store = SqliteSubstrateStore(path or ":memory:", connection=conn, connection_lock=saver.lock)
    return store, FileLocks(path) if path else ProcessLocks()


def _async_sqlite(saver: Any, database: str | Path | None) -> tuple[SubstrateStore, ThreadLocks]:
    """A connection of the store's own to the saver's file; in memory for an in-memory database."""
    from cortex_agents.persistence._sql import SqliteSubstrateStore

    path = str(database) if database is not None else _aiosqlite_file(saver.conn)
    if path is None:
        raise InvalidArgument(
            "database",
            "is required: the SQLite file of this AsyncSqliteSaver's connection cannot be read "
            "from it; pass CortexSaver.wrap(saver, database='path/to/file.db')",
            None,
        )
    if path in ("", ":memory:") or path.startswith("file::memory:"):
        return InMemorySubstrateStore(), ProcessLocks()
    return SqliteSubstrateStore(path), FileLocks(path)


def _postgres(saver: Any, database: str | Path | None) -> tuple[SubstrateStore, ThreadLocks]:
    """A connection of the store's own, to the database the saver's connection or pool uses."""
    require_postgres_extra("a Postgres checkpointer")
    from cortex_agents.persistence._sql import PostgresSubstrateStore

    conninfo = str(database) if database is not None else postgres_conninfo(saver.conn)
    return PostgresSubstrateStore(conninfo), PostgresLocks(conninfo)


_STORES = {
    "InMemorySaver": _memory,
    "SqliteSaver": _sqlite,
    "AsyncSqliteSaver": _async_sqlite,
    "PostgresSaver": _postgres,
    "AsyncPostgresSaver": _postgres,
}


def _sqlite_file(conn: sqlite3.Connection) -> str:
    """The main database file of ``conn`` (``""`` for an in-memory or temporary database)."""
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return file or ""
    return ""


def _aiosqlite_file(conn: Any) -> str | None:
    """The database ``aiosqlite.connect`` was given, read from its connector (``None``: unknown)."""
    connector = getattr(conn, "_connector", None)
    code = getattr(connector, "__code__", None)
    cells = getattr(connector, "__closure__", None)
    if code is None or cells is None:
        return None
    values = dict(zip(code.co_freevars, (c.cell_contents for c in cells), strict=False))
    database = values.get("database")
    if isinstance(database, bytes):
        return database.decode()
    if isinstance(database, str | Path):
        return str(database)
    return None


def postgres_conninfo(conn: Any) -> str:
    """The connection string of a psycopg connection or pool (sync or async), password included.

    Raises:
        InvalidArgument: ``conn`` is neither.
    """
    from psycopg.conninfo import make_conninfo

    info = getattr(conn, "info", None)
    if info is not None and hasattr(info, "dsn"):  # a Connection or AsyncConnection
        password = getattr(info, "password", None)
        return make_conninfo(info.dsn, **({"password": password} if password else {}))
    conninfo = getattr(conn, "conninfo", None)
    if isinstance(conninfo, str):  # a ConnectionPool or AsyncConnectionPool
        extra = {
            k: v
            for k, v in (getattr(conn, "kwargs", None) or {}).items()
            if k not in _NOT_CONNINFO and isinstance(v, str | int)
        }
        return make_conninfo(conninfo, **extra)
    raise InvalidArgument(
        "saver.conn",
        "must be a psycopg connection or connection pool (sync or async)",
        type(conn).__name__,
    )


# LangGraph puts the graph's checkpointer in each task's config under this key.
_CHECKPOINTER_KEY = "__pregel_checkpointer"


def require_substrate_saver(config: Any, channel: str) -> None:
    """Check, as a node starts, that the graph's checkpointer can store the substrate channel.

    A graph without a checkpointer passes (nothing is stored). Under a plain
    LangGraph saver the first checkpoint holding the substrate would fail
    inside LangGraph with ``TypeError: Type is not msgpack serializable``
    (and LangGraph would re-serialise the whole log at every step); this
    fails first, naming the fix.

    Raises:
        UnsupportedCheckpointer: a checkpointer that does not store ``channel`` as rows.
    """
    from cortex_agents.errors import UnsupportedCheckpointer

    configurable = (config or {}).get("configurable") or {}
    checkpointer = configurable.get(_CHECKPOINTER_KEY)
    if checkpointer is None or isinstance(checkpointer, bool):
        return
    stores = getattr(checkpointer, "stores_substrate", None)
    if callable(stores) and stores(channel):
        return
    detail = ""
    other = getattr(checkpointer, "channel", None)
    if callable(stores) and isinstance(other, str):
        detail = f" (it stores {other!r}: wrap with CortexSaver.wrap(saver, channel={channel!r}))"
    raise UnsupportedCheckpointer(type(checkpointer).__name__, channel, detail)
