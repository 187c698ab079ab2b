"""Scratch memory on every backend, opened with `open_scratch`: memory, a SQLite file, Postgres.

One parametrized suite (the `database` fixture of this directory's conftest):
each command, each refusal, namespace isolation and the connector's fallback
must behave the same on all three. Then the opener itself: what it opens,
that durable memory outlives it, that it shares the checkpointer's database,
that concurrent openers of a fresh database do not collide, and how it
refuses what it cannot open.
"""

import os
import sqlite3
import threading
from collections.abc import Iterator

import psycopg
import pytest
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from cortex_agents.errors import (
    InvalidArgument,
    InvalidMemoryPath,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
    StorageError,
)
from cortex_agents.persistence import open_saver
from cortex_agents.scratch import ScratchBackend, ScratchConnector, open_scratch, render_tree
from cortex_agents.scratch._atomic import PostgresAdvisoryGuard, ProcessLockGuard, SqliteFileGuard
from tests.support.scratch import everything, node_memory, thread_memory


@pytest.fixture
def scratch(database: str | None) -> Iterator[ScratchBackend]:
    with open_scratch(database) as opened:
        yield opened


def test_open_scratch_picks_the_store_and_its_guard(backend, database, scratch):
    store_type, guard_type = {
        "memory": (InMemoryStore, ProcessLockGuard),
        "sqlite": (SqliteStore, SqliteFileGuard),
        "postgres": (PostgresStore, PostgresAdvisoryGuard),
    }[backend]
    assert type(scratch.store) is store_type and type(scratch.guard) is guard_type
    if backend == "sqlite":
        assert scratch.guard.lock_path == os.path.realpath(database) + ".scratch-lock"
    memory = node_memory(scratch, "n")
    assert memory.store is scratch.store and memory.guard is scratch.guard
    memory.append("/f", "x")
    assert memory.read("/f") == "x"


def test_each_command(scratch):
    memory = node_memory(scratch, "analyst")
    assert memory.append("/notes/todo", "check the totals") == 16
    assert memory.append("/notes/todo", "then file") == 26
    assert memory.append("/plan", "one") == 3
    assert memory.read("/notes/todo") == "check the totals\nthen file"
    assert memory.update("/notes/todo", "t", "T") == 4
    assert memory.update("/notes/todo", "absent", "x") == 0
    assert memory.read("/notes/todo") == "check The ToTals\nThen file"
    assert render_tree(memory.list()) == "/\n  notes/\n    todo (26 chars)\n  plan (3 chars)"
    assert render_tree(memory.list("/notes")) == "/notes/\n  todo (26 chars)"
    assert memory.delete("/plan") == 1
    memory.append("/notes/done", "x")
    assert memory.delete("/notes") == 2
    assert memory.is_empty() and render_tree(memory.list()) == "/ (empty)"


def test_refusals_change_nothing(scratch):
    memory = node_memory(scratch, "analyst")
    memory.append("/a/b", "x")
    before = everything(scratch.store)
    refusals = [
        (lambda: memory.read("/zz"), MemoryNotFound),
        (lambda: memory.read("/a"), MemoryIsADirectory),
        (lambda: memory.append("/a", "y"), MemoryIsADirectory),
        (lambda: memory.append("/a/b/c", "y"), MemoryNotADirectory),
        (lambda: memory.update("/a", "x", "y"), MemoryIsADirectory),
        (lambda: memory.update("/zz", "x", "y"), MemoryNotFound),
        (lambda: memory.delete("/zz"), MemoryNotFound),
        (lambda: memory.delete("/"), InvalidMemoryPath),
        (lambda: memory.append("/a/../etc", "y"), InvalidMemoryPath),
        (lambda: memory.append("/notes\n", "y"), InvalidMemoryPath),
        (lambda: memory.append("/ａ", "y"), InvalidMemoryPath),
        (lambda: memory.append("/%2e%2e", "y"), InvalidMemoryPath),
        (lambda: memory.append("/c", "nul\x00"), InvalidArgument),
        (lambda: memory.update("/a/b", "", "y"), InvalidArgument),
    ]
    for action, error_type in refusals:
        with pytest.raises(error_type):
            action()
    assert everything(scratch.store) == before


def test_the_key_is_the_normalised_path_so_dots_and_slashes_cannot_collide(scratch):
    memory = node_memory(scratch, "n.1")
    memory.append("/a/b", "slash")
    memory.append("/a.b", "dot")
    assert sorted((i.namespace, i.key) for i in scratch.store.search(("cortex_scratch",))) == [
        (("cortex_scratch", "n%2E1", "global"), "/a.b"),
        (("cortex_scratch", "n%2E1", "global"), "/a/b"),
    ]
    assert memory.read("/a/b") == "slash" and memory.read("/a.b") == "dot"


@pytest.mark.parametrize(
    ("first", "second"),
    [("n1", "n10"), ("a_1", "aX1"), ("a%", "a%25"), ("a.b", "a"), ("A", "a")],
)
def test_node_ids_are_isolated(scratch, first, second):
    node_memory(scratch, first).append("/f", "first")
    assert node_memory(scratch, second).is_empty()
    assert node_memory(scratch, first).read("/f") == "first"


def test_threads_are_isolated_and_fall_back_to_global(scratch):
    glob = node_memory(scratch, "n")
    t1 = thread_memory(scratch, "n", "t1")
    t10 = thread_memory(scratch, "n", "t10")
    glob.append("/shared", "global")
    t1.append("/mine", "thread one")
    assert t10.is_empty() and [f.path for f in glob.files()] == ["/shared"]
    assert [f.path for f in t1.files()] == ["/mine"]
    connector = ScratchConnector(content="full")
    assert connector.render(t1).body == "==> /mine <==\nthread one"
    fallback = connector.render(t10)
    assert fallback.fell_back_to_global and fallback.body == "==> /shared <==\nglobal"


def test_threads_of_one_process_share_a_backend_without_losing_appends(scratch):
    memory = node_memory(scratch, "n")
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            barrier.wait(timeout=30)
            for index in range(15):
                memory.append("/log", f"w{worker}-{index}")
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
    assert failures == []
    lines = memory.read("/log").split("\n")
    assert sorted(lines) == sorted(f"w{w}-{i}" for w in range(4) for i in range(15))


# -- the opener ----------------------------------------------------------------


def test_durable_memory_outlives_the_backend(durable_database):
    with open_scratch(durable_database) as first:
        thread_memory(first, "n", "t").append("/kept", "across opens")
    with open_scratch(durable_database) as second:
        assert thread_memory(second, "n", "t").read("/kept") == "across opens"


def test_memory_backends_share_nothing():
    with open_scratch(None) as first, open_scratch(None) as second:
        node_memory(first, "n").append("/f", "x")
        assert node_memory(second, "n").is_empty()


def _tables(database: str) -> set[str]:
    if database.startswith("postgresql://"):
        with psycopg.connect(database) as conn:
            rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            return {row[0] for row in rows}
    conn = sqlite3.connect(database)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        conn.close()
    return {row[0] for row in rows}


def test_scratch_lives_beside_the_checkpointer_in_one_database(durable_database):
    with open_saver(durable_database), open_scratch(durable_database) as scratch:
        node_memory(scratch, "n").append("/f", "beside the checkpoints")
    with open_scratch(durable_database) as scratch, open_saver(durable_database):
        assert node_memory(scratch, "n").read("/f") == "beside the checkpoints"
    tables = _tables(durable_database)
    assert {"store", "store_migrations", "checkpoints", "cortex_events"} <= tables


def test_concurrent_openers_of_a_fresh_database_take_turns_setting_it_up(durable_database):
    count = 6
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def open_and_append(worker: int) -> None:
        try:
            barrier.wait(timeout=30)
            with open_scratch(durable_database) as scratch:
                node_memory(scratch, "n").append("/log", f"w{worker}")
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    threads = [
        threading.Thread(target=open_and_append, args=(w,), daemon=True) for w in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "an opener hung"
    assert failures == []
    with open_scratch(durable_database) as scratch:
        lines = node_memory(scratch, "n").read("/log").split("\n")
    assert sorted(lines) == [f"w{w}" for w in range(count)]


def test_an_unreachable_postgres_is_a_storage_error_without_the_password():
    url = "postgresql://scratch_user:s3cret-pw@127.0.0.1:1/nowhere"
    with pytest.raises(StorageError) as caught, open_scratch(url):
        pytest.fail("opened an unreachable database")
    error = caught.value
    assert error.code == "unreachable"
    assert "postgresql://scratch_user@127.0.0.1:1/nowhere" in str(error)
    assert "s3cret-pw" not in str(error) and "s3cret-pw" not in repr(error.__cause__)


def test_a_missing_sqlite_directory_is_an_error_naming_the_path(tmp_path):
    path = tmp_path / "no" / "such" / "scratch.db"
    missing = pytest.raises(StorageError, match="does not exist; create it first")
    with missing as caught, open_scratch(path):
        pytest.fail("opened a database in a missing directory")
    assert caught.value.code == "unreachable"
    assert repr(str(path)) in str(caught.value) and repr(str(path.parent)) in str(caught.value)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("make", "reason", "code"),
    [
        (lambda tmp: tmp, "it is a directory", "unreachable"),
        (lambda tmp: tmp / "text.db", "file is not a database", "not_a_database"),
    ],
    ids=["a directory", "not a database"],
)
def test_a_path_sqlite_cannot_open_is_an_error_naming_it(tmp_path, make, reason, code):
    (tmp_path / "text.db").write_text("plain text, not SQLite\n" * 10)
    path = make(tmp_path)
    with pytest.raises(StorageError, match=reason) as caught, open_scratch(path):
        pytest.fail("opened something that is not a SQLite database")
    assert caught.value.code == code and repr(str(path)) in str(caught.value)


@pytest.mark.parametrize(
    ("db", "error_type", "code"),
    [
        ("mysql://host/db", StorageError, "unsupported_url"),
        ("file:///tmp/x.db", StorageError, "unsupported_url"),
        ("", InvalidArgument, "invalid_argument"),
        (42, InvalidArgument, "invalid_argument"),
    ],
)
def test_other_databases_are_refused(db, error_type, code):
    with pytest.raises(error_type) as caught, open_scratch(db):
        pytest.fail("opened an unsupported database")
    assert caught.value.code == code
    if error_type is InvalidArgument:
        assert caught.value.field == "db"


def test_an_in_memory_sqlite_database_gets_a_process_lock(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_scratch(":memory:") as scratch:
        assert type(scratch.store) is SqliteStore and type(scratch.guard) is ProcessLockGuard
        node_memory(scratch, "n").append("/f", "x")
        assert node_memory(scratch, "n").read("/f") == "x"
    assert list(tmp_path.iterdir()) == []  # no file named ":memory:", no lock file


# -- a store opened by the caller ------------------------------------------------


def test_a_caller_opened_sqlite_store_gets_the_guard_of_its_file(tmp_path):
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    try:
        assert isinstance(ScratchBackend.for_store(SqliteStore(conn)).guard, ProcessLockGuard)
    finally:
        conn.close()
    with SqliteStore.from_conn_string(str(tmp_path / "s.db")) as on_file:
        on_file.setup()
        backend = ScratchBackend.for_store(on_file)
        assert isinstance(backend.guard, SqliteFileGuard)
        assert backend.guard.lock_path == os.path.realpath(tmp_path / "s.db") + ".scratch-lock"
        node_memory(backend, "n").append("/f", "x")
        assert (tmp_path / "s.db.scratch-lock").exists()


@pytest.mark.postgres
def test_postgres_guard_is_a_transaction_that_rolls_back(postgres_url):
    with open_scratch(postgres_url) as scratch:
        memory = node_memory(scratch, "n")

        def write_then_fail() -> None:
            with memory.guard.hold(memory.namespace) as tx:
                tx.put(memory.namespace, "/f", {"content": "never"}, index=False)
                assert tx.get(memory.namespace, "/f").value == {"content": "never"}
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            write_then_fail()
        assert memory.is_empty()
        memory.append("/f", "kept")  # the connection is usable afterwards
        assert memory.read("/f") == "kept"


@pytest.mark.postgres
def test_a_caller_opened_postgres_pool_store(postgres_url):
    with PostgresStore.from_conn_string(postgres_url, pool_config={"max_size": 3}) as store:
        store.setup()
        memory = thread_memory(ScratchBackend.for_store(store), "n", "t")
        threads = [
            threading.Thread(
                target=lambda w=w: [memory.append("/log", f"{w}-{i}") for i in range(10)],
                daemon=True,
            )
            for w in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
        assert sorted(memory.read("/log").split("\n")) == sorted(
            f"{w}-{i}" for w in range(3) for i in range(10)
        )
        assert memory.delete("/log") == 1 and memory.is_empty()


@pytest.mark.postgres
def test_a_pipelined_postgres_store_is_refused(postgres_url):
    with PostgresStore.from_conn_string(postgres_url, pipeline=True) as store:
        with pytest.raises(InvalidArgument, match="pipeline=True") as caught:
            ScratchBackend.for_store(store)
        assert caught.value.field == "store"
