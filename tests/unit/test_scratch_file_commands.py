"""The file-memory commands on ScratchMemory and the line model they share (scratch/_edits.py)."""

import sys
import threading
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from cortex_agents.errors import (
    InvalidArgument,
    InvalidMemoryPath,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
)
from cortex_agents.scratch import ScratchBackend
from cortex_agents.scratch._edits import insert_lines, number_lines, replace_once, split_lines
from cortex_agents.scratch._store import MAX_FILE_CHARS, MAX_FILES
from tests.support.scratch import RecordingStore, call_tool, everything, node_memory, tool_error


@pytest.fixture
def store():
    return RecordingStore()


@pytest.fixture
def memory(store):
    return node_memory(ScratchBackend.for_store(store), "analyst")


def refused(store, action, error_type, code):
    """Run ``action``; it must raise ``error_type`` with ``code`` and write nothing."""
    before, puts = everything(store), len(store.puts)
    with pytest.raises(error_type) as caught:
        action()
    assert caught.value.code == code
    assert len(store.puts) == puts and everything(store) == before
    return caught.value


# -- the line model ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines"),
    [("", []), ("a", ["a"]), ("a\n", ["a"]), ("a\nb", ["a", "b"]), ("a\n\n", ["a", ""])],
)
def test_a_final_newline_ends_the_last_line(text, lines):
    assert split_lines(text) == lines


@pytest.mark.parametrize(
    ("text", "line", "new", "expected"),
    [
        ("a\nb\n", 0, "top", "top\na\nb\n"),
        ("a\nb\n", 1, "mid", "a\nmid\nb\n"),
        ("a\nb\n", 2, "end", "a\nb\nend\n"),
        ("a\nb", 2, "end", "a\nb\nend"),  # no final newline before, none after
        ("a\nb", 2, "end\n", "a\nb\nend\n"),  # unless the new last line brings one
        ("a\nb", 0, "x\n", "x\na\nb"),
        ("", 0, "first", "first"),
        ("a\n", 1, "two\nlines", "a\ntwo\nlines\n"),
    ],
)
def test_insert_puts_the_text_after_the_given_line(text, line, new, expected):
    assert insert_lines(text, line, new, path="/f") == expected


@pytest.mark.parametrize("line", [-1, 3, True, 1.0, "1"])
def test_insert_refuses_a_line_outside_the_file(line):
    with pytest.raises(InvalidArgument) as caught:
        insert_lines("a\nb\n", line, "x", path="/f")
    assert caught.value.field == "insert_line" and "from 0 (the top) to 2" in caught.value.rule


LINE = st.text(alphabet="ab \t", max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=6), st.booleans(), st.data())
def test_insert_then_view_shows_the_new_lines_at_the_given_numbers(lines, final_newline, data):
    # A last line that is empty can only be written with a final newline.
    final_newline = final_newline or (bool(lines) and lines[-1] == "")
    text = "".join(f"{line}\n" for line in lines) if final_newline else "\n".join(lines)
    added = data.draw(st.lists(LINE, min_size=1, max_size=3).filter(lambda a: a[-1] != ""))
    at = data.draw(st.integers(min_value=0, max_value=len(lines)))
    updated = insert_lines(text, at, "\n".join(added), path="/f")
    assert split_lines(updated) == [*lines[:at], *added, *lines[at:]]
    shown = number_lines(updated, path="/f").split("\n")
    for offset, line in enumerate(added):
        assert shown[at + offset] == f"{at + offset + 1:>6}\t{line}"


def test_number_lines_and_view_range():
    text = "one\ntwo\nthree\n"
    assert number_lines(text, path="/f") == "     1\tone\n     2\ttwo\n     3\tthree"
    assert number_lines(text, [2, 2], path="/f") == "     2\ttwo"
    assert number_lines(text, [2, -1], path="/f") == "     2\ttwo\n     3\tthree"
    assert number_lines("", path="/f") == number_lines("", [1, -1], path="/f") == "(empty file)"
    for bad in ([0, 1], [3, 2], [1, 4], [1], [1, 2, 3], ["1", 2], [True, 2], "1-2"):
        with pytest.raises(InvalidArgument) as caught:
            number_lines(text, bad, path="/f")
        assert caught.value.field == "view_range"


@pytest.mark.parametrize(("old", "count"), [("zebra", 0), ("o", 3), ("one\n", 1)])
def test_replace_once_replaces_only_a_unique_match(old, count):
    text = "one\ntwo\nfour\n"
    if count == 1:
        assert replace_once(text, old, "1\n", path="/f") == "1\ntwo\nfour\n"
        return
    with pytest.raises(InvalidArgument) as caught:
        replace_once(text, old, "x", path="/f")
    assert caught.value.field == "old_str"
    assert f"occurs {count} times" in caught.value.rule and "'/f'" in caught.value.rule


# -- ScratchMemory's file commands ------------------------------------------------


def test_create_writes_a_whole_file_and_reports_whether_it_was_new(store, memory):
    assert memory.create("/memories/notes.md", "draft") is True
    assert memory.create("/memories/notes.md", "final") is False
    assert memory.create("/empty.txt", "") is True
    assert memory.read("/memories/notes.md") == "final" and memory.read("/empty.txt") == ""
    assert [(i.key, i.value) for i in store.search(memory.namespace)] == [
        ("/memories/notes.md", {"content": "final"}),
        ("/empty.txt", {"content": ""}),
    ]


def test_create_refusals_write_nothing(store, memory):
    memory.create("/memories/notes.md", "x")
    refused(store, lambda: memory.create("/memories", "x"), MemoryIsADirectory, "is_a_directory")
    refused(
        store,
        lambda: memory.create("/memories/notes.md/a", "x"),
        MemoryNotADirectory,
        "not_a_directory",
    )
    refused(store, lambda: memory.create("/", "x"), InvalidMemoryPath, "invalid_path")
    refused(store, lambda: memory.create("/f", "\x00"), InvalidArgument, "invalid_argument")
    refused(
        store,
        lambda: memory.create("/f", "y" * (MAX_FILE_CHARS + 1)),
        InvalidArgument,
        "invalid_argument",
    )


def test_create_counts_against_the_file_limit(store, memory):
    for index in range(MAX_FILES):
        memory.create(f"/f{index}.md", "x")
    error = refused(
        store, lambda: memory.create("/one-more.md", "x"), InvalidArgument, "invalid_argument"
    )
    assert f"the limit is {MAX_FILES}" in error.rule
    assert memory.create("/f0.md", "overwrite is fine") is False


def test_str_replace_and_insert_never_grow_a_file_past_the_limit(store, memory):
    memory.create("/f", "ab\n" + "x" * (MAX_FILE_CHARS - 4))
    error = refused(
        store, lambda: memory.str_replace("/f", "ab", "abcd"), InvalidArgument, "invalid_argument"
    )
    assert error.field == "new_str"
    error = refused(
        store, lambda: memory.insert("/f", 0, "long line"), InvalidArgument, "invalid_argument"
    )
    assert error.field == "insert_text"


def test_rename_moves_a_directory_in_one_batch(store, memory):
    memory.create("/memories/a.md", "A")
    memory.create("/memories/sub/b.md", "B")
    memory.create("/memoriesX.md", "lookalike")
    batches: list[int] = []
    original = store.batch

    def counting(ops):
        ops = list(ops)
        writes = sum(isinstance(op, PutOp) for op in ops)
        if writes:
            batches.append(writes)
        return original(ops)

    store.batch = counting
    assert memory.rename("/memories", "/archive") == 2
    assert batches == [4]  # two puts and two deletes, one write
    assert sorted(f.path for f in memory.files()) == [
        "/archive/a.md",
        "/archive/sub/b.md",
        "/memoriesX.md",
    ]
    assert memory.read("/archive/sub/b.md") == "B"


def test_rename_refusals_write_nothing(store, memory):
    memory.create("/a/x.md", "x")
    memory.create("/b.md", "b")
    for old, new, error_type, code in [
        ("/a", "/b.md", InvalidArgument, "invalid_argument"),  # target is a file
        ("/b.md", "/a", InvalidArgument, "invalid_argument"),  # target is a directory
        ("/a", "/a/inner", InvalidArgument, "invalid_argument"),  # into itself
        ("/a/x.md", "/a/x.md", InvalidArgument, "invalid_argument"),
        ("/a/x.md", "/b.md/x.md", MemoryNotADirectory, "not_a_directory"),
        ("/zz", "/yy", MemoryNotFound, "not_found"),
        ("/b.md/zz", "/yy", MemoryNotADirectory, "not_a_directory"),
        ("/", "/c", InvalidMemoryPath, "invalid_path"),
        ("/a", "/", InvalidMemoryPath, "invalid_path"),
    ]:
        refused(store, lambda old=old, new=new: memory.rename(old, new), error_type, code)


def test_every_write_command_goes_through_the_guard(store):
    held: list[tuple[str, ...]] = []

    class RecordingGuard:
        @contextmanager
        def hold(self, namespace):
            held.append(namespace)
            yield store

    memory = node_memory(ScratchBackend(store, RecordingGuard()), "n")
    memory.create("/f.md", "a\n")
    memory.str_replace("/f.md", "a", "b")
    memory.insert("/f.md", 1, "c")
    memory.rename("/f.md", "/g.md")
    assert held == [memory.namespace] * 4


@pytest.fixture
def eager_switching():
    """Switch threads every microsecond, so unguarded get-then-put pairs interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_threads_inserting_into_one_file_lose_nothing(memory, eager_switching):
    memory.create("/log.md", "")
    workers, each = 4, 25

    def work(worker: int) -> None:
        for index in range(each):
            memory.insert("/log.md", 0, f"{worker}-{index}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(split_lines(memory.read("/log.md"))) == sorted(
        f"{w}-{i}" for w in range(workers) for i in range(each)
    )


def test_the_tool_reports_each_file_command(memory):
    memory.create("/memories/notes.md", "one\ntwo\n")
    assert call_tool(memory, command="view", path="/").content == (
        "/\n  memories/\n    notes.md (8 chars)"
    )
    error = tool_error(call_tool(memory, command="view", path="/nope"))
    assert error["code"] == "not_found" and "`view` the path `/`" in error["message"]
    error = tool_error(call_tool(memory, command="rename", old_path="/memories"))
    assert error == {
        "code": "invalid_argument",
        "message": "`new_path` is required by command 'rename' (got None)",
    }
