"""ScratchMemory on in-process stores: files, directories, errors, limits, namespaces, guard."""

import sqlite3
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from cortex_agents.errors import (
    InvalidArgument,
    InvalidMemoryPath,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
    StorageError,
)
from cortex_agents.scratch import ScratchBackend, ScratchMemory, render_tree
from cortex_agents.scratch._atomic import ProcessLockGuard
from cortex_agents.scratch._store import MAX_FILE_CHARS, MAX_FILES, scratch_namespace
from tests.support.scratch import RecordingStore, node_memory, thread_memory


@pytest.fixture
def store():
    return RecordingStore()


@pytest.fixture
def backend(store):
    return ScratchBackend.for_store(store)


@pytest.fixture
def memory(backend):
    return node_memory(backend, "analyst")


@pytest.fixture(params=["InMemoryStore", "in-memory SqliteStore"])
def local_store(request):
    """A store only this process can reach: the process-lock guard is all that protects it."""
    if request.param == "InMemoryStore":
        yield InMemoryStore()
        return
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn)
        store.setup()
        yield store
    finally:
        conn.close()


def _refused(store, action, error_type, code):
    """Run ``action``; it must raise ``error_type`` with ``code`` and write nothing."""
    before = len(store.puts)
    with pytest.raises(error_type) as caught:
        action()
    assert caught.value.code == code
    assert len(store.puts) == before
    return caught.value


def test_append_creates_then_appends_on_a_new_line(memory):
    assert memory.append("/notes/todo", "buy milk") == 8
    assert memory.append("/notes/todo", "call bob") == 17
    assert memory.read("/notes/todo") == "buy milk\ncall bob"


def test_append_adds_no_second_newline(memory):
    memory.append("/log", "one\n")
    memory.append("/log", "two")
    assert memory.read("/log") == "one\ntwo"


def test_the_file_key_is_the_normalised_path(store, memory):
    memory.append("//a///b/", "x")
    items = store.search(memory.namespace)
    assert [(item.key, item.value) for item in items] == [("/a/b", {"content": "x"})]


def test_read_errors_name_what_is_there(store, memory):
    memory.append("/notes/todo", "x")
    _refused(store, lambda: memory.read("/nope"), MemoryNotFound, "not_found")
    error = _refused(store, lambda: memory.read("/notes"), MemoryIsADirectory, "is_a_directory")
    assert error.path == "/notes"
    error = _refused(
        store, lambda: memory.read("/notes/todo/x"), MemoryNotADirectory, "not_a_directory"
    )
    assert error.file == "/notes/todo"


def test_a_path_is_never_both_file_and_directory(store, memory):
    memory.append("/a/b", "x")
    _refused(store, lambda: memory.append("/a", "y"), MemoryIsADirectory, "is_a_directory")
    _refused(store, lambda: memory.append("/a/b/c", "y"), MemoryNotADirectory, "not_a_directory")
    _refused(store, lambda: memory.update("/a", "x", "y"), MemoryIsADirectory, "is_a_directory")
    assert memory.files() == memory.files("/a")
    assert [f.path for f in memory.files()] == ["/a/b"]


def test_update_replaces_every_occurrence_and_returns_the_count(memory):
    memory.append("/f", "a-b-a-b-a")
    assert memory.update("/f", "a", "A") == 3
    assert memory.read("/f") == "A-b-A-b-A"
    assert memory.update("/f", "b-", "") == 2
    assert memory.read("/f") == "A-A-A"


def test_update_with_no_occurrence_returns_zero_and_writes_nothing(store, memory):
    memory.append("/f", "abc")
    before = len(store.puts)
    assert memory.update("/f", "zzz", "y") == 0
    assert len(store.puts) == before


def test_update_refusals_write_nothing(store, memory):
    memory.append("/f", "abc")
    _refused(store, lambda: memory.update("/f", "", "y"), InvalidArgument, "invalid_argument")
    _refused(store, lambda: memory.update("/g", "a", "y"), MemoryNotFound, "not_found")
    too_long = "b" * MAX_FILE_CHARS
    error = _refused(
        store, lambda: memory.update("/f", "b", too_long), InvalidArgument, "invalid_argument"
    )
    assert error.field == "new"
    assert memory.read("/f") == "abc"


def test_delete_a_file_and_a_directory_without_touching_lookalike_siblings(memory):
    for path in ["/a/x", "/a/y/z", "/ab/x", "/a b", "/a-c/x", "/b"]:
        memory.append(path, "x")
    assert memory.delete("/a/x") == 1
    assert memory.delete("/a") == 1  # only /a/y/z was left below /a
    assert [f.path for f in memory.files()] == ["/a b", "/a-c/x", "/ab/x", "/b"]


def test_delete_refusals(store, memory):
    memory.append("/f", "x")
    _refused(store, lambda: memory.delete("/"), InvalidMemoryPath, "invalid_path")
    _refused(store, lambda: memory.delete("/g"), MemoryNotFound, "not_found")
    _refused(store, lambda: memory.delete("/f/g"), MemoryNotADirectory, "not_a_directory")
    assert memory.read("/f") == "x"


def test_list_returns_the_tree(memory):
    assert render_tree(memory.list()) == "/ (empty)"
    memory.append("/b", "12")
    memory.append("/a/c", "1")
    tree = memory.list("/")
    assert [child.name for child in tree.children] == ["a", "b"]
    assert tree.children[0].is_dir and tree.children[1].size == 2
    assert render_tree(tree) == "/\n  a/\n    c (1 char)\n  b (2 chars)"
    assert render_tree(memory.list("/a")) == "/a/\n  c (1 char)"
    assert render_tree(memory.list("/b")) == "/b (2 chars)"
    with pytest.raises(MemoryNotFound):
        memory.list("/zz")


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        ("", "must not be empty"),
        ("a\x00b", "NUL"),
        ("\ud800", "lone surrogates"),
        ("x" * (MAX_FILE_CHARS + 1), f"at most {MAX_FILE_CHARS}"),
        (b"bytes", "must be a string"),
    ],
)
def test_unstorable_content_is_refused(store, memory, content, rule):
    error = _refused(
        store, lambda: memory.append("/f", content), InvalidArgument, "invalid_argument"
    )
    assert error.field == "content" and rule in error.rule


def test_a_file_never_grows_past_the_limit(store, memory):
    memory.append("/f", "x" * (MAX_FILE_CHARS - 1))
    error = _refused(store, lambda: memory.append("/f", "y"), InvalidArgument, "invalid_argument")
    assert f"{MAX_FILE_CHARS + 1} characters" in error.rule
    assert len(memory.read("/f")) == MAX_FILE_CHARS - 1


def test_a_namespace_holds_at_most_max_files(store, memory):
    for index in range(MAX_FILES):
        memory.append(f"/f{index}", "x")
    error = _refused(
        store, lambda: memory.append("/one more", "x"), InvalidArgument, "invalid_argument"
    )
    assert f"the limit is {MAX_FILES}" in error.rule
    assert memory.append("/f0", "y") == 3  # existing files still grow
    assert len(memory.files()) == MAX_FILES


def test_scopes_and_threads_do_not_share_files(backend):
    glob = node_memory(backend, "n")
    one = thread_memory(backend, "n", "t1")
    two = thread_memory(backend, "n", "t2")
    other = node_memory(backend, "n2")
    glob.append("/f", "global")
    one.append("/f", "one")
    assert two.is_empty() and other.is_empty()
    assert (glob.read("/f"), one.read("/f")) == ("global", "one")
    assert one.global_view() == glob


@pytest.mark.parametrize(
    ("first", "second"),
    [("a.b", "a%2Eb"), ("a.b", "a%2eb"), ("a%", "a%25"), ("a.b", "a"), ("n1", "n10")],
)
def test_node_ids_never_share_a_namespace(backend, first, second):
    one = node_memory(backend, first)
    two = node_memory(backend, second)
    assert one.namespace != two.namespace
    one.append("/f", "mine")
    assert two.is_empty()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"node_id": ""}, "node_id"),
        ({"node_id": "a\x00"}, "node_id"),
        ({"node_id": 3}, "node_id"),
        ({"node_id": "x" * 257}, "node_id"),
        ({"node_id": "n", "scope": "per_thread"}, "thread_id"),
        ({"node_id": "n", "scope": "per_thread", "thread_id": ""}, "thread_id"),
        ({"node_id": "n", "thread_id": "t"}, "thread_id"),
        ({"node_id": "n", "scope": "everywhere"}, "scope"),
    ],
)
def test_binding_is_validated(backend, kwargs, field):
    with pytest.raises(InvalidArgument) as caught:
        ScratchMemory(backend, **kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("node_id", "scope", "thread_id", "field"),
    [
        ("", "global", None, "node_id"),
        ("n", "per_thread", None, "thread_id"),
        ("n", "per_thread", "", "thread_id"),
        ("n", "everywhere", "t", "scope"),
    ],
)
def test_bind_is_validated(backend, node_id, scope, thread_id, field):
    with pytest.raises(InvalidArgument) as caught:
        backend.bind(node_id, scope=scope, thread_id=thread_id)
    assert caught.value.field == field


def test_namespace_layout():
    assert scratch_namespace("n.1", "global") == ("cortex_scratch", "n%2E1", "global")
    assert scratch_namespace("n", "per_thread", "t.1") == (
        "cortex_scratch",
        "n",
        "per_thread",
        "t%2E1",
    )


class OtherStore(BaseStore):
    """A store of a kind scratch memory has no guard for."""

    def batch(self, ops):
        raise NotImplementedError

    async def abatch(self, ops):
        raise NotImplementedError


def test_every_memory_of_a_backend_shares_its_one_guard(local_store):
    backend = ScratchBackend.for_store(local_store)
    assert isinstance(backend.guard, ProcessLockGuard)
    one, two = node_memory(backend, "a"), thread_memory(backend, "b", "t")
    assert one.guard is two.guard is two.global_view().guard is backend.guard
    # The lock belongs to the guard, not to module state: another backend has its own.
    other = ScratchBackend.for_store(local_store)
    assert other.guard.lock is not backend.guard.lock and other != backend


def test_a_backend_needs_a_store_and_a_guard_it_can_use(store):
    with pytest.raises(InvalidArgument, match=r"ScratchBackend\(store, guard\)") as caught:
        ScratchBackend.for_store(OtherStore())
    assert caught.value.field == "store"
    with pytest.raises(InvalidArgument) as caught:
        ScratchBackend("not a store", ProcessLockGuard(store))
    assert caught.value.field == "store"
    with pytest.raises(InvalidArgument, match="hold") as caught:
        ScratchBackend(store, object())
    assert caught.value.field == "guard"
    with pytest.raises(InvalidArgument, match="open_scratch") as caught:
        ScratchMemory(store, node_id="n")
    assert caught.value.field == "backend"


class WatchedLock:
    """A real lock that says when the thread named ``writer`` asks for it."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.writer_asked = threading.Event()

    def __enter__(self) -> None:
        if threading.current_thread().name == "writer":
            self.writer_asked.set()
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_the_process_guard_holds_a_writer_back_until_released(local_store):
    plain = ScratchBackend.for_store(local_store)
    assert isinstance(plain.guard, ProcessLockGuard)
    watched = WatchedLock(plain.guard.lock)
    memory = node_memory(ScratchBackend(local_store, replace(plain.guard, lock=watched)), "n")
    writer = threading.Thread(
        target=memory.append, args=("/log", "from the writer"), name="writer", daemon=True
    )
    with memory.guard.hold(memory.namespace):
        writer.start()
        assert watched.writer_asked.wait(timeout=10), "the writer never asked for the guard"
        # It asked while this thread holds the guard, so its append cannot have landed.
        with pytest.raises(MemoryNotFound):
            memory.read("/log")
        assert writer.is_alive()
    writer.join(timeout=10)
    assert not writer.is_alive(), "the writer was still blocked after the guard was released"
    assert memory.read("/log") == "from the writer"


def test_writes_go_through_the_guard_and_reads_do_not(store):
    held: list[tuple[str, ...]] = []

    class RecordingGuard:
        @contextmanager
        def hold(self, namespace):
            held.append(namespace)
            yield store

    memory = node_memory(ScratchBackend(store, RecordingGuard()), "n")
    memory.append("/f", "a")
    memory.update("/f", "a", "b")
    memory.read("/f")
    memory.list()
    memory.delete("/f")
    assert held == [memory.namespace] * 3


@pytest.fixture
def eager_switching():
    """Switch threads every microsecond, so unguarded get-then-put pairs interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_threads_appending_to_one_file_lose_nothing(local_store, eager_switching):
    memory = node_memory(ScratchBackend.for_store(local_store), "n")
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            barrier.wait(timeout=30)
            for index in range(40):
                memory.append("/log", f"w{worker}-{index}")
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
    assert failures == []
    lines = memory.read("/log").split("\n")
    assert sorted(lines) == sorted(f"w{w}-{i}" for w in range(8) for i in range(40))


def test_bind_uses_the_thread_only_for_per_thread_scope(backend):
    glob = backend.bind("n", scope="global", thread_id="t1")
    mine = backend.bind("n", scope="per_thread", thread_id="t1")
    assert glob == ScratchMemory(backend, node_id="n") and glob.thread_id is None
    assert mine.thread_id == "t1" and mine.namespace[-1] == "t1"
    assert mine.global_view() == glob


def test_is_empty_reads_at_most_one_item(store, backend, memory, monkeypatch):
    for index in range(20):
        memory.append(f"/f{index}", "x" * 100)
    seen: list[int] = []
    search = store.search

    def counting_search(*args, **kwargs):
        found = search(*args, **kwargs)
        seen.append(len(found))
        return found

    monkeypatch.setattr(store, "search", counting_search)
    assert not memory.is_empty()
    assert thread_memory(backend, "analyst", "t").is_empty()
    assert seen == [1, 0]


def test_an_item_that_is_not_scratch_memory_is_a_storage_error(store, memory):
    store.put(memory.namespace, "/f", {"text": "written by someone else"})
    with pytest.raises(StorageError, match="no string `content`") as caught:
        memory.read("/f")
    assert caught.value.code == "corrupt"
