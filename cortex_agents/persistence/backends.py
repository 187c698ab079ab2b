"""Open a :class:`CortexSaver` on a database: a SQLite path, a ``postgresql://`` URL, or memory.

The inner LangGraph saver and the substrate tables live in the same database;
both are set up (created or migrated) on open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from cortex_agents.persistence.locks import FileLocks, PostgresLocks, ProcessLocks
from cortex_agents.persistence.memory import InMemorySubstrateStore
from cortex_agents.persistence.saver import DEFAULT_CHANNEL, CortexSaver
from cortex_agents.persistence.sql import (
    PostgresSubstrateStore,
    SqliteSubstrateStore,
    Synchronous,
    sqlite_connect,
)
from cortex_agents.persistence.urls import is_postgres_url, postgres_reachable, sqlite_path

__all__ = ["aopen_saver", "is_postgres_url", "memory_saver", "open_saver"]


def memory_saver(*, channel: str = DEFAULT_CHANNEL) -> CortexSaver:
    """A saver that keeps checkpoints and substrate in process memory (tests, demos)."""
    from langgraph.checkpoint.memory import InMemorySaver

    return CortexSaver(
        InMemorySaver(), InMemorySubstrateStore(), channel=channel, locks=ProcessLocks()
    )


@contextmanager
def open_saver(
    db: str | Path, *, synchronous: Synchronous = "FULL", channel: str = DEFAULT_CHANNEL
) -> Iterator[CortexSaver]:
    """A sync saver over ``SqliteSaver`` or ``PostgresSaver``, closed on exit.

    Args:
        db: A SQLite file path (created if missing) or a ``postgresql://`` URL.
        synchronous: SQLite's ``synchronous`` pragma: ``FULL`` (default) or ``NORMAL``.
        channel: The state key holding the substrate.
    """
    if is_postgres_url(db):
        from langgraph.checkpoint.postgres import PostgresSaver

        with postgres_reachable(str(db)):
            store = PostgresSubstrateStore(str(db))
        try:
            with PostgresSaver.from_conn_string(str(db)) as inner:
                store.setup()
                with (
                    store.conn.transaction()
                ):  # LangGraph's migrations are not safe to run twice at once
                    store.conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended('cortex_setup', 0))"
                    )
                    inner.setup()
                yield CortexSaver(inner, store, channel=channel, locks=PostgresLocks(str(db)))
        finally:
            store.close()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = sqlite_path(db)
    conn = sqlite_connect(path, synchronous=synchronous)
    try:
        inner = SqliteSaver(conn)
        # One connection for both: within a process they never contend for SQLite's write lock.
        store = SqliteSubstrateStore(path, connection=conn, connection_lock=inner.lock)
        store.setup()
        inner.setup()
        yield CortexSaver(inner, store, channel=channel, locks=FileLocks(path))
    finally:
        conn.close()


@asynccontextmanager
async def aopen_saver(
    db: str | Path, *, synchronous: Synchronous = "FULL", channel: str = DEFAULT_CHANNEL
) -> AsyncIterator[CortexSaver]:
    """An async saver over ``AsyncSqliteSaver`` or ``AsyncPostgresSaver``, closed on exit.

    The substrate store is synchronous and runs off the event loop.
    """
    import asyncio

    if is_postgres_url(db):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        with postgres_reachable(str(db)):
            store = PostgresSubstrateStore(str(db))
        try:
            async with AsyncPostgresSaver.from_conn_string(str(db)) as inner:
                await asyncio.to_thread(store.setup)
                await inner.setup()
                yield CortexSaver(inner, store, channel=channel, locks=PostgresLocks(str(db)))
        finally:
            store.close()
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = sqlite_path(db)
    store = SqliteSubstrateStore(path, synchronous=synchronous)
    try:
        await asyncio.to_thread(store.setup)
        async with aiosqlite.connect(str(path), timeout=5.0) as conn:
            await conn.execute(f"PRAGMA synchronous={synchronous}")
            await conn.execute("PRAGMA busy_timeout=5000")
            inner = AsyncSqliteSaver(conn)
            await inner.setup()
            yield CortexSaver(inner, store, channel=channel, locks=FileLocks(path))
    finally:
        store.close()
