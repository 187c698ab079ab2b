"""Concurrent scratch writers in several processes, on SQLite files and on Postgres.

Each worker process opens the database with `open_scratch` (as separate agent
processes would) and appends to one shared file. Without the write guard,
``get`` then ``put`` loses most of these appends; with it, none. A second
test shows the guard really excludes another process: while this process
holds it, a child's append waits — seen, not timed: the kernel's lock table
(``/proc/locks``) or Postgres's (``pg_locks``) shows the child's request
blocked on the guard, and the append has not landed.

No worker may outlive its test: `reaped` joins each one, then terminates,
then kills it, and fails the test naming the hung workers.
"""

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.process import BaseProcess

import pytest

from cortex_agents.errors import MemoryNotFound
from cortex_agents.scratch import open_scratch
from tests.support.scratch import node_memory, thread_memory

PROCESSES = 4
APPENDS = 50
JOIN_TIMEOUT_S = 120.0
SIGNAL_TIMEOUT_S = 60.0
POLL_S = 0.01

# spawn, not fork: children must not inherit open connections or threads.
SPAWN = multiprocessing.get_context("spawn")


@contextmanager
def reaped(processes: Sequence[BaseProcess]) -> Iterator[None]:
    """On exit, wait for every started process; terminate, then kill, any that hangs."""
    try:
        yield
    finally:
        hung = []
        for process in processes:
            if process.pid is None:  # never started
                continue
            process.join(timeout=JOIN_TIMEOUT_S)
            if process.is_alive():
                hung.append(process.pid)
                process.terminate()
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=10)
        if hung:
            pytest.fail(
                f"worker processes {hung} were still running after {JOIN_TIMEOUT_S:.0f} s "
                "and were killed"
            )


def append_many(database: str, worker: int, start) -> None:
    """Worker process: open the database, wait for the start signal, append APPENDS lines."""
    with open_scratch(database) as scratch:
        memory = thread_memory(scratch, "analyst", "t")
        if not start.wait(timeout=SIGNAL_TIMEOUT_S):
            raise SystemExit("no start signal")
        for index in range(APPENDS):
            memory.append("/log", f"p{worker}-{index}")


def append_once(database: str, opened, go, ready, done) -> None:
    """Worker process: open, wait for `go`, say it is about to append, append, say it is done."""
    with open_scratch(database) as scratch:
        memory = node_memory(scratch, "analyst")
        opened.set()
        if not go.wait(timeout=SIGNAL_TIMEOUT_S):
            raise SystemExit("no go signal")
        ready.set()
        memory.append("/log", "from the child")
        done.set()


def test_concurrent_appends_from_several_processes_lose_nothing(durable_database):
    with open_scratch(durable_database):
        pass  # set the database up once, so the workers only race on their appends
    start = SPAWN.Event()
    workers = [
        SPAWN.Process(target=append_many, args=(durable_database, worker, start))
        for worker in range(PROCESSES)
    ]
    with reaped(workers):
        for worker in workers:
            worker.start()
        start.set()
    assert [worker.exitcode for worker in workers] == [0] * PROCESSES
    with open_scratch(durable_database) as scratch:
        lines = thread_memory(scratch, "analyst", "t").read("/log").split("\n")
    expected = [f"p{w}-{i}" for w in range(PROCESSES) for i in range(APPENDS)]
    assert len(lines) == PROCESSES * APPENDS
    assert sorted(lines) == sorted(expected)
    for worker in range(PROCESSES):  # each process's own appends stay in order
        own = [line for line in lines if line.startswith(f"p{worker}-")]
        assert own == [f"p{worker}-{i}" for i in range(APPENDS)]


def blocked_on_the_guard(database: str, guard, pid: int) -> bool:
    """Whether a lock request on the scratch guard is waiting (on SQLite: process ``pid``'s)."""
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as conn:
            (waiting,) = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
        return waiting > 0
    # /proc/locks lists each blocked request as "N: -> FLOCK ADVISORY WRITE PID MAJ:MIN:INODE ..."
    inode = os.stat(guard.lock_path).st_ino
    with open("/proc/locks", encoding="ascii") as table:
        return any(
            fields[1:3] == ["->", "FLOCK"]
            and fields[5] == str(pid)
            and fields[6].endswith(f":{inode}")
            for fields in (line.split() for line in table)
        )


def test_the_guard_excludes_a_writer_in_another_process(durable_database):
    opened, go, ready, done = SPAWN.Event(), SPAWN.Event(), SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=append_once, args=(durable_database, opened, go, ready, done))
    # The observer reads through its own connection: on Postgres the holder's connection is
    # busy with the guard's transaction for as long as the guard is held.
    with (
        open_scratch(durable_database) as scratch,
        open_scratch(durable_database) as observer,
        reaped([child]),
    ):
        memory, watch = node_memory(scratch, "analyst"), node_memory(observer, "analyst")
        child.start()
        assert opened.wait(timeout=SIGNAL_TIMEOUT_S), "the child could not open the database"
        with memory.guard.hold(memory.namespace):
            go.set()
            assert ready.wait(timeout=SIGNAL_TIMEOUT_S), "the child never got to its append"
            # Wait until the child's request is seen blocked on the guard; an append that
            # lands instead fails at once. The deadline only keeps a broken guard from hanging.
            for _ in range(int(SIGNAL_TIMEOUT_S / POLL_S)):
                assert not done.wait(POLL_S), "the child appended while this process held the guard"
                if blocked_on_the_guard(durable_database, memory.guard, child.pid):
                    break
            else:
                pytest.fail("the child's append never waited on the guard")
            assert not done.is_set()
            with pytest.raises(MemoryNotFound):
                watch.read("/log")
            assert child.is_alive()
        assert done.wait(timeout=SIGNAL_TIMEOUT_S), "the child's append never finished"
        assert watch.read("/log") == "from the child"
    assert child.exitcode == 0
