"""Open a :class:`~cortex_agents.scratch.ScratchBackend` on a database, as ``open_saver`` does.

:func:`open_scratch` takes the ``db`` that
:func:`~cortex_agents.persistence.open_saver` takes, so scratch memory can
live in the checkpointer's database: LangGraph's store tables (``store``,
``store_migrations``) do not clash with the checkpointer's or the
substrate's. What it opens, and how writers are kept apart
(:mod:`cortex_agents.scratch._atomic`):

- ``None``: an ``InMemoryStore`` guarded by a process-local lock; the memory
  is gone when the block exits. For tests and demos.
- a SQLite file path (the default for real use): a ``SqliteStore`` on its
  own connection to the file (WAL journal, 5 s busy timeout), guarded by an
  ``flock`` on ``<file>.scratch-lock``. The file is created if missing; its
  directory must exist.
- a ``postgresql://`` (or ``postgres://``) URL: a ``PostgresStore`` on one
  connection, guarded by ``pg_advisory_xact_lock`` per namespace.

The store is set up (LangGraph's migrations run) on open. Its migrations are
not safe to run twice at once, so concurrent openers of a fresh database take
turns: on SQLite under the file's scratch lock, on Postgres under a session
advisory lock (see :func:`_setup_turn`).

Errors, raised before anything is yielded:
:class:`~cortex_agents.errors.StorageError` with code ``unreachable`` when
the database cannot be opened (the message names the SQLite path or the
Postgres URL without its password), ``unsupported_url`` for a URL of another
scheme, and ``busy`` when another process held the Postgres setup turn for
:data:`SETUP_TIMEOUT_S` seconds; :class:`~cortex_agents.errors.InvalidArgument`
when ``db`` is neither a non-empty path nor None.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.persistence._sql import sqlite_connect
from cortex_agents.persistence._urls import (
    is_postgres_url,
    postgres_reachable,
    redact_url,
    require_postgres_extra,
    sqlite_path,
)
from cortex_agents.scratch._store import NAMESPACE_ROOT, ScratchBackend

__all__ = ["SETUP_TIMEOUT_S", "open_scratch"]

SETUP_TIMEOUT_S: Final = 60.0
"""Longest wait for another process to finish setting up a Postgres database."""

_BUSY_TIMEOUT_S: Final = 5.0
_SETUP_KEY: Final = "hashtextextended('cortex_scratch_setup', 0)"


@contextmanager
def open_scratch(db: str | Path | None) -> Iterator[ScratchBackend]:
    """A scratch backend on ``db``, set up on open and closed on exit.

    Args:
        db: A SQLite file path (created if missing; its directory must
            exist), a ``postgresql://`` URL, or None for process memory.

    Yields:
        The backend; bind each stage's memory with
        :meth:`~cortex_agents.scratch.ScratchBackend.bind`.

    Raises:
        StorageError: ``unreachable``, ``unsupported_url`` or ``busy``; see
            the module docstring.
        InvalidArgument: ``db`` is empty or not a path, URL or None.
    """
    if db is None:
        from langgraph.store.memory import InMemoryStore

        yield ScratchBackend.for_store(InMemoryStore())
        return
    if not isinstance(db, str | Path) or not str(db):
        raise InvalidArgument(
            "db", "must be a SQLite file path, a `postgresql://` URL, or None for memory", db
        )
    if is_postgres_url(db):
        with _open_postgres(str(db)) as backend:
            yield backend
        return
    with _open_sqlite(sqlite_path(db)) as backend:
        yield backend


@contextmanager
def _open_sqlite(path: Path) -> Iterator[ScratchBackend]:
    from langgraph.store.sqlite import SqliteStore

    # The substrate's connection settings (WAL: readers never block the guarded writer),
    # in autocommit: SqliteStore issues its own BEGIN and COMMIT.
    conn = sqlite_connect(path, busy_timeout_ms=int(_BUSY_TIMEOUT_S * 1000), isolation_level=None)
    try:
        store = SqliteStore(conn)
        backend = ScratchBackend.for_store(store)
        # The guard locks the whole file (or, in memory, the whole store): one setup at a time.
        with backend.guard.hold((NAMESPACE_ROOT,)):
            store.setup()
        yield backend
    finally:
        conn.close()


@contextmanager
def _open_postgres(url: str) -> Iterator[ScratchBackend]:
    require_postgres_extra("scratch memory on a postgresql:// database")
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    # The settings LangGraph's Postgres store expects of a connection it is
    # given: autocommit (it opens its own transactions), dict rows (it reads
    # columns by name), and no server-side prepared statements.
    with postgres_reachable(url):
        conn: Connection[Any] = Connection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
    with conn:
        store = PostgresStore(conn)
        with _setup_turn(conn, url):
            store.setup()
        yield ScratchBackend.for_store(store)


@contextmanager
def _setup_turn(conn: Any, url: str) -> Iterator[None]:
    """Hold the database's scratch-setup lock (a session advisory lock) while the block runs.

    Concurrent ``PostgresStore.setup`` calls on a fresh database collide
    (duplicate ``pg_type`` rows), so setups take turns. The wait polls
    ``pg_try_advisory_lock`` rather than blocking in ``pg_advisory_lock``:
    one migration is ``CREATE INDEX CONCURRENTLY``, which waits for every
    transaction with an older snapshot, and a blocked ``pg_advisory_lock``
    call is such a transaction, so blocking would deadlock the two setups.

    Raises:
        StorageError: ``busy`` after :data:`SETUP_TIMEOUT_S` seconds.
    """
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    delay = 0.01
    while not conn.execute(f"SELECT pg_try_advisory_lock({_SETUP_KEY}) AS taken").fetchone()[
        "taken"
    ]:
        if time.monotonic() >= deadline:
            raise StorageError(
                "busy",
                f"waited {SETUP_TIMEOUT_S:.0f} s for another process to finish setting up "
                f"scratch memory in {redact_url(url)}; retry when it is done",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.25)
    try:
        yield
    finally:
        conn.execute(f"SELECT pg_advisory_unlock({_SETUP_KEY})")
