"""Shared by the scratch-memory tests: the rejected-path corpus, a recording store, binding, the tool."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from cortex_agents.scratch import ScratchBackend, ScratchMemory
from cortex_agents.scratch._paths import MAX_DEPTH, MAX_PATH_CHARS, MAX_SEGMENT_CHARS
from cortex_agents.tools import MEMORY_TOOL_NAME, make_memory_tool

# (path, a fragment of the rule it must be rejected with)
TRAVERSAL = [
    ("/../etc/passwd", "`..`"),
    ("/a/../b", "`..`"),
    ("/a/..", "`..`"),
    ("..", "`..`"),
    ("../a", "`..`"),
    ("/a..b", "`..`"),
    ("/...", "`..`"),
    ("/ ../a", "`..`"),
    ("/./a", "segment '.'"),
    ("/a/./b", "segment '.'"),
    ("/.", "segment '.'"),
    ("/a/.", "segment '.'"),
]
ENCODED = [
    ("/%2e%2e/a", "`%`"),
    ("/%2E%2E%2Fetc", "`%`"),
    ("/a%2Fb", "`%`"),
    ("/%00", "`%`"),
    ("/a%20b", "`%`"),
    ("/%252e%252e", "`%`"),
    ("/%c0%ae%c0%ae/x", "`%`"),
    ("/..%2f", "`%`"),
    ("/$HOME", "`$`"),
    ("/a$", "`$`"),
    ("/${IFS}", "`$`"),
]
UNICODE = [
    ("/ａｂｃ", "U+FF41"),  # full-width letters
    ("/notes/１２３", "U+FF11"),  # full-width digits
    ("/٣", "U+0663"),  # Arabic-Indic digit three
    ("/۵", "U+06F5"),  # extended Arabic-Indic digit five
    ("/०", "U+0966"),  # Devanagari digit zero
    ("/\U0001d7d9", "U+1D7D9"),  # mathematical double-struck digit one
    ("/café", "U+00E9"),
    ("/ß", "U+00DF"),
    ("/\u0430dmin", "U+0430"),  # Cyrillic a, a homoglyph of ASCII a
    ("/a\u200bb", "U+200B"),  # zero-width space
    ("/a\u00a0b", "U+00A0"),  # no-break space
    ("/\uff0e\uff0e/x", "U+FF0E"),  # full-width full stops
    ("/a\u2215b", "U+2215"),  # division slash
    ("/a\uff0fb", "U+FF0F"),  # full-width solidus
    ("/a\u2028b", "U+2028"),  # line separator
    ("/a\u0085", "U+0085"),  # next line
    ("/\ud800", "U+D800"),  # lone surrogate
]
CONTROL = [
    ("/a\n", "newline"),
    ("/notes\n", "newline"),
    ("/a\nb", "newline"),
    ("/notes\n/evil", "newline"),
    ("/a\r", "newline"),
    ("/a\r\n", "newline"),
    ("/a\tb", "control character"),
    ("/a\x1b[31m", "control character"),
    ("/a\x7f", "control character"),
    ("/a\x00", "NUL"),
    ("\x00", "NUL"),
    ("/a\x00/../b", "NUL"),
]
PREFIX_TRICKS = [
    ("", "must not be empty"),
    ("notes/todo", "must be absolute"),
    ("~/notes", "must be absolute"),
    (" /a", "must be absolute"),
    ("C:/a", "must be absolute"),
    ("C:\\a", "backslash"),
    ("\\a", "backslash"),
    ("/a\\b", "backslash"),
    ("/a\\..\\b", "backslash"),
    ("file:///a", "must be absolute"),
    ("/a:b", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/.hidden", "must not start or end with `.`"),
    ("/a/b.", "must not start or end with `.`"),
    ("/memories/.notes.md", "must not start or end with `.`"),
    ("/notes.md./x", "must not start or end with `.`"),
    ("/a/ .md", "start or end with a space"),
    ("/*", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a?", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a#b", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a;b", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a|b", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a'b", "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ('/a"b', "must match `[A-Za-z0-9_ -]+(\\.[A-Za-z0-9_ -]+)*`"),
    ("/a/ b", "start or end with a space"),
    ("/a /b", "start or end with a space"),
    ("/a/b ", "start or end with a space"),
    ("/ ", "start or end with a space"),
    ("/  /a", "start or end with a space"),
]
LIMITS = [
    ("/" + "a" * (MAX_SEGMENT_CHARS + 1), f"the limit is {MAX_SEGMENT_CHARS}"),
    ("/a" * (MAX_DEPTH + 1), f"the limit is {MAX_DEPTH}"),
    ("/" + "/".join(["a" * 60] * 9), f"the limit is {MAX_PATH_CHARS} characters"),
    ("/" * (MAX_PATH_CHARS + 1), f"the limit is {MAX_PATH_CHARS} characters"),
]
# The root names no file: every command but `list` refuses it.
ROOT_FOR_FILES = [("/", "root directory"), ("//", "root directory"), ("///", "root directory")]

TOOL = make_memory_tool()

CORPUS = TRAVERSAL + ENCODED + UNICODE + CONTROL + PREFIX_TRICKS + LIMITS + ROOT_FOR_FILES


class RecordingStore(InMemoryStore):
    """A real InMemoryStore that also records every write it receives."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[PutOp] = []

    def batch(self, ops):
        ops = list(ops)
        self.puts.extend(op for op in ops if isinstance(op, PutOp))
        return super().batch(ops)


def everything(store: BaseStore) -> dict:
    """Every item in the store, for "nothing changed" checks."""
    return {(i.namespace, i.key): i.value for i in store.search((), limit=10_000)}


def node_memory(backend: ScratchBackend, node_id: str) -> ScratchMemory:
    """The node's global memory."""
    return backend.bind(node_id, scope="global", thread_id=None)


def thread_memory(backend: ScratchBackend, node_id: str, thread_id: str) -> ScratchMemory:
    """The node's memory for one thread."""
    return backend.bind(node_id, scope="per_thread", thread_id=thread_id)


def call_tool(memory: ScratchMemory | None, **args: Any) -> ToolMessage:
    """Run the `memory` tool on ``memory`` as ToolNode would, with a hand-built runtime."""
    runtime = ToolRuntime(
        state={},
        context={"scratch": memory},
        config={},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=None,
    )
    result = TOOL.invoke(
        {
            "type": "tool_call",
            "name": MEMORY_TOOL_NAME,
            "args": {**args, "runtime": runtime},
            "id": "call-1",
        }
    )
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call-1"
    return result


def tool_error(message: ToolMessage) -> dict:
    """The ``{"code", "message"}`` of a tool error; fails when the call succeeded."""
    assert message.status == "error", message.content
    payload = json.loads(message.content)
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}
    return payload["error"]
