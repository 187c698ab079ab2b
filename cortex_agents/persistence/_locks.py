"""One writer per thread: locks held for the whole of an invocation.

LangGraph's savers take no lock: two processes advancing one thread both
"succeed" and one's updates vanish from the head. A checkpointer has no
begin/end-of-run hook, so the lock is taken around the invocation
(:meth:`CortexSaver.lock`, which the cortex runtime always uses).

* :class:`ProcessLocks` — within one process (the in-memory backend).
* :class:`FileLocks` — SQLite: an OS byte-range lock on a sidecar file
  ``<db>.cortex-locks``, one byte per thread (by hash). The OS releases it
  when the holder dies, so a crashed run never blocks a resume, and unlike
  ``BEGIN IMMEDIATE`` held for a whole run it does not block other threads'
  writes to the database. On Linux these are open-file-description locks
  (``F_OFD_SETLK``): two savers on one file in one process exclude each
  other, and closing some other handle of the file releases nothing. (Classic
  POSIX record locks belong to the process and vanish when it closes *any*
  handle of the file; they are used only where OFD locks do not exist, with
  a process-wide registry so that savers of one process still take turns.)
* :class:`PostgresLocks` — a session advisory lock on a dedicated
  connection; the server releases it if the connection drops. A released
  lock's connection is kept for the next hold (a few at most).

``timeout`` is how long to wait: 0 fails at once; ``None`` waits forever.
Failing raises :class:`ThreadBusy`.

A lock can go away under its holder: the lock file deleted or replaced (by a
person, a clean-up job), the advisory lock's connection terminated (a server
restart, an idle-session timeout, a pooler, ``pg_terminate_backend``). The
holder is not told. So :meth:`ThreadLocks.hold` yields a :class:`Lease` whose
:meth:`Lease.lost` says, on demand, whether the lock is still there: the lock
file still names the locked inode; the lock's connection still answers. That
is the early signal (checked before each stage body). The proof is the
writer epoch each commit checks (:mod:`cortex_agents.persistence._fencing`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import select
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cortex_agents.errors import StorageError, ThreadBusy

__all__ = ["FileLocks", "Lease", "PostgresLocks", "ProcessLocks", "ThreadLocks"]

_POLL: Final = 0.02
_OFD: Final = hasattr(fcntl, "F_OFD_SETLK")
# struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padding
_FLOCK: Final = struct.Struct("hhqqi4x")


def scalar(cursor: Any) -> Any:
    """The single value of a one-row, one-column result (a cursor of ``SELECT f(...)``)."""
    row = cursor.fetchone()
    if row is None:
        raise StorageError("integrity", "a single-value query returned no row")
    return row[0]


def try_advisory_lock(conn: Any, key: int) -> bool:
    """Take Postgres's session advisory lock ``key`` if free (psycopg connection, autocommit)."""
    return bool(scalar(conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))))


@dataclass(slots=True)
class _Entry:
    """One key's lock and how many hold or wait for it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class _Guards:
    """In-process locks by key, each kept only while someone holds or waits for it.

    A run touches a thread's lock once per invocation; a long-lived process
    serving many threads must not keep one lock per thread it ever saw.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[object, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def acquire(self, key: object, timeout: float | None) -> bool:
        """Take the key's lock (waiting up to ``timeout`` seconds; ``None``: forever)."""
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            entry.users += 1
        if entry.lock.acquire(timeout=-1 if timeout is None else timeout):
            return True
        self._leave(key, entry)
        return False

    def release(self, key: object) -> None:
        """Release the key's lock (dropping it when nobody else holds or waits)."""
        with self._lock:
            entry = self._entries[key]
        entry.lock.release()
        self._leave(key, entry)

    def _leave(self, key: object, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            if entry.users == 0 and self._entries.get(key) is entry:
                del self._entries[key]


class Lease:
    """A held lock, as its holder sees it: :meth:`lost` says whether it is still there.

    The base lease cannot be lost (an in-process lock lives as long as its holder).
    """

    def lost(self) -> str | None:
        """Why the lock is gone (a sentence), or ``None`` while it is still held."""
        return None


class _FileLease(Lease):
    """A byte lock on an open lock file: lost when the path no longer names that file."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._inode = _inode(os.fstat(fd))

    def lost(self) -> str | None:
        try:
            now = _inode(os.stat(self.path))
        except FileNotFoundError:
            return f"its lock file {str(self.path)!r} was deleted"
        except OSError as exc:
            return f"its lock file {str(self.path)!r} cannot be read ({exc.strerror or exc})"
        if now != self._inode:  # the locked inode stays allocated while we hold it open
            return f"its lock file {str(self.path)!r} was replaced by another file"
        return None


def _inode(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class _PostgresLease(Lease):
    """A session advisory lock: lost when its connection is."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def lost(self) -> str | None:
        import psycopg

        # The lock's connection sits idle between statements, so the server sends it
        # nothing unless it ends the session: a terminated backend, a restart, an idle
        # timeout all write their error and close the socket, which makes it readable.
        # So a socket with nothing to read is a live session still holding the lock, and
        # only a readable one is asked (the answer then names why). Asking every time
        # cost a round trip per stage.
        if not self._conn.closed and not self._readable():
            return None
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return f"the connection holding its advisory lock was closed ({detail})"
        return None

    def _readable(self) -> bool:
        """Whether the server sent the connection anything (or closed it), without waiting."""
        return _readable(self._conn)


def _readable(conn: Any) -> bool:
    """Whether the server sent ``conn`` anything (or closed it), without waiting."""
    poll = select.poll()  # one per call: stages of one superstep may ask at once
    poll.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    return bool(poll.poll(0))


# Where OFD locks are missing: one guard per (lock file, thread) for the whole process.
_PROCESS_GUARDS = _Guards()


def _key(thread_id: str) -> int:
    """A stable 62-bit key for a thread id."""
    return int.from_bytes(hashlib.blake2b(thread_id.encode(), digest_size=8).digest(), "big") >> 2


class ThreadLocks(ABC):
    """Exclusive per-thread locks."""

    def __init__(self) -> None:
        self._local = _Guards()

    def _guards(self, thread_id: str) -> tuple[_Guards, object]:
        """The in-process guard set and key that exclude other holders of this process."""
        return self._local, thread_id

    def held(self) -> int:
        """How many per-thread locks this process keeps now (held or waited for; bounded)."""
        return len(self._local)

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release what the locks keep between holds (Postgres: idle lock connections)."""

    @contextmanager
    def hold(self, thread_id: str, timeout: float | None = 0.0) -> Iterator[Lease]:
        """Hold the thread's lock for the block; yield its :class:`Lease`.

        Raises:
            ThreadBusy: another holder kept it past ``timeout`` seconds.
        """
        started = time.monotonic()
        guards, key = self._guards(thread_id)
        if not guards.acquire(key, timeout):
            raise ThreadBusy(thread_id, time.monotonic() - started)
        try:
            remaining = (
                None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
            )
            with self._hold_shared(thread_id, remaining, started) as lease:
                yield lease if lease is not None else Lease()
        finally:
            guards.release(key)

    @abstractmethod
    def _hold_shared(
        self, thread_id: str, timeout: float | None, started: float
    ) -> AbstractContextManager[Lease | None]:
        """Hold the cross-process part of the lock (yield its lease; ``None``: cannot be lost)."""


class ProcessLocks(ThreadLocks):
    """Locks that only exclude other threads of this process."""

    @contextmanager
    def _hold_shared(
        self, thread_id: str, timeout: float | None, started: float
    ) -> Iterator[Lease]:
        yield Lease()


class FileLocks(ThreadLocks):
    """Cross-process locks for a SQLite database, on ``<db>.cortex-locks``."""

    def __init__(self, database: str | Path) -> None:
        super().__init__()
        self.path = Path(f"{database}.cortex-locks")

    def _guards(self, thread_id: str) -> tuple[_Guards, object]:
        if _OFD:  # the OS lock itself excludes other handles of this process
            return super()._guards(thread_id)
        return _PROCESS_GUARDS, (os.path.realpath(self.path), thread_id)

    @contextmanager
    def _hold_shared(
        self, thread_id: str, timeout: float | None, started: float
    ) -> Iterator[Lease]:
        offset = _key(thread_id)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                lease = self._lock(fd, offset, thread_id, timeout, started)
            except BaseException:
                os.close(fd)
                raise
            if lease is not None:
                break
            os.close(fd)  # the file was deleted or replaced while we locked it: lock the new one
        try:
            yield lease
        finally:
            try:
                _lock_byte(fd, offset, exclusive=False)
            finally:
                os.close(fd)

    def _lock(
        self, fd: int, offset: int, thread_id: str, timeout: float | None, started: float
    ) -> Lease | None:
        """Lock ``offset`` of ``fd``; its lease, or ``None`` when the path names another file now."""
        while True:
            try:
                _lock_byte(fd, offset, exclusive=True)
                break
            except OSError:
                if timeout is not None and time.monotonic() - started >= timeout:
                    raise ThreadBusy(thread_id, time.monotonic() - started) from None
                time.sleep(_POLL)
        lease = _FileLease(self.path, fd)
        if lease.lost() is None:
            return lease
        _lock_byte(fd, offset, exclusive=False)
        return None


def _lock_byte(fd: int, offset: int, *, exclusive: bool) -> None:
    """Take (without waiting) or release the one-byte lock at ``offset``; OSError if held."""
    if _OFD:
        kind = fcntl.F_WRLCK if exclusive else fcntl.F_UNLCK
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
    else:
        flags = fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_UN
        fcntl.lockf(fd, flags, 1, offset, os.SEEK_SET)


class PostgresLocks(ThreadLocks):
    """Cross-process locks on a PostgreSQL server (session advisory locks).

    Each held lock has a connection of its own (its session holds the lock,
    and the lease watches it). A connection whose lock was released is kept
    for the next hold, up to ``idle`` of them: opening one costs the server a
    new backend process (about 2.5 ms of its CPU, and 0.6 ms of the worker's,
    measured on this project's machine), once per run otherwise. A kept
    connection the server sent anything while it sat idle (it ended the
    session) is closed instead of used. :meth:`close` closes the kept ones.

    Args:
        url: A ``postgresql://`` connection string.
        idle: How many released lock connections to keep (0: none).
    """

    def __init__(self, url: str, *, idle: int = 2) -> None:
        super().__init__()
        self.url = url
        self._idle_max = idle
        self._idle: list[Any] = []
        self._pool = threading.Lock()

    def close(self) -> None:
        """Close the kept idle lock connections (a later hold opens a new one)."""
        with self._pool:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def idle_connections(self) -> int:
        """How many released lock connections are kept (at most ``idle``)."""
        with self._pool:
            return len(self._idle)

    def _take(self) -> tuple[Any, bool]:
        """A connection holding no lock, and whether it was kept from an earlier hold."""
        import psycopg

        while True:
            with self._pool:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return psycopg.connect(self.url, autocommit=True), False
            if conn.closed or _readable(conn):  # the server ended the session meanwhile
                conn.close()
                continue
            return conn, True

    def _give_back(self, conn: Any) -> None:
        """Keep a connection that holds no lock for the next hold, or close it."""
        from psycopg.pq import TransactionStatus

        if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
            with self._pool:
                if len(self._idle) < self._idle_max:
                    self._idle.append(conn)
                    return
        conn.close()

    def _try_lock(self, key: int) -> tuple[Any, bool]:
        """A connection and whether it took the lock (a kept one that fails is replaced once)."""
        import psycopg

        conn, kept = self._take()
        try:
            return conn, try_advisory_lock(conn, key)
        except psycopg.OperationalError:
            conn.close()
            if not kept:
                raise
        conn = psycopg.connect(self.url, autocommit=True)  # the kept one died as it was taken
        try:
            return conn, try_advisory_lock(conn, key)
        except BaseException:
            conn.close()
            raise

    @contextmanager
    def _hold_shared(
        self, thread_id: str, timeout: float | None, started: float
    ) -> Iterator[Lease]:
        import psycopg

        key = _key(thread_id)
        conn, locked = self._try_lock(key)
        released = False
        try:
            while not locked:
                if timeout is not None and time.monotonic() - started >= timeout:
                    released = True  # it holds nothing: kept for the next hold
                    raise ThreadBusy(thread_id, time.monotonic() - started)
                time.sleep(_POLL)
                locked = try_advisory_lock(conn, key)
            try:
                yield _PostgresLease(conn)
            finally:
                try:
                    released = bool(scalar(conn.execute("SELECT pg_advisory_unlock(%s)", (key,))))
                except psycopg.Error:
                    if not conn.broken:
                        raise
                    # the connection is gone, and the server released its locks with it
        finally:
            if released:
                self._give_back(conn)
            else:
                conn.close()
