"""The file-memory command set of the `memory` tool on every backend: memory, a SQLite file, Postgres.

`view`, `create`, `str_replace`, `insert`, `delete` and `rename` on
`/memories/...` paths with file names such as `notes.md`, beside the seed's
commands, through the tool as a model calls it. Every refusal is checked for
zero writes with a witness that sees a rewrite of identical bytes too: the
recording store's put count (memory), SQLite's `PRAGMA data_version` from a
second connection (it changes on every commit by another connection), and
each Postgres row's `xmin` (every UPDATE or INSERT makes a new row version).
"""

import sqlite3
from collections.abc import Callable, Iterator

import psycopg
import pytest

from cortex_agents.scratch import ScratchBackend, ScratchMemory, open_scratch, render_tree
from tests.support.scratch import (
    RecordingStore,
    call_tool,
    everything,
    node_memory,
    thread_memory,
    tool_error,
)


@pytest.fixture
def scratch(backend: str, database: str | None) -> Iterator[ScratchBackend]:
    if backend == "memory":
        yield ScratchBackend.for_store(RecordingStore())
        return
    with open_scratch(database) as opened:
        yield opened


@pytest.fixture
def witness(backend: str, database: str | None, scratch: ScratchBackend) -> Callable[[], object]:
    """A snapshot of the stored state that changes on any write, even of identical bytes."""
    if backend == "memory":
        store = scratch.store
        return lambda: (len(store.puts), everything(store))
    if backend == "sqlite":
        observer = sqlite3.connect(database)

        def sqlite_state() -> object:
            version = observer.execute("PRAGMA data_version").fetchone()[0]
            rows = observer.execute(
                "SELECT prefix, key, value FROM store ORDER BY prefix, key"
            ).fetchall()
            return version, rows

        return sqlite_state

    def postgres_state() -> object:
        with psycopg.connect(database) as conn:
            return conn.execute(
                "SELECT prefix, key, xmin::text, value::text FROM store ORDER BY prefix, key"
            ).fetchall()

    return postgres_state


def ok(memory: ScratchMemory, **args) -> str:
    result = call_tool(memory, **args)
    assert result.status == "success", result.content
    return result.content


def test_each_file_command(scratch):
    memory = thread_memory(scratch, "analyst", "t1")
    assert ok(memory, command="create", path="/memories/notes.md", file_text="one\ntwo\n") == (
        "created '/memories/notes.md'; it holds 8 characters"
    )
    assert ok(memory, command="view", path="/memories/notes.md") == "     1\tone\n     2\ttwo"
    assert ok(memory, command="view", path="/memories") == "/memories/\n  notes.md (8 chars)"
    assert ok(memory, command="view", path="/memories/notes.md", view_range=[2, -1]) == (
        "     2\ttwo"
    )
    assert ok(memory, command="str_replace", path="/memories/notes.md", old_str="two", new_str="2")
    assert ok(
        memory, command="insert", path="/memories/notes.md", insert_line=1, insert_text="1.5"
    ) == ("inserted 1 line after line 1 of '/memories/notes.md'; it now holds 10 characters")
    assert memory.read("/memories/notes.md") == "one\n1.5\n2\n"
    # The seed's commands work on the same files.
    assert call_tool(memory, command="update", path="/memories/notes.md", old="1", new="x").content
    assert memory.read("/memories/notes.md") == "one\nx.5\n2\n"
    assert ok(memory, command="create", path="/memories/notes.md", file_text="new") == (
        "overwrote '/memories/notes.md'; it holds 3 characters"
    )
    ok(memory, command="append", path="/memories/todo.txt", content="call back")
    assert ok(memory, command="rename", old_path="/memories", new_path="/archive/2026") == (
        "renamed '/memories' to '/archive/2026' (2 files)"
    )
    assert ok(memory, command="view", path="/") == (
        "/\n  archive/\n    2026/\n      notes.md (3 chars)\n      todo.txt (9 chars)"
    )
    assert ok(memory, command="rename", old_path="/archive/2026/todo.txt", new_path="/todo.txt")
    assert memory.read("/todo.txt") == "call back"
    assert ok(memory, command="delete", path="/archive") == "deleted '/archive' (1 file)"
    assert [f.path for f in memory.files()] == ["/todo.txt"]


def test_str_replace_needs_exactly_one_match_and_names_the_count(scratch, witness):
    memory = node_memory(scratch, "n")
    memory.create("/notes.md", "a cat, a hat, a mat")
    before = witness()
    for old_str, count in (("dog", 0), ("a ", 3), ("at", 3)):
        error = tool_error(
            call_tool(memory, command="str_replace", path="/notes.md", old_str=old_str, new_str="")
        )
        assert error["code"] == "invalid_argument"
        assert f"occurs {count} times" in error["message"] and "`old_str`" in error["message"]
    assert witness() == before
    assert memory.str_replace("/notes.md", "cat", "dog") == len("a dog, a hat, a mat")
    assert memory.read("/notes.md") == "a dog, a hat, a mat"


def test_a_dotted_file_name_and_a_nested_path_are_different_files(scratch):
    memory = node_memory(scratch, "n.1")
    memory.create("/a.b", "dot")
    memory.create("/a/b", "slash")
    assert memory.read("/a.b") == "dot" and memory.read("/a/b") == "slash"
    assert sorted(i.key for i in scratch.store.search(memory.namespace)) == ["/a.b", "/a/b"]
    assert render_tree(memory.list()) == "/\n  a/\n    b (5 chars)\n  a.b (3 chars)"
    assert memory.delete("/a") == 1  # the directory `a`, not the file `a.b`
    assert memory.read("/a.b") == "dot"
    memory.create("/a/b", "slash")
    assert memory.rename("/a.b", "/c.b") == 1
    assert memory.read("/a/b") == "slash" and memory.read("/c.b") == "dot"


def test_rename_across_scopes_is_refused(scratch, witness):
    shared = node_memory(scratch, "n")
    own = thread_memory(scratch, "n", "t1")
    shared.create("/memories/team.md", "global notes")
    own.create("/memories/mine.md", "thread notes")
    before = witness()
    error = tool_error(
        call_tool(own, command="rename", old_path="/memories/team.md", new_path="/team.md")
    )
    assert error["code"] == "invalid_argument"
    assert "`old_path`" in error["message"] and "`global` memory" in error["message"]
    assert witness() == before
    assert shared.read("/memories/team.md") == "global notes"
    assert [f.path for f in own.files()] == ["/memories/mine.md"]
    # Within one scope it moves; the other scope is untouched.
    assert own.rename("/memories/mine.md", "/mine.md") == 1
    assert [f.path for f in shared.files()] == ["/memories/team.md"]


REFUSALS = [
    ({"command": "create", "path": "/memories", "file_text": "x"}, "is_a_directory"),
    ({"command": "create", "path": "/memories/notes.md/x", "file_text": "x"}, "not_a_directory"),
    ({"command": "create", "path": "/.notes", "file_text": "x"}, "invalid_path"),
    ({"command": "create", "path": "/a..md", "file_text": "x"}, "invalid_path"),
    ({"command": "create", "path": "/x.md", "file_text": "nul\x00"}, "invalid_argument"),
    ({"command": "create", "path": "/x.md"}, "invalid_argument"),
    ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "zz", "new_str": "y"}, "invalid_argument"),
    ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "o", "new_str": "y"}, "invalid_argument"),
    ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "", "new_str": "y"}, "invalid_argument"),
    ({"command": "str_replace", "path": "/nope.md", "old_str": "o", "new_str": "y"}, "not_found"),
    ({"command": "str_replace", "path": "/memories", "old_str": "o", "new_str": "y"}, "is_a_directory"),
    ({"command": "insert", "path": "/memories/notes.md", "insert_line": 3, "insert_text": "x"}, "invalid_argument"),
    ({"command": "insert", "path": "/memories/notes.md", "insert_line": -1, "insert_text": "x"}, "invalid_argument"),
    ({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": ""}, "invalid_argument"),
    ({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "y" * 32_000}, "invalid_argument"),
    ({"command": "insert", "path": "/nope.md", "insert_line": 0, "insert_text": "x"}, "not_found"),
    ({"command": "view", "path": "/memories", "view_range": [1, 2]}, "invalid_argument"),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [2, 1]}, "invalid_argument"),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [1, 5]}, "invalid_argument"),
    ({"command": "view", "path": "/nope.md"}, "not_found"),
    ({"command": "delete", "path": "/nope.md"}, "not_found"),
    ({"command": "delete", "path": "/"}, "invalid_path"),
    ({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/todo.txt"}, "invalid_argument"),
    ({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories"}, "invalid_argument"),
    ({"command": "rename", "old_path": "/memories", "new_path": "/memories/old"}, "invalid_argument"),
    ({"command": "rename", "old_path": "/memories", "new_path": "/memories"}, "invalid_argument"),
    ({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/todo.txt/x"}, "not_a_directory"),
    ({"command": "rename", "old_path": "/nope.md", "new_path": "/x.md"}, "not_found"),
    ({"command": "rename", "old_path": "/", "new_path": "/x"}, "invalid_path"),
    ({"command": "rename", "old_path": "/memories", "new_path": "/a/../b"}, "invalid_path"),
    ({"command": "rename", "old_path": "/memories", "new_path": "/" + "/".join(["d"] * 16)}, "invalid_path"),
    ({"command": "rename", "path": "/memories", "new_path": "/x"}, "invalid_argument"),
    ({"command": "view", "path": "/memories", "file_text": "x"}, "invalid_argument"),
]  # fmt: skip


def test_every_refusal_is_a_tool_error_that_writes_nothing(scratch, witness):
    memory = thread_memory(scratch, "analyst", "t1")
    memory.create("/memories/notes.md", "one\ntwo\n")
    memory.create("/memories/todo.txt", "call back")
    before = witness()
    for args, code in REFUSALS:
        error = tool_error(call_tool(memory, **args))
        assert error["code"] == code, (args, error)
    assert witness() == before
    assert memory.read("/memories/notes.md") == "one\ntwo\n"
    assert [f.path for f in memory.files()] == ["/memories/notes.md", "/memories/todo.txt"]
    # The witness sees a write even when the bytes stay the same.
    memory.create("/memories/notes.md", "one\ntwo\n")
    assert witness() != before
