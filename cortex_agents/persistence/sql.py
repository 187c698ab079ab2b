"""The SQL substrate stores: SQLite (the embedded default) and PostgreSQL (scale).

Both run the same statements (placeholders differ) on one connection of
their own, serialised by the store's lock. The database enforces integrity
(foreign keys, NOT NULL endpoints); a violation rolls the transaction back
and raises :class:`StorageError` with code ``integrity``.

SQLite pragmas, set explicitly on every connection: ``journal_mode=WAL``,
``synchronous=FULL`` (or ``NORMAL``: faster, and a power loss may drop the
last commits but never corrupts), ``busy_timeout`` (5 s by default) and
``foreign_keys=ON``. Writes start with ``BEGIN IMMEDIATE`` so two writers
queue on the busy timeout instead of failing mid-transaction.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.persistence.schema import Dialect, migrate
from cortex_agents.persistence.store import SubstrateStore, Transaction

__all__ = ["PostgresSubstrateStore", "SqliteSubstrateStore", "sqlite_connect"]

Synchronous = Literal["FULL", "NORMAL"]


class _SqlTransaction(Transaction):
    """The statements, written once with ``?`` placeholders."""

    def __init__(
        self, cursor: Any, dialect: Dialect, integrity_errors: tuple[type[Exception], ...]
    ) -> None:
        self.cursor = cursor
        self.dialect = dialect
        self.integrity_errors = integrity_errors

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if self.dialect == "postgres":
            sql = sql.replace("?", "%s")
        try:
            return self.cursor.execute(sql, params)
        except self.integrity_errors as exc:
            raise StorageError("integrity", f"the database refused a substrate row: {exc}") from exc

    def create_branch(
        self, thread_id: str, checkpoint_ns: str, parent: int | None, base_seq: int
    ) -> int:
        row = self._run(
            "INSERT INTO cortex_branches (thread_id, checkpoint_ns, parent_pk, base_seq) "
            "VALUES (?, ?, ?, ?) RETURNING branch_pk",
            (thread_id, checkpoint_ns, parent, base_seq),
        ).fetchone()
        return int(row[0])

    def branch_row(self, branch: int) -> tuple[str, str, int | None, int] | None:
        row = self._run(
            "SELECT thread_id, checkpoint_ns, parent_pk, base_seq FROM cortex_branches WHERE branch_pk = ?",
            (branch,),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], int(row[3]))

    def head(self, branch: int) -> int | None:
        row = self._run(
            "SELECT MAX(seq) FROM cortex_events WHERE branch_pk = ?", (branch,)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    def insert_events(self, branch: int, rows: Sequence[tuple[int, str]]) -> None:
        sql = "INSERT INTO cortex_events (branch_pk, seq, body) VALUES (?, ?, ?)"
        if self.dialect == "postgres":
            sql = sql.replace("?", "%s")
        try:
            self.cursor.executemany(sql, [(branch, seq, body) for seq, body in rows])
        except self.integrity_errors as exc:
            raise StorageError("integrity", f"the database refused an event row: {exc}") from exc

    def insert_node(self, branch: int, seq: int, node_id: str) -> None:
        self._run(
            "INSERT INTO cortex_nodes (branch_pk, seq, node_id) VALUES (?, ?, ?)",
            (branch, seq, node_id),
        )

    def insert_edge(
        self,
        branch: int,
        seq: int,
        source: str,
        target: str,
        lineage: Sequence[tuple[int, int | None]],
    ) -> None:
        visible = " OR ".join(
            "(branch_pk = ?)" if upto is None else "(branch_pk = ? AND seq <= ?)"
            for _, upto in lineage
        )
        bounds = [
            v
            for branch_pk, upto in lineage
            for v in ((branch_pk,) if upto is None else (branch_pk, upto))
        ]
        lookup = f"(SELECT node_pk FROM cortex_nodes WHERE node_id = ? AND ({visible}))"
        self._run(
            f"INSERT INTO cortex_edges (branch_pk, seq, source_pk, target_pk) VALUES (?, ?, {lookup}, {lookup})",
            (branch, seq, source, *bounds, target, *bounds),
        )

    def read_events(self, branch: int, after: int, upto: int) -> list[str]:
        rows = self._run(
            "SELECT body FROM cortex_events WHERE branch_pk = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (branch, after, upto),
        ).fetchall()
        return [row[0] for row in rows]

    def threads(self) -> list[str]:
        rows = self._run(
            "SELECT DISTINCT thread_id FROM cortex_branches ORDER BY thread_id"
        ).fetchall()
        return sorted(row[0] for row in rows)  # code-point order, whatever the collation

    def delete_thread(self, thread_id: str) -> list[int]:
        rows = self._run(
            "SELECT branch_pk FROM cortex_branches WHERE thread_id = ? ORDER BY branch_pk DESC",
            (thread_id,),
        ).fetchall()
        branches = [int(r[0]) for r in rows]
        mine = "branch_pk IN (SELECT branch_pk FROM cortex_branches WHERE thread_id = ?)"
        for table in ("cortex_edges", "cortex_nodes", "cortex_events"):
            self._run(f"DELETE FROM {table} WHERE {mine}", (thread_id,))
        for branch in branches:  # children before parents
            self._run("DELETE FROM cortex_branches WHERE branch_pk = ?", (branch,))
        return branches

    def counts(self) -> dict[str, int]:
        return {
            name: int(self._run(f"SELECT COUNT(*) FROM cortex_{name}").fetchone()[0])
            for name in ("branches", "events", "nodes", "edges")
        }


def sqlite_connect(
    path: str | Path,
    *,
    synchronous: Synchronous = "FULL",
    busy_timeout_ms: int = 5000,
    isolation_level: str | None = "",
) -> sqlite3.Connection:
    """A connection with cortex-agents' pragmas, usable across threads.

    By default it keeps Python's implicit transactions, which LangGraph's
    ``SqliteSaver`` relies on to commit a batch of writes with one sync; the
    substrate store brackets its own work with explicit ``BEGIN IMMEDIATE``.
    ``isolation_level=None`` gives autocommit (LangGraph's ``SqliteStore``
    issues its own ``BEGIN``).

    Raises:
        StorageError: ``unreachable`` (a directory, a missing folder, a file
            SQLite cannot open) or ``not_a_database``.
    """
    if synchronous not in ("FULL", "NORMAL"):
        raise InvalidArgument("synchronous", "must be 'FULL' or 'NORMAL'", synchronous)
    where = Path(path)
    if where.is_dir():
        raise StorageError("unreachable", f"cannot open {str(path)!r}: it is a directory")
    if not where.parent.is_dir():
        raise StorageError(
            "unreachable",
            f"cannot open {str(path)!r}: directory {str(where.parent)!r} does not exist; "
            "create it first",
        )
    conn = None
    try:
        conn = sqlite3.connect(
            str(path),
            check_same_thread=False,
            timeout=busy_timeout_ms / 1000,
            isolation_level=isolation_level,
        )
        enable_wal(conn, busy_timeout_ms / 1000)
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        conn.execute("PRAGMA foreign_keys=ON")
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        raise sqlite_open_error(path, exc) from None
    return conn


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch ``conn``'s database to WAL, waiting up to ``timeout_s`` for other openers.

    Changing the journal mode needs an exclusive lock, and SQLite may answer
    ``SQLITE_BUSY`` at once, without its busy handler, while another
    connection opens the same fresh file: so retry until the deadline.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
            if code not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def sqlite_open_error(path: str | Path, exc: sqlite3.DatabaseError) -> StorageError:
    """What opening ``path`` failed on: not a database at all, or not openable (``unreachable``)."""
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
        return StorageError("not_a_database", f"{str(path)!r} is not a SQLite database ({exc})")
    return StorageError("unreachable", f"cannot open {str(path)!r}: {exc}")


class SqliteSubstrateStore(SubstrateStore):
    """Substrate tables in a SQLite file (the embedded default).

    Args:
        path: The database file (shared with LangGraph's SQLite saver).
        synchronous: ``FULL`` (default: durable at every commit) or ``NORMAL``.
        busy_timeout_ms: How long a writer waits for another's lock.
        connection: Share this connection (from :func:`sqlite_connect`) instead
            of opening one — e.g. the inner ``SqliteSaver``'s, so the two never
            contend for SQLite's write lock within one process.
        connection_lock: The lock every user of ``connection`` holds around
            its statements (``SqliteSaver.lock`` when sharing with it).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_ms: int = 5000,
        cache_branches: int = 32,
        connection: sqlite3.Connection | None = None,
        connection_lock: Any = None,
    ) -> None:
        super().__init__(cache_branches=cache_branches)
        self.path = Path(path)
        self._owns_connection = connection is None
        self.conn = connection or sqlite_connect(
            path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms
        )
        self._conn_lock = connection_lock if connection_lock is not None else threading.Lock()

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        """``BEGIN IMMEDIATE`` for writes, ``BEGIN`` for a consistent read."""
        with self._lock, self._conn_lock:
            if self.conn.in_transaction:  # another user of a shared connection left one open
                self.conn.commit()
            self.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SqlTransaction(self.conn.cursor(), "sqlite", (sqlite3.IntegrityError,))
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def setup(self) -> None:
        """Create or migrate the substrate tables."""
        with self._lock, self._conn_lock:
            if self.conn.in_transaction:
                self.conn.commit()
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                migrate(
                    lambda sql, params: self.conn.execute(sql, params),
                    lambda: [
                        r[0] for r in self.conn.execute("SELECT version FROM cortex_migrations")
                    ],
                    "sqlite",
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection, if the store opened it."""
        if self._owns_connection:
            self.conn.close()


class PostgresSubstrateStore(SubstrateStore):
    """Substrate tables in PostgreSQL, beside LangGraph's Postgres saver.

    Args:
        url: A ``postgresql://`` connection string.
    """

    def __init__(self, url: str, *, cache_branches: int = 32) -> None:
        import psycopg

        super().__init__(cache_branches=cache_branches)
        self._psycopg = psycopg
        self.conn = psycopg.connect(url, autocommit=True)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        """One ``BEGIN`` ... ``COMMIT`` block; rolled back on error."""
        with self._lock, self.conn.transaction(), self.conn.cursor() as cursor:
            yield _SqlTransaction(cursor, "postgres", (self._psycopg.errors.IntegrityError,))

    def setup(self) -> None:
        """Create or migrate the substrate tables (serialised by an advisory lock)."""
        with self._lock, self.conn.transaction(), self.conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('cortex_migrations', 0))")
            migrate(
                lambda sql, params: cursor.execute(sql, params),
                lambda: [r[0] for r in cursor.execute("SELECT version FROM cortex_migrations")],
                "postgres",
            )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()
