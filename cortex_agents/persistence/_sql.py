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

Transactions go through :mod:`cortex_agents.persistence._transactions`, which
maps driver errors to :class:`StorageError` without masking the cause.
:meth:`SqliteSubstrateStore.atomic` and :meth:`PostgresSubstrateStore.atomic`
open one transaction that substrate writes *and* a checkpoint write join
(import is all-or-nothing on every backend).
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from psycopg import Connection

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.persistence._fencing import Fence, fenced
from cortex_agents.persistence._schema import Dialect, migrate
from cortex_agents.persistence._store import SubstrateStore, Transaction
from cortex_agents.persistence._transactions import (
    is_driver_error,
    postgres_transaction,
    sqlite_transaction,
    storage_error,
)

__all__ = ["PostgresSubstrateStore", "SqliteSubstrateStore", "sqlite_connect"]

Synchronous = Literal["FULL", "NORMAL"]


_ARRAY_ROWS: Final = 64
"""Rows from which one append is inserted as a statement over arrays on Postgres."""


class _SqlTransaction(Transaction):
    """The statements, written once with ``?`` placeholders.

    ``fence``: the fence this transaction's commit is checked against (inside an
    ``atomic`` block of a lock holder), which :meth:`fence_epoch` reports.
    """

    def __init__(
        self,
        cursor: Any,
        dialect: Dialect,
        fence: Fence | None = None,
        check: _FenceCheck | None = None,
    ) -> None:
        self.cursor = cursor
        self.dialect = dialect
        self.fence = fence
        self.check = check  # a pipelined commit's fence check, not sent yet

    def _run(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        many: bool = False,
        doing: str = "substrate row",
    ) -> Any:
        """Execute one statement (``many``: once per row of ``params``); driver errors mapped.

        A ``try`` rather than :func:`driver_errors`: this runs several times a step.
        """
        if self.dialect == "postgres":
            sql = sql.replace("?", "%s")
            if self.check is not None and self.check.unsent is not None:
                sql, params = self.check.joined(self.cursor, sql, params, many=many)
        try:
            if many:
                return self.cursor.executemany(sql, params)
            return self.cursor.execute(sql, params)
        except Exception as exc:
            if is_driver_error(exc):
                raise storage_error(exc, doing) from exc
            raise

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
        if self._arrays(rows):
            self._run(
                "INSERT INTO cortex_events (branch_pk, seq, body) SELECT ?::bigint, u.seq, u.body "
                "FROM unnest(%b::bigint[], %b::text[]) AS u(seq, body)",
                (branch, [seq for seq, _ in rows], [body for _, body in rows]),
                doing="event row",
            )
            return
        if self.dialect == "postgres" and len(rows) > 1:
            # one statement, not one per row: a stage appends two events (started, completed)
            self._run(
                "INSERT INTO cortex_events (branch_pk, seq, body) VALUES "
                + ", ".join(["(?, ?, ?)"] * len(rows)),
                [v for seq, body in rows for v in (branch, seq, body)],
                doing="event row",
            )
            return
        self._run(
            "INSERT INTO cortex_events (branch_pk, seq, body) VALUES (?, ?, ?)",
            [(branch, seq, body) for seq, body in rows],
            many=True,
            doing="event row",
        )

    def _arrays(self, rows: Sequence[Any]) -> bool:
        """Whether to insert ``rows`` as one statement over arrays (Postgres, many rows).

        psycopg's ``executemany`` spends ~35 µs of Python a row; arrays sent
        in binary (``%b``: a text array in text format is escaped element by
        element, in Python) cost little. A run's step writes a few rows: those
        keep the plain form.
        """
        return self.dialect == "postgres" and len(rows) >= _ARRAY_ROWS

    def insert_node(self, branch: int, seq: int, node_id: str) -> None:
        self.insert_nodes(branch, [(seq, node_id)])

    def insert_nodes(self, branch: int, rows: Sequence[tuple[int, str]]) -> None:
        if self._arrays(rows):
            self._run(
                "INSERT INTO cortex_nodes (branch_pk, seq, node_id) SELECT ?::bigint, u.seq, u.id "
                "FROM unnest(%b::bigint[], %b::text[]) AS u(seq, id)",
                (branch, [seq for seq, _ in rows], [node_id for _, node_id in rows]),
                doing="node row",
            )
        elif rows:
            self._run(
                "INSERT INTO cortex_nodes (branch_pk, seq, node_id) VALUES (?, ?, ?)",
                [(branch, seq, node_id) for seq, node_id in rows],
                many=True,
                doing="node row",
            )

    def insert_edges(
        self,
        branch: int,
        rows: Sequence[tuple[int, str, str]],
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

        def lookup(end: str) -> str:  # the branch whose row scheduled the endpoint (NULL: none)
            return f"(SELECT branch_pk FROM cortex_nodes WHERE node_id = {end} AND ({visible}))"

        columns = "(branch_pk, seq, source_branch, source_id, target_branch, target_id)"
        if self._arrays(rows):
            self._run(
                f"INSERT INTO cortex_edges {columns} SELECT ?::bigint, u.seq, "
                f"{lookup('u.source')}, u.source, {lookup('u.target')}, u.target "
                "FROM unnest(%b::bigint[], %b::text[], %b::text[]) AS u(seq, source, target)",
                (branch, *bounds, *bounds, *map(list, zip(*rows, strict=True))),
                doing="edge row",
            )
        elif rows:
            self._run(
                f"INSERT INTO cortex_edges {columns} "
                f"VALUES (?, ?, {lookup('?')}, ?, {lookup('?')}, ?)",
                [(branch, seq, s, *bounds, s, t, *bounds, t) for seq, s, t in rows],
                many=True,
                doing="edge row",
            )

    def insert_edge(
        self,
        branch: int,
        seq: int,
        source: str,
        target: str,
        lineage: Sequence[tuple[int, int | None]],
    ) -> None:
        self.insert_edges(branch, [(seq, source, target)], lineage)

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
            # A branch is created after its parent, so it has the larger key: descending order
            # deletes children before the parents their parent_pk points at.
            "SELECT branch_pk FROM cortex_branches WHERE thread_id = ? ORDER BY branch_pk DESC",
            (thread_id,),
        ).fetchall()
        branches = [int(r[0]) for r in rows]
        mine = "branch_pk IN (SELECT branch_pk FROM cortex_branches WHERE thread_id = ?)"
        # Referencing rows first (edges point at nodes, both at events), so no delete
        # leaves a foreign key dangling.
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

    def claim_writer(self, thread_id: str) -> int | None:
        row = self._run(
            "INSERT INTO cortex_writers (thread_id, epoch) VALUES (?, 1) "
            "ON CONFLICT (thread_id) DO UPDATE SET epoch = cortex_writers.epoch + 1 "
            "RETURNING epoch",
            (thread_id,),
            doing="writer row",
        ).fetchone()
        return _epoch(row[0], thread_id)

    def writer_epoch(self, thread_id: str) -> int | None:
        # SQLite: inside a write transaction, which no claim can interleave with.
        # Postgres: FOR SHARE makes a claim's UPDATE wait for this transaction's end.
        lock = " FOR SHARE" if self.dialect == "postgres" else ""
        row = self._run(
            f"SELECT epoch FROM cortex_writers WHERE thread_id = ?{lock}",
            (thread_id,),
            doing="writer row",
        ).fetchone()
        return None if row is None else _epoch(row[0], thread_id)

    def check_fence(self, fence: Fence | None) -> None:
        """Raise :class:`WriterFenced` (writing nothing) unless the fence's epoch still holds."""
        if fence is None or fence.epoch is None:
            return
        found = self.writer_epoch(fence.thread_id)
        if found != fence.epoch:
            raise fenced(fence, found)

    def send_fence_check(self, fence: Fence | None) -> None:
        """Postgres, pipelined: check the fence without waiting for the answer.

        The statement reads the writer row ``FOR SHARE`` (as :meth:`writer_epoch`)
        and fails unless it holds the fence's epoch: the text it then casts is no
        integer, and names the epoch found (:func:`_fenced_epoch_in`). A failed
        statement makes the server skip everything after it up to the pipeline's
        sync and roll the transaction back, so the writes sent behind it never
        land, and the commit waits for the server once instead of twice.
        """
        if fence is None or fence.epoch is None:
            return
        self._run(_FENCE_CHECK, (fence.thread_id, fence.epoch), doing="writer row")

    def fence_epoch(self, thread_id: str) -> int | None:
        if self.fence is None or self.fence.thread_id != thread_id:
            return None
        return self.fence.epoch


_FENCE_MARK: Final = "cortex-writer-fenced:"
"""What a failed pipelined fence check casts to an integer, followed by the epoch found."""
_FENCE_READ: Final = (
    "w AS MATERIALIZED (SELECT (SELECT epoch FROM cortex_writers "
    "WHERE thread_id = %s FOR SHARE) AS found)"
)
_FENCE_TEST: Final = (
    "SELECT CASE WHEN found IS NOT DISTINCT FROM %s::bigint THEN 0 "
    f"ELSE ('{_FENCE_MARK}' || COALESCE(found::text, 'none'))::int END FROM w"
)
_FENCE_CHECK: Final = f"WITH {_FENCE_READ} {_FENCE_TEST}"
"""The pipelined fence check (:meth:`_SqlTransaction.send_fence_check`)."""


class _FenceCheck:
    """A pipelined commit's fence check, sent with the block's first write.

    The check is a statement that fails unless the writer epoch holds
    (:meth:`_SqlTransaction.send_fence_check`). Sent alone it is one more
    statement per commit; so it waits for the block's first statement, and
    when that is an ``INSERT`` whose result nobody reads, both go as one:
    ``WITH w AS (<the check's read>), written AS (<the INSERT>) <the check>``.
    The statement fails as a whole when the check does (nothing of it is
    written; the check's error, the same as alone, names the epoch found);
    and Postgres runs an ``INSERT`` in ``WITH`` that the query does not read
    after the query itself, so the check comes first, as before. Any other
    statement (one whose rows are fetched, an ``executemany``) gets the check
    sent alone before it, and a block that wrote nothing sends it before its
    ``COMMIT``.
    """

    __slots__ = ("unsent",)

    def __init__(self, fence: Fence) -> None:
        self.unsent: tuple[str, int] | None = (fence.thread_id, cast(int, fence.epoch))

    def joined(self, cursor: Any, sql: str, params: Any, *, many: bool = False) -> tuple[str, Any]:
        """``sql`` and ``params`` with the check in front, or the check sent first (``%s`` SQL)."""
        unsent, self.unsent = self.unsent, None
        if unsent is None:
            return sql, params
        if many or not _joinable(sql, params):
            cursor.execute(_FENCE_CHECK, unsent)
            return sql, params
        joined = f"WITH {_FENCE_READ}, written AS ({sql.strip().rstrip(';')}) {_FENCE_TEST}"
        return joined, [unsent[0], *params, unsent[1]]

    def send(self, cursor: Any) -> None:
        """Send the check if no statement took it (before the block's ``COMMIT``)."""
        unsent, self.unsent = self.unsent, None
        if unsent is not None:
            cursor.execute(_FENCE_CHECK, unsent)


class _NotFenced:
    """:func:`_fenced_epoch_in`'s answer for an error that is not a failed fence check."""


_NOT_FENCED: Final = _NotFenced()


def _fenced_epoch_in(exc: BaseException) -> int | _NotFenced | None:
    """The writer epoch a failed :meth:`_SqlTransaction.send_fence_check` found (``None``: no row).

    ``_NOT_FENCED`` when neither ``exc`` nor its causes is that statement's error.
    """
    seen: BaseException | None = exc
    for _ in range(8):  # the driver's error, mapped and chained at most a few times
        if seen is None:
            break
        if getattr(seen, "sqlstate", None) == "22P02":  # invalid_text_representation
            found = str(seen).partition(_FENCE_MARK)[2].partition('"')[0]
            if found == "none":
                return None
            if found.isdigit():
                return int(found)
        seen = seen.__cause__ or seen.__context__
    return _NOT_FENCED


def _epoch(value: Any, thread_id: str) -> int:
    """A writer epoch as stored; anything but an integer is a damaged row."""
    if type(value) is not int:
        raise StorageError(
            "corrupt", f"the writer row of thread {thread_id!r} holds {value!r}, not an epoch"
        )
    return value


def sqlite_connect(
    path: str | Path,
    *,
    synchronous: Synchronous = "FULL",
    busy_timeout_ms: int = 5000,
    isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = "DEFERRED",
) -> sqlite3.Connection:
    """A connection with cortex-agents' pragmas, usable across threads.

    By default it keeps Python's implicit transactions (``BEGIN DEFERRED``, what
    ``sqlite3``'s default ``""`` issues as a plain ``BEGIN``), which LangGraph's
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


class _HeldCommits:
    """A SQLite connection whose ``commit`` waits for the enclosing transaction's end."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def commit(self) -> None:
        """Nothing: :meth:`SqliteSubstrateStore.atomic` commits once, at its end."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


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
        self._atomic_thread: int | None = None
        self._atomic_fence: Fence | None = None
        self._joint_saver: BaseCheckpointSaver[str] | None = None

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        """``BEGIN IMMEDIATE`` for writes, ``BEGIN`` for a consistent read.

        Inside :meth:`atomic` (on the same thread) it joins that transaction.

        Raises:
            StorageError: a driver error, mapped; ``open_transaction`` when
                another user of a shared connection left a transaction open.
        """
        if self._atomic_thread == threading.get_ident():
            yield _SqlTransaction(self.conn.cursor(), "sqlite", self._atomic_fence)
            return
        with self._lock, self._conn_lock, sqlite_transaction(self.conn, write=write):
            yield _SqlTransaction(self.conn.cursor(), "sqlite")

    @contextmanager
    def atomic(
        self,
        serde: Any,
        *,
        fence: Fence | None = None,
        doing: str = "import",
        pipelined: bool = False,
    ) -> Iterator[BaseCheckpointSaver[str]]:
        """One write transaction for substrate rows and checkpoints; all or nothing.

        Yields a LangGraph ``SqliteSaver`` on this store's connection whose
        writes join the transaction (its own commits are held back), so a
        :class:`CortexSaver` built on it and this store writes events and the
        checkpoint together. On any error everything is rolled back and the
        store's caches forget what the transaction created. ``pipelined`` is
        for Postgres (an embedded database has no round trips to save).

        Raises:
            WriterFenced: ``fence`` is given and the thread's writer epoch is
                no longer its own (checked first: nothing is written).
        """
        from langgraph.checkpoint.sqlite import SqliteSaver

        saver = self._joint_saver
        if saver is None:  # built once: a saver's construction is not free, and a put is hot
            saver = SqliteSaver(_HeldCommits(self.conn), serde=serde)  # type: ignore[arg-type]
            saver.is_setup = True  # the tables exist: the store was set up with them
            self._joint_saver = saver
        with self._lock, self._conn_lock:
            if self._atomic_thread is not None:
                raise StorageError("open_transaction", "an atomic block is already open")
            saver.serde = serde  # this block's (used only while the lock is held)
            try:
                with sqlite_transaction(self.conn, doing=doing):
                    self._atomic_thread = threading.get_ident()
                    _SqlTransaction(self.conn, "sqlite").check_fence(fence)
                    self._atomic_fence = fence
                    yield saver
            except BaseException:
                self.forget_cached()
                raise
            finally:
                self._atomic_thread = None
                self._atomic_fence = None

    def setup(self) -> None:
        """Create or migrate the substrate tables."""
        with self._lock, self._conn_lock, sqlite_transaction(self.conn, doing="setup"):
            migrate(
                lambda sql, params: self.conn.execute(sql, params),
                lambda: [r[0] for r in self.conn.execute("SELECT version FROM cortex_migrations")],
                "sqlite",
            )

    def close(self) -> None:
        """Close the connection, if the store opened it."""
        if self._owns_connection:
            self.conn.close()


_VALUES: Final = re.compile(r"\bVALUES\s*(\((?:\s*%s\s*,)*\s*%s\s*\))", re.IGNORECASE)
_ROWS_PER_STATEMENT: Final = 512
"""Rows one multi-row ``INSERT`` takes at most (a statement holds at most 65,535 parameters)."""


class _RowsInOneStatement:
    """A cursor that sends LangGraph's inserts of one commit in fewer statements.

    LangGraph's saver inserts a step's pending writes (three rows for a stage)
    and a checkpoint's new blobs with ``executemany``: one statement, and one
    pass through psycopg's per-statement code and the server's executor, per
    row. Here the rows go as one ``INSERT ... VALUES (...), (...)`` of the same
    statement, its ``ON CONFLICT`` clause included: the same rows land (one
    row: a plain ``execute``). A statement that updates on conflict keeps
    ``executemany`` (two rows with one key would make one statement fail where
    row by row the second wins), and so does any statement not of that shape.

    An ``INSERT ... DO NOTHING`` whose result nobody reads (the blobs) is held
    and sent as ``WITH held AS (<it>) <the next INSERT>`` (the checkpoint row):
    two tables no statement between them reads, the same rows, one statement.
    Any other next statement, or the end of the cursor, sends it alone first.
    The commit's fence check, not sent yet, joins the first insert
    (:class:`_FenceCheck`). Everything else is the cursor's.
    """

    __slots__ = ("_check", "_cursor", "_held")

    def __init__(self, cursor: Any, check: _FenceCheck | None = None) -> None:
        self._cursor = cursor
        self._check = check  # the commit's fence check, if not sent yet: joins the first INSERT
        self._held: tuple[str, list[Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        self.flush()  # whatever is read of the cursor (a fetch, a row count) follows the held insert
        return getattr(self._cursor, name)

    def __iter__(self) -> Iterator[Any]:
        """The rows of the last statement (``for row in cur``: looked up on the type, not here)."""
        self.flush()
        return iter(self._cursor)

    def execute(self, query: Any, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        plain = not (args or kwargs)
        if self._check is not None and self._check.unsent is not None:
            query, params = self._check.joined(self._cursor, query, params, many=not plain)
        elif plain and isinstance(query, str) and _holdable(query, params):
            self.flush()
            self._held = (query.strip(), list(params))
            return None
        held, self._held = self._held, None
        if held is not None:
            if plain and _joinable(query, params):
                query, params = f"WITH held AS ({held[0]}) {query}", [*held[1], *params]
            else:
                self._cursor.execute(*held)
        return self._cursor.execute(query, params, *args, **kwargs)

    def executemany(self, query: str, params_seq: Any, *args: Any, **kwargs: Any) -> Any:
        rows = list(params_seq)
        if len(rows) == 1 and not (args or kwargs):
            self.execute(query, rows[0])  # one row: the same statement, without the batch
            return None
        values = _VALUES.search(query) if len(rows) > 1 and not (args or kwargs) else None
        if values is None or "DO UPDATE" in query.upper() or not _rows_fit(query, values, rows):
            self.flush()
            if self._check is not None:
                self._check.joined(self._cursor, query, rows, many=True)  # sent first, alone
            return self._cursor.executemany(query, rows, *args, **kwargs)
        row, head, tail = values.group(1), query[: values.start(1)], query[values.end(1) :]
        for at in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[at : at + _ROWS_PER_STATEMENT]
            self.execute(head + ", ".join([row] * len(chunk)) + tail, [v for r in chunk for v in r])
        return None

    def flush(self) -> None:
        """Send the held insert, if any (before any statement it cannot join, and at the end)."""
        held, self._held = self._held, None
        if held is not None:
            self._cursor.execute(*held)


def _joinable(query: Any, params: Any) -> bool:
    """Whether a statement can follow ``WITH ... AS (...)``: a plain ``INSERT`` returning nothing.

    Its parameters must be what psycopg would bind to it: a tuple or a list,
    one per placeholder. Joined, they are only a part of the statement's: a
    string, a mapping or a count that psycopg refuses would be bound, shifted.
    """
    return (
        isinstance(query, str)
        and isinstance(params, tuple | list)
        and query.lstrip()[:6].upper() == "INSERT"
        and "RETURNING" not in query.upper()
        and _placeholders(query) == len(params)
    )


def _rows_fit(query: str, values: re.Match[str], rows: list[Any]) -> bool:
    """Whether the rows of an ``executemany`` may go as one ``VALUES`` list of the ``values`` match.

    Every placeholder of ``query`` is in its row (``values``), and every row
    is a tuple or list of one parameter per placeholder: otherwise the
    flattened parameters would be bound shifted (where psycopg, row by row,
    refuses them or binds the ones outside the row once per row).
    """
    width = values.group(1).count("%s")
    return _placeholders(query) == width and all(
        isinstance(row, tuple | list) and len(row) == width for row in rows
    )


_PLACEHOLDER: Final = re.compile(r"%[%sbt]")


@functools.lru_cache(maxsize=64)  # LangGraph sends a few texts (and their multi-row forms)
def _placeholders(query: str) -> int | None:
    """How many positional placeholders (``%s``, ``%b``, ``%t``) ``query`` holds (``%%`` is none).

    ``None`` when it may hold named ones (``%(name)s``): never joined.
    """
    if "%(" in query:
        return None
    return sum(1 for found in _PLACEHOLDER.findall(query) if found != "%%")


def _holdable(query: str, params: Any) -> bool:
    """Whether an insert may wait for the next one: it returns nothing and changes no row."""
    upper = query.upper()
    return _joinable(query, params) and "DO NOTHING" in upper and ";" not in query


def _joined_saver(conn: Any) -> BaseCheckpointSaver[str]:
    """LangGraph's ``PostgresSaver`` on ``conn``, its statements joining the open transaction.

    ``PostgresSaver`` runs each ``put`` and ``put_writes`` in a pipeline of its
    own, and leaving a pipeline waits for the server. Inside
    :meth:`PostgresSubstrateStore.atomic`, whose transaction (and, for a
    runtime commit, pipeline) is open already, that wait buys nothing and
    costs a round trip per call; so this saver's ``_cursor`` hands out a plain
    cursor of the kind the original makes (binary, dict rows). The statements
    are LangGraph's own.
    """
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    class JoinedPostgresSaver(PostgresSaver):
        check: _FenceCheck | None = None  # the open block's unsent fence check (set per block)

        @contextmanager
        def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
            with (
                self.lock,
                cast("Connection[Any]", self.conn).cursor(binary=True, row_factory=dict_row) as cur,
            ):
                rows = _RowsInOneStatement(cur, self.check)
                yield rows
                rows.flush()

    # the saver opens its own cursors with dict rows; the connection's tuple rows are not used
    return JoinedPostgresSaver(cast("Connection[dict[str, Any]]", conn))


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
        self._joint_saver: BaseCheckpointSaver[str] | None = None
        self._atomic_thread: int | None = None
        self._atomic_fence: Fence | None = None
        self._check: _FenceCheck | None = None  # an atomic block's fence check, until sent

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        """One ``BEGIN`` ... ``COMMIT`` block; rolled back on error.

        Inside :meth:`atomic` (on the same thread) it is part of that
        transaction, with no savepoint of its own: an error inside ends the
        whole block anyway, and a savepoint costs two round trips per commit.

        Raises:
            StorageError: a driver error, mapped.
        """
        if self._atomic_thread == threading.get_ident():
            with self.conn.cursor() as cursor:
                yield _SqlTransaction(cursor, "postgres", self._atomic_fence, self._check)
            return
        with self._lock, postgres_transaction(self.conn), self.conn.cursor() as cursor:
            yield _SqlTransaction(cursor, "postgres")

    @contextmanager
    def atomic(
        self,
        serde: Any,
        *,
        fence: Fence | None = None,
        doing: str = "import",
        pipelined: bool = False,
    ) -> Iterator[BaseCheckpointSaver[str]]:
        """One transaction for substrate rows and checkpoints; all or nothing.

        Yields a LangGraph ``PostgresSaver`` on this store's connection: its
        writes, and every substrate write of this thread meanwhile, commit
        together at the end.

        ``pipelined`` (the runtime's commits): the block runs in psycopg's
        pipeline mode, so it waits for the server only where it reads (a new
        branch's key) and once at the commit, not once per statement. The
        fence is checked first, by a statement that fails unless the epoch
        holds (:meth:`_SqlTransaction.send_fence_check`): nothing after it is
        executed then, and the block raises :class:`WriterFenced`.

        Raises:
            WriterFenced: ``fence`` is given and the thread's writer epoch is
                no longer its own (checked first: nothing is written).
        """
        if self._atomic_thread == threading.get_ident():  # nested (an import's put): part of it
            with self._lock:
                yield self._joined(serde, fence, pipelined=False)
            return
        try:
            with self._lock, postgres_transaction(self.conn, doing=doing, pipeline=pipelined):
                self._atomic_thread = threading.get_ident()
                try:
                    saver = self._joined(serde, fence, pipelined=pipelined)
                    self._atomic_fence = fence
                    yield saver
                    if self._check is not None:  # no statement took it: alone, before COMMIT
                        with self.conn.cursor() as cursor:
                            self._check.send(cursor)
                finally:
                    self._atomic_thread = None
                    self._atomic_fence = None
                    self._check = None
                    if self._joint_saver is not None:
                        cast(Any, self._joint_saver).check = None
        except BaseException as exc:
            self.forget_cached()
            if fence is not None and pipelined:
                found = _fenced_epoch_in(exc)
                if not isinstance(found, _NotFenced):
                    raise fenced(fence, found) from exc
            raise

    def _joined(
        self, serde: Any, fence: Fence | None, *, pipelined: bool
    ) -> BaseCheckpointSaver[str]:
        """Check the fence (if any) in the open transaction; the saver whose writes join it.

        ``pipelined``: the check is sent, not waited for (a failure surfaces
        at the block's next read or its commit).
        """
        if self._check is not None:  # an enclosing block's check goes first
            with self.conn.cursor() as cursor:
                self._check.send(cursor)
        if fence is not None and fence.epoch is not None:
            if pipelined:  # sent with the block's first write (see _FenceCheck)
                self._check = _FenceCheck(fence)
            else:
                with self.conn.cursor() as cursor:
                    _SqlTransaction(cursor, "postgres").check_fence(fence)
        saver = self._joint_saver
        if saver is None:  # built once: its construction probes libpq's capabilities
            saver = _joined_saver(self.conn)
            self._joint_saver = saver
        saver.serde = serde  # this block's (used only while the store's lock is held)
        cast(Any, saver).check = self._check
        return saver

    def setup(self) -> None:
        """Create or migrate the substrate tables (serialised by an advisory lock)."""
        with (
            self._lock,
            postgres_transaction(self.conn, doing="setup"),
            self.conn.cursor() as cursor,
        ):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('cortex_migrations', 0))")
            migrate(
                lambda sql, params: cursor.execute(sql, params),
                lambda: [r[0] for r in cursor.execute("SELECT version FROM cortex_migrations")],
                "postgres",
            )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()
