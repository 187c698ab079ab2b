"""One transaction helper for every SQL backend, and driver errors in the project's exception tree.

Every substrate write, every read that must be consistent, and every import
goes through :func:`sqlite_transaction` or :func:`postgres_transaction`.
Both map what the driver raises (``sqlite3.Error``, ``psycopg.Error``) to
:class:`~cortex_agents.errors.StorageError` with a stable code, chained to
the driver's exception (``raise ... from``): the cause is never masked. A
rollback that fails after the database already rolled back by itself (SQLite
does, on a full disk) is recorded as a note on the original error, never
raised in its place.

Codes: ``integrity`` (a constraint), ``busy`` (another writer held the lock
past the timeout), ``corrupt`` (the file is damaged or not a database),
``disk_full``, ``io_error``, ``read_only``, ``unreachable`` (cannot connect
or open), ``invalid_data`` (a value the database cannot store), and
``database_error`` for anything else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from cortex_agents.errors import StorageError

__all__ = [
    "driver_errors",
    "is_driver_error",
    "postgres_transaction",
    "sqlite_transaction",
    "storage_error",
]

_SQLITE_CODES: Final = {
    sqlite3.SQLITE_CONSTRAINT: "integrity",
    sqlite3.SQLITE_BUSY: "busy",
    sqlite3.SQLITE_LOCKED: "busy",
    sqlite3.SQLITE_CORRUPT: "corrupt",
    sqlite3.SQLITE_NOTADB: "corrupt",
    sqlite3.SQLITE_FULL: "disk_full",
    sqlite3.SQLITE_IOERR: "io_error",
    sqlite3.SQLITE_READONLY: "read_only",
    sqlite3.SQLITE_CANTOPEN: "unreachable",
    sqlite3.SQLITE_PERM: "read_only",
    sqlite3.SQLITE_TOOBIG: "invalid_data",
}
# SQLSTATE classes: https://www.postgresql.org/docs/current/errcodes-appendix.html
_POSTGRES_CLASSES: Final = {
    "23": "integrity",
    "22": "invalid_data",
    "08": "unreachable",
    "53": "disk_full",
    "58": "io_error",
    "XX": "corrupt",
    "40": "busy",
    "55": "busy",
    "57": "unreachable",
    "25": "database_error",
}


def _driver_classes() -> tuple[type[BaseException], ...]:
    classes: list[type[BaseException]] = [sqlite3.Error]
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        pass
    else:
        classes.append(psycopg.Error)
    return tuple(classes)


def is_driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a database driver (``sqlite3`` or ``psycopg``)."""
    return isinstance(exc, _driver_classes())


def storage_error(exc: BaseException, doing: str = "") -> StorageError:
    """The :class:`StorageError` for a driver error (chain it: ``raise ... from exc``)."""
    code = "database_error"
    if isinstance(exc, sqlite3.Error):
        primary = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        code = _SQLITE_CODES.get(primary, code)
        if isinstance(exc, sqlite3.IntegrityError):
            code = "integrity"
        elif code == "database_error" and "malformed" in str(exc):
            code = "corrupt"
    else:
        sqlstate = getattr(exc, "sqlstate", None) or ""
        code = _POSTGRES_CLASSES.get(sqlstate[:2], code)
        if type(exc).__name__ == "OperationalError" and not sqlstate:
            code = "unreachable"
    what = f"{doing}: " if doing else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(code, f"{what}the database refused ({code}): {detail}")


@contextmanager
def driver_errors(doing: str = "") -> Iterator[None]:
    """Raise driver errors of the block as :class:`StorageError` (chained to the cause)."""
    try:
        yield
    except _driver_classes() as exc:
        raise storage_error(exc, doing) from exc


def _rollback(conn: sqlite3.Connection, cause: BaseException | None) -> None:
    """Roll back if a transaction is still open; a failing rollback never hides ``cause``."""
    if not conn.in_transaction:  # SQLite rolled back by itself (a full disk, an I/O error)
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as failed:
        if cause is None:
            raise storage_error(failed, "rollback") from failed
        cause.add_note(f"rolling back also failed: {failed}")


@contextmanager
def sqlite_transaction(
    conn: sqlite3.Connection, *, write: bool = True, doing: str = ""
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (or ``BEGIN`` to read) ... ``COMMIT``; rolled back on any error.

    Refuses to start while the connection has a transaction open: on a shared
    connection that is another user's unfinished work, and committing or
    rolling it back here would change what they meant.

    Raises:
        StorageError: ``open_transaction``, or a driver error mapped (see module).
    """
    if conn.in_transaction:
        raise StorageError(
            "open_transaction",
            "the connection has a transaction another user left open; commit or roll it "
            "back first (nothing was written)",
        )
    with driver_errors(doing):
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield conn
        except BaseException as exc:
            _rollback(conn, exc)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn, exc)
            raise


@contextmanager
def postgres_transaction(conn: Any, *, doing: str = "", pipeline: bool = False) -> Iterator[Any]:
    """``BEGIN`` ... ``COMMIT`` on a psycopg connection; rolled back on any error.

    psycopg's own transaction block is used (a nested one is a savepoint); a
    failing rollback is logged by psycopg, and the original error is raised.

    ``pipeline`` (an autocommit connection, not inside a transaction): the
    block runs in psycopg's pipeline mode, so statements whose results nobody
    fetches go out without waiting, ``BEGIN`` with the first and ``COMMIT``
    with the last; the block waits for the server only where it fetches a
    result, and once at the end. An error of a statement may then surface at
    a later fetch or at the commit: mapped the same way, and rolled back.

    Raises:
        StorageError: a driver error mapped (see module).
    """
    if not pipeline:
        with driver_errors(doing), conn.transaction():
            yield conn
        return
    with driver_errors(doing), conn.cursor() as cursor:
        try:
            # Not psycopg's transaction(): in pipeline mode it waits for the server on
            # entering and twice on leaving (its nested pipelines), three round trips more.
            with conn.pipeline():
                cursor.execute("BEGIN")
                yield conn
                cursor.execute("COMMIT")  # sent with the pipeline's closing sync: the one wait
        except BaseException as exc:
            _roll_back_open(conn, exc)
            raise


def _roll_back_open(conn: Any, cause: BaseException) -> None:
    """Roll back what a failed pipelined transaction left open; never hides ``cause``.

    After a failed statement the server skips everything up to the next sync
    (the ``COMMIT`` too) and keeps the transaction open, aborted; a block that
    raised never sent its ``COMMIT``. The pipeline has ended: one plain
    ``ROLLBACK``, on failures only.
    """
    import psycopg
    from psycopg.pq import TransactionStatus

    if conn.closed or conn.info.transaction_status == TransactionStatus.IDLE:
        return
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error as failed:
        cause.add_note(f"rolling back also failed: {failed}")
