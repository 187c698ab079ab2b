"""One writer per thread, across processes: waiting loses nothing, impatience gets ThreadBusy."""

from __future__ import annotations

import multiprocessing

import pytest

from cortex_agents.errors import ThreadBusy
from cortex_agents.persistence import _locks as locks
from cortex_agents.persistence import open_saver
from tests.support.graphs import chain_graph, expected_log

STEPS_PER_WRITER = 6
CONFIG = {"configurable": {"thread_id": "shared"}}


def advance(database: str, steps: int) -> None:
    """Add ``steps`` steps to the shared thread, holding its writer lock."""
    with open_saver(database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        with saver.lock("shared", timeout=None):
            state = app.get_state(CONFIG).values
            app.invoke({"goal": state.get("steps", 0) + steps}, CONFIG)


def hold(database: str, held, release) -> None:
    """Hold the shared thread's lock from ``held`` until ``release`` (or 120 s, a safety net)."""
    with open_saver(database) as saver, saver.lock("shared"):
        held.set()
        release.wait(120)


class SteppingClock:
    """Stands in for ``time`` in the locks module: each reading is 0.1 s after the one
    before, and a poll's sleep is counted instead of slept, so how long a lock waits
    is decided by its code, not by the machine's speed."""

    def __init__(self) -> None:
        self.now = 0.0
        self.polls = 0

    def monotonic(self) -> float:
        self.now += 0.1
        return self.now

    def sleep(self, seconds: float) -> None:
        self.polls += 1


@pytest.fixture
def spawn():
    return multiprocessing.get_context("spawn")


def test_concurrent_writers_lose_nothing(durable_database, spawn):
    with open_saver(durable_database):
        pass  # create the tables once, before the writers race
    writers = [
        spawn.Process(target=advance, args=(durable_database, STEPS_PER_WRITER)) for _ in range(4)
    ]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    with open_saver(durable_database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        final = app.get_state(CONFIG).values
        assert final["steps"] == 4 * STEPS_PER_WRITER
        assert final["substrate"] == expected_log(4 * STEPS_PER_WRITER)


def test_a_busy_thread_is_refused_with_thread_busy(durable_database, spawn, monkeypatch):
    with open_saver(durable_database):
        pass
    held, release = spawn.Event(), spawn.Event()
    holder = spawn.Process(target=hold, args=(durable_database, held, release))
    holder.start()
    try:
        assert held.wait(60)
        with open_saver(durable_database) as saver:
            clock = SteppingClock()
            monkeypatch.setattr(locks, "time", clock)
            with pytest.raises(ThreadBusy) as caught, saver.lock("shared", timeout=0.55):
                pass
            # it polled until its timeout had passed on its clock, then gave up
            assert caught.value.thread_id == "shared"
            assert caught.value.waited >= 0.55 and clock.polls >= 2
            polls = clock.polls
            with pytest.raises(ThreadBusy), saver.lock("shared", timeout=0):
                pass
            assert clock.polls == polls  # timeout 0: refused at once, no poll
            monkeypatch.undo()
            with saver.lock("other-thread", timeout=0):  # other threads are unaffected
                pass
    finally:
        release.set()
        holder.join(30)
    with open_saver(durable_database) as saver, saver.lock("shared", timeout=0):
        pass  # released when the holder exited


def test_a_dead_holder_never_blocks_a_resume(durable_database, spawn):
    with open_saver(durable_database):
        pass
    held, never = spawn.Event(), spawn.Event()
    holder = spawn.Process(target=hold, args=(durable_database, held, never))
    holder.start()
    assert held.wait(60)
    holder.kill()  # SIGKILL while it holds the lock: no cleanup runs
    holder.join(30)
    with open_saver(durable_database) as saver, saver.lock("shared", timeout=5):
        pass


def probe(database: str, result) -> None:
    """In another process: can it take the shared thread's lock right now?"""
    with open_saver(database) as saver:
        try:
            with saver.lock("shared", timeout=0):
                result.put("acquired")
        except ThreadBusy:
            result.put("busy")


def test_two_savers_of_one_process_exclude_each_other(durable_database):
    with open_saver(durable_database) as first, open_saver(durable_database) as second:
        with first.lock("shared"), pytest.raises(ThreadBusy), second.lock("shared", timeout=0.1):
            pass
        with second.lock("shared", timeout=0):  # released by the first: free again
            pass


def test_locking_and_releasing_another_thread_keeps_a_held_lock(durable_database, spawn):
    result = spawn.Queue()
    with open_saver(durable_database) as saver, saver.lock("shared"):
        for other in ("a", "b", "c"):  # each opens and closes a handle of the lock file
            with saver.lock(other):
                pass
        checker = spawn.Process(target=probe, args=(durable_database, result))
        checker.start()
        checker.join(60)
        assert result.get(timeout=10) == "busy"


def _advisory_holders(url: str) -> list[int]:
    """Backend pids holding an advisory lock in the database."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    return [row[0] for row in rows]


@pytest.mark.postgres
def test_a_released_lock_connection_serves_the_next_hold_unless_the_server_ended_it(
    postgres_url,
):
    pool = locks.PostgresLocks(postgres_url, idle=2)
    try:
        with pool.hold("a"):
            (first,) = _advisory_holders(postgres_url)
        assert _advisory_holders(postgres_url) == []  # released, the session kept
        with pool.hold("b"):
            assert _advisory_holders(postgres_url) == [first]  # no new backend for it
        with pool.hold("c"), pool.hold("d"), pool.hold("e"):
            assert len(set(_advisory_holders(postgres_url))) == 3
        assert pool.idle_connections() == 2  # at most `idle` kept
        assert _end_idle_sessions(postgres_url) == 2  # the server ends the kept ones
        with pool.hold("f") as lease:
            (holder,) = _advisory_holders(postgres_url)
            assert holder != first and lease.lost() is None
    finally:
        pool.close()
    assert pool.idle_connections() == 0


def _end_idle_sessions(url: str) -> int:
    """Terminate this database's other idle sessions (a lock pool's kept connections)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND state = 'idle' AND pid <> pg_backend_pid()"
        ).fetchall()
    assert all(row[0] for row in rows)
    return len(rows)
