"""Open a :class:`CortexSaver` on a database: a SQLite path, a ``postgresql://`` URL, or memory.

The inner LangGraph saver and the substrate tables live in the same database;
both are set up (created or migrated) on open.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

from cortex_agents.errors import StorageError
from cortex_agents.persistence._inmemory import InMemorySubstrateStore
from cortex_agents.persistence._locks import (
    FileLocks,
    PostgresLocks,
    ProcessLocks,
    scalar,
)
from cortex_agents.persistence._saver import DEFAULT_CHANNEL, CortexSaver
from cortex_agents.persistence._saver_context import AsyncSaverContext, SaverContext
from cortex_agents.persistence._sql import (
    PostgresSubstrateStore,
    SqliteSubstrateStore,
    Synchronous,
    sqlite_connect,
    sqlite_open_error,
)
from cortex_agents.persistence._urls import (
    is_postgres_url,
    postgres_reachable,
    redact_url,
    require_postgres_extra,
    sqlite_path,
)
from cortex_agents.snapshotfile import SQLITE_HEADER as _SQLITE_HEADER

__all__ = [
    "aopen_saver",
    "check_writable",
    "is_postgres_url",
    "memory_saver",
    "open_saver",
    "require_database",
]

_MARKER = "cortex_migrations"  # the table every cortex-agents database has from its first open
_SETUP_KEY = "hashtextextended('cortex_setup', 0)"
SETUP_TIMEOUT_S = 120.0
"""How long an opener waits for another process to finish setting up a Postgres database."""


@contextmanager
def postgres_setup_lock(url: str, *, timeout: float = SETUP_TIMEOUT_S) -> Iterator[None]:
    """Hold the database's setup lock (a session advisory lock) while the schema is set up.

    LangGraph's Postgres migrations run ``CREATE INDEX CONCURRENTLY``, which
    waits for every transaction open in the database, and for every statement
    holding a snapshot. So the lock is never waited for inside a transaction or
    a blocking statement: waiters poll ``pg_try_advisory_lock`` on an
    autocommit connection, each poll a statement that ends at once, and the
    holder's own connection stays idle while the setup runs on others.

    Raises:
        StorageError: ``busy`` (another process held the lock past ``timeout``
            seconds), ``unreachable``.
    """
    import psycopg

    with postgres_reachable(url), psycopg.connect(url, autocommit=True) as conn:
        started = time.monotonic()
        while not scalar(conn.execute(f"SELECT pg_try_advisory_lock({_SETUP_KEY})")):
            if time.monotonic() - started > timeout:
                raise StorageError(
                    "busy",
                    f"another process has been setting up {redact_url(url)} for over "
                    f"{timeout:.0f} s; retry when it is done",
                )
            time.sleep(0.05)
        try:
            yield
        finally:
            conn.execute(f"SELECT pg_advisory_unlock({_SETUP_KEY})")


def _has_marker(uri: str) -> bool:
    conn = sqlite3.connect(uri, uri=True)
    try:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return conn.execute(query, (_MARKER,)).fetchone() is not None
    finally:
        conn.close()


def require_database(db: str | Path) -> None:
    """Check, reading only, that ``db`` is an existing cortex-agents database.

    :func:`open_saver` creates and migrates what it opens; a command that
    only reads (inspect, export, ...) calls this first, so that a wrong path
    — a missing file, an empty file, some other SQLite or non-SQLite file,
    a Postgres database cortex-agents never used — is refused with nothing
    changed.

    Raises:
        StorageError: ``not_found`` (no such file), ``not_a_database`` (not a
            cortex-agents database), ``unreachable`` (Postgres refused).
    """
    if is_postgres_url(db):
        require_postgres_extra()
        import psycopg

        with postgres_reachable(str(db)), psycopg.connect(str(db)) as conn:
            row = conn.execute("SELECT to_regclass(%s)", (_MARKER,)).fetchone()
        if row is None or row[0] is None:
            raise StorageError(
                "not_a_database",
                f"{redact_url(str(db))} holds no cortex-agents tables; nothing was changed",
            )
        return
    path = sqlite_path(db)
    if not path.is_file():
        raise StorageError("not_found", f"no database at {str(db)!r}")
    uri = path.resolve().as_uri()
    try:
        try:
            found = _has_marker(f"{uri}?mode=ro")
        except sqlite3.DatabaseError as exc:
            code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
            if code != sqlite3.SQLITE_READONLY or path.with_name(f"{path.name}-wal").exists():
                raise
            # A read-only folder and no write-ahead log to read: the file alone is the database.
            found = _has_marker(f"{uri}?mode=ro&immutable=1")
    except sqlite3.DatabaseError as exc:
        error = sqlite_open_error(db, exc)
        raise StorageError(error.code, f"{error}; nothing was changed") from None
    if not found:
        raise StorageError(
            "not_a_database",
            f"{str(db)!r} is not a cortex-agents database (it has no cortex tables); "
            "nothing was changed",
        )


def _sqlite_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name"
    ).fetchall()
    return [r[0] for r in rows]


def _foreign(where: str, tables: list[str]) -> StorageError:
    shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
    return StorageError(
        "foreign_database",
        f"{where} holds another application's tables ({shown}) and no cortex-agents tables; "
        "nothing was changed. To add cortex tables to it, adopt it explicitly "
        "(--adopt / adopt=True)",
    )


def check_writable(db: str | Path, *, adopt: bool = False, check_integrity: bool = True) -> None:
    """Check, reading only, that a command may create or write the database at ``db``.

    A missing or empty file is a new database. An existing one must pass
    SQLite's ``quick_check`` (unless ``check_integrity=False``), and must be a
    cortex-agents database — or ``adopt=True`` must say that adding cortex
    tables to another application's database is intended (a Postgres
    database with tables of its own counts as another application's too).

    Raises:
        StorageError: ``corrupt`` (the file fails the integrity check),
            ``foreign_database``, ``not_a_database``, ``unreachable``.
    """
    if is_postgres_url(db):
        require_postgres_extra()
        import psycopg

        with postgres_reachable(str(db)), psycopg.connect(str(db)) as pg:
            ours = scalar(pg.execute("SELECT to_regclass(%s)", (_MARKER,)))
            if ours is None and not adopt:
                rows = pg.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema() ORDER BY table_name"
                ).fetchall()
                if rows:
                    raise _foreign(redact_url(str(db)), [r[0] for r in rows])
        return
    path = sqlite_path(db)
    if not path.is_file() or path.stat().st_size == 0:
        return  # a new database (sqlite_connect explains paths it cannot open)
    with path.open("rb") as handle:
        if handle.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
            return  # not SQLite at all: opening it says so
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise sqlite_open_error(db, exc) from None
    try:
        if check_integrity:
            found = [r[0] for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
            if found != ["ok"]:
                raise _corrupt(db, "; ".join(found))
        tables = _sqlite_tables(conn)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise sqlite_open_error(db, exc) from None
        raise _corrupt(db, str(exc)) from exc
    finally:
        conn.close()
    if _MARKER not in tables and tables and not adopt:
        raise _foreign(repr(str(db)), tables)


def _corrupt(db: str | Path, detail: str) -> StorageError:
    return StorageError(
        "corrupt",
        f"{str(db)!r} fails SQLite's integrity check ({detail[:300]}); nothing was written. "
        "Restore it from a backup, or write anyway (--skip-integrity-check / check_integrity=False)",
    )


def memory_saver(*, channel: str = DEFAULT_CHANNEL) -> CortexSaver:
    """A saver that keeps checkpoints and substrate in process memory (tests, demos)."""
    from langgraph.checkpoint.memory import InMemorySaver

    return CortexSaver(
        InMemorySaver(), InMemorySubstrateStore(), channel=channel, locks=ProcessLocks()
    )


def open_saver(
    db: str | Path, *, synchronous: Synchronous = "FULL", channel: str = DEFAULT_CHANNEL
) -> SaverContext:
    """A context manager opening a sync saver over ``SqliteSaver`` or ``PostgresSaver``.

    The saver lives for the ``with`` block and is closed on exit::

        with open_saver("work.db") as saver:
            graph = builder.compile(checkpointer=saver)
            graph.invoke(...)

    The context manager is not a saver: ``checkpointer=open_saver("work.db")``
    raises :class:`~cortex_agents.errors.InvalidArgument` on the graph's first
    step, naming the ``with`` statement to write.

    Args:
        db: A SQLite file path (created if missing) or a ``postgresql://`` URL.
        synchronous: SQLite's ``synchronous`` pragma: ``FULL`` (default) or ``NORMAL``.
        channel: The state key holding the substrate.
    """
    return SaverContext(
        f"open_saver({str(db)!r})",
        lambda: _opened_saver(db, synchronous=synchronous, channel=channel),
    )


def _opened_saver(
    db: str | Path, *, synchronous: Synchronous, channel: str
) -> Iterator[CortexSaver]:
    """The body of :func:`open_saver`'s context manager."""
    if is_postgres_url(db):
        require_postgres_extra()
        from langgraph.checkpoint.postgres import PostgresSaver

        with postgres_reachable(str(db)):
            pg_store = PostgresSubstrateStore(str(db))
        locks = PostgresLocks(str(db))
        try:
            with PostgresSaver.from_conn_string(str(db)) as pg_inner:
                # LangGraph's migrations are not safe to run twice at once
                with postgres_setup_lock(str(db)):
                    pg_store.setup()
                    pg_inner.setup()
                yield CortexSaver(pg_inner, pg_store, channel=channel, locks=locks)
        finally:
            locks.close()
            pg_store.close()
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


def aopen_saver(
    db: str | Path, *, synchronous: Synchronous = "FULL", channel: str = DEFAULT_CHANNEL
) -> AsyncSaverContext:
    """An async context manager opening a saver over ``AsyncSqliteSaver`` or ``AsyncPostgresSaver``.

    The saver lives for the ``async with`` block and is closed on exit; the
    substrate store is synchronous and runs off the event loop. As with
    :func:`open_saver`, the context manager is not a saver: pass the saver it
    yields as the checkpointer.

    Args:
        db: A SQLite file path (created if missing) or a ``postgresql://`` URL.
        synchronous: SQLite's ``synchronous`` pragma: ``FULL`` (default) or ``NORMAL``.
        channel: The state key holding the substrate.
    """
    return AsyncSaverContext(
        f"aopen_saver({str(db)!r})",
        lambda: _aopened_saver(db, synchronous=synchronous, channel=channel),
    )


async def _aopened_saver(
    db: str | Path, *, synchronous: Synchronous, channel: str
) -> AsyncIterator[CortexSaver]:
    """The body of :func:`aopen_saver`'s context manager."""
    import asyncio

    if is_postgres_url(db):
        require_postgres_extra()
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        with postgres_reachable(str(db)):
            pg_store = PostgresSubstrateStore(str(db))
        locks = PostgresLocks(str(db))
        try:
            async with AsyncPostgresSaver.from_conn_string(str(db)) as pg_inner:
                lock = postgres_setup_lock(str(db))
                await asyncio.to_thread(lock.__enter__)
                try:
                    await asyncio.to_thread(pg_store.setup)
                    await pg_inner.setup()
                finally:
                    await asyncio.to_thread(lock.__exit__, None, None, None)
                yield CortexSaver(pg_inner, pg_store, channel=channel, locks=locks)
        finally:
            locks.close()
            pg_store.close()
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = sqlite_path(db)
    store = SqliteSubstrateStore(path, synchronous=synchronous)
    try:
        await asyncio.to_thread(store.setup)
        async with aiosqlite.connect(str(path), timeout=5.0) as conn:
            # the same settings as every other connection (sqlite_connect); the store set WAL
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(f"PRAGMA synchronous={synchronous}")
            await conn.execute("PRAGMA busy_timeout=5000")
            await conn.execute("PRAGMA foreign_keys=ON")
            inner = AsyncSqliteSaver(conn)
            await inner.setup()
            yield CortexSaver(inner, store, channel=channel, locks=FileLocks(path))
    finally:
        store.close()
