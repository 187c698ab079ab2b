"""Take a thread's writer lock away from its holder, as the world outside the process does.

SQLite: the lock file is deleted (a clean-up job, a person). Postgres: the connection
holding the thread's advisory lock is terminated (a server restart, an idle-session
timeout, a pooler), waiting until the server has ended it and released the lock.
Shared by the fencing tests and ``tools/reliability.py``.
"""

from __future__ import annotations

import os

from cortex_agents.persistence import is_postgres_url
from cortex_agents.persistence._locks import _key

__all__ = ["lose_lock", "table_rows"]


def lose_lock(database: str, thread_id: str) -> int:
    """Remove the thread's writer lock from under its holder; return how many holders lost it."""
    if not is_postgres_url(database):
        os.unlink(f"{database}.cortex-locks")
        return 1
    import psycopg

    key = _key(thread_id)  # a bigint advisory lock shows as (classid, objid) = (high, low) words
    with psycopg.connect(database, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_locks "
            "WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            # advisory keys are per database: leave other databases on the server alone
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND classid::bigint = %s AND objid::bigint = %s",
            (key >> 32, key & 0xFFFFFFFF),
        ).fetchall()
    if not all(row[0] for row in rows):
        raise RuntimeError(f"a lock holder of thread {thread_id!r} did not end within 10 s")
    return len(rows)


def table_rows(database: str) -> dict[str, int]:
    """Rows of every table LangGraph's saver and the substrate write (to see a write land)."""
    if is_postgres_url(database):
        import psycopg

        tables = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        with psycopg.connect(database) as conn:
            return _counts(conn, (*tables, *_SUBSTRATE))
    import sqlite3

    conn = sqlite3.connect(database)
    try:
        return _counts(conn, ("checkpoints", "writes", *_SUBSTRATE))
    finally:
        conn.close()


_SUBSTRATE = ("cortex_branches", "cortex_events", "cortex_nodes", "cortex_edges")


def _counts(conn: object, tables: tuple[str, ...]) -> dict[str, int]:
    return {
        table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # type: ignore[attr-defined]
        for table in tables
    }
