"""The ``memory`` tool: one LangChain tool over a node's scratch memory.

The model writes only :class:`MemoryArgs` (``command``, and the arguments the
command takes). Which memory it works on — store, node, scope, thread — comes
from LangGraph's runtime injection: the tool reads a bound
:class:`~cortex_agents.scratch.ScratchMemory` from ``runtime.context.scratch``
(an attribute, or a key when the context is a mapping). ``ToolNode`` strips
any ``runtime`` the model tries to send and injects the real one; a caller
running the tool itself puts a hand-built ``ToolRuntime`` under
``args["runtime"]``.

``runtime.context`` belongs to one graph invocation and every node of it
sees the same one. So each stage must run its model and tool loop with its
own context (its own ``ToolRuntime``), whose ``scratch`` is that stage's
memory from :meth:`~cortex_agents.scratch.ScratchBackend.bind`; a single
``ToolNode`` shared by several stages of one invocation would give them all
the same memory.

Two command sets share the tool (:data:`ARGUMENTS` lists what each takes):

- the seed's: ``read``, ``list``, ``append``, ``update`` (every occurrence;
  returns the count, a number) and ``delete``;
- the file-memory commands models are trained on: ``view`` (a file's
  numbered lines, optionally a ``view_range``, or a directory's tree),
  ``create`` (``file_text`` as the whole file), ``str_replace`` (the one
  occurrence of ``old_str``: 0 or several is an error naming the count),
  ``insert`` (``insert_text`` after line ``insert_line``), ``delete`` and
  ``rename`` (``old_path`` to ``new_path``, within the bound scope).

Paths such as ``/memories/notes.md`` are ordinary paths (see
:mod:`~cortex_agents.scratch._paths`): ``/memories`` is a directory like any
other, and a file name may carry an extension.

Every mistake the model can make comes back as a ``ToolMessage`` with
``status="error"`` and JSON content
``{"error": {"code": "<code>", "message": "<what is wrong and what is allowed>"}}``
and changes nothing; the tool never raises for it. Codes: those of
:mod:`cortex_agents.errors` (``invalid_path``, ``not_found``,
``is_a_directory``, ``not_a_directory``, ``invalid_argument``) and
``memory_unavailable`` when no scratch memory is bound to the run. Storage
failures (a database that is down) do raise: they are not the model's to fix.
"""

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from langchain_core.tools import StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cortex_agents.errors import InvalidArgument, MemoryIsADirectory, ScratchMemoryError
from cortex_agents.scratch._edits import number_lines, split_lines
from cortex_agents.scratch._paths import MAX_DEPTH, MAX_SEGMENT_CHARS, parse_path
from cortex_agents.scratch._store import MAX_FILE_CHARS, ScratchMemory, shorten
from cortex_agents.scratch._tree import render_tree

__all__ = [
    "ARGUMENTS",
    "COMMANDS",
    "FILE_COMMANDS",
    "MEMORY_TOOL_NAME",
    "SEED_COMMANDS",
    "UNAVAILABLE_CODE",
    "Command",
    "MemoryArgs",
    "make_memory_tool",
    "tool_error_content",
]

MEMORY_TOOL_NAME: Final = "memory"
UNAVAILABLE_CODE: Final = "memory_unavailable"
MAX_PATH_ARG_CHARS: Final = 2048
"""Bound on a path argument's size; the path rules then apply their own, smaller limit."""

Command = Literal[
    "read",
    "list",
    "append",
    "update",
    "delete",
    "view",
    "create",
    "str_replace",
    "insert",
    "rename",
]
COMMANDS: Final[tuple[str, ...]] = get_args(Command)
SEED_COMMANDS: Final = ("read", "list", "append", "update", "delete")
"""The seed's command set (seed 003)."""
FILE_COMMANDS: Final = ("view", "create", "str_replace", "insert", "delete", "rename")
"""The file-memory command set models are trained on (``delete`` is in both)."""

ARGUMENTS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "read": (("path",), ()),
    "list": (("path",), ()),
    "append": (("path", "content"), ()),
    "update": (("path", "old", "new"), ()),
    "delete": (("path",), ()),
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str", "new_str"), ()),
    "insert": (("path", "insert_line", "insert_text"), ()),
    "rename": (("old_path", "new_path"), ()),
}
"""Per command: the arguments it requires and those it also accepts; any other must be left out."""

DESCRIPTION: Final = f"""\
Your scratch memory: a small file system of this stage that keeps what you save between \
turns. Depending on the stage's configuration, it belongs to this run only or is shared by \
every run of this stage. Each command takes the arguments in its parentheses; leave the \
others out.
- view(path, view_range?): a file's lines, numbered from 1 (`view_range` [first, last] shows \
part of it; last -1 means to the end), or a directory's tree (`/` for everything).
- create(path, file_text): write `file_text` as the whole file, replacing it if it exists.
- str_replace(path, old_str, new_str): replace the one occurrence of `old_str`; it is an \
error if `old_str` occurs 0 or several times.
- insert(path, insert_line, insert_text): insert `insert_text` after line `insert_line` \
(0: at the top).
- delete(path): remove the file, or the directory and everything in it.
- rename(old_path, new_path): move a file or directory; `new_path` must not exist.
- read(path): a file's text. list(path): a directory's tree.
- append(path, content): add `content` on a new line; creates the file if needed.
- update(path, old, new): replace every occurrence of `old`; returns how many were replaced.
Paths are absolute, like `/memories/notes.md`. Segments use ASCII letters, digits, `_`, `-`, \
spaces (not at either end) and dots between them, at most {MAX_SEGMENT_CHARS} characters \
each, at most {MAX_DEPTH} levels. A file holds at most {MAX_FILE_CHARS} characters. Errors \
come back as JSON: {{"error": {{"code": ..., "message": ...}}}}."""


def _text(command: str, meaning: str) -> Any:
    return Field(default=None, max_length=MAX_FILE_CHARS, description=f"{command} only: {meaning}")


class MemoryArgs(BaseModel):
    """The arguments the model writes for the ``memory`` tool (see :data:`ARGUMENTS`)."""

    model_config = ConfigDict(extra="forbid")

    command: Command = Field(description="What to do; see the tool description.")
    path: str | None = Field(
        default=None,
        max_length=MAX_PATH_ARG_CHARS,
        description="Absolute path of the file or directory, like `/memories/notes.md`; "
        "`/` for everything. Every command but rename.",
    )
    view_range: list[int] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="view only, optional: [first, last] line (1-based; last -1 for the end).",
    )
    file_text: str | None = _text("create", "the whole content of the file.")
    old_str: str | None = _text("str_replace", "the text to replace; must occur exactly once.")
    new_str: str | None = _text("str_replace", "the replacement text.")
    insert_line: int | None = Field(
        default=None, ge=0, description="insert only: the line to insert after (0: the top)."
    )
    insert_text: str | None = _text("insert", "the text to insert.")
    old_path: str | None = Field(
        default=None, max_length=MAX_PATH_ARG_CHARS, description="rename only: what to move."
    )
    new_path: str | None = Field(
        default=None, max_length=MAX_PATH_ARG_CHARS, description="rename only: where to."
    )
    content: str | None = _text("append", "the text to add.")
    old: str | None = _text("update", "the text to replace (every occurrence).")
    new: str | None = _text("update", "the replacement text.")


_ARGUMENT_NAMES: Final = tuple(name for name in MemoryArgs.model_fields if name != "command")


class _ToolInput(MemoryArgs):
    """``MemoryArgs`` plus the injected runtime (hidden from the model)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    runtime: ToolRuntime[Any, Any]


def tool_error_content(code: str, message: str) -> str:
    """The JSON content of a ``memory`` tool error.

    Args:
        code: Stable machine-readable reason, e.g. ``"not_found"``.
        message: What is wrong and what is allowed.

    Returns:
        ``{"error": {"code": code, "message": message}}`` as JSON text.
    """
    return json.dumps({"error": {"code": code, "message": message}})


# What to try next, appended to the message of each refusal the model can recover from.
_HINTS: Final[dict[str, str]] = {
    "not_found": "; `view` the path `/` to see which files exist",
    "is_a_directory": "; that command takes a file: `view` the directory to see its files",
    "not_a_directory": "; a file cannot hold other entries, choose another path",
}


def _unavailable(detail: str) -> ToolException:
    return ToolException(
        tool_error_content(
            UNAVAILABLE_CODE,
            f"no scratch memory is bound to this run ({detail}); the `memory` tool "
            "cannot be used here",
        )
    )


def _bound_memory(runtime: Any) -> ScratchMemory:
    context = getattr(runtime, "context", None)
    if context is None:
        raise _unavailable("the runtime has no context")
    if isinstance(context, Mapping):
        memory = context.get("scratch")
    else:
        memory = getattr(context, "scratch", None)
    if not isinstance(memory, ScratchMemory):
        raise _unavailable("`runtime.context.scratch` is not a ScratchMemory")
    return memory


def _check_arguments(command: str, given: Mapping[str, Any]) -> None:
    required, optional = ARGUMENTS[command]
    for name in _ARGUMENT_NAMES:
        value = given.get(name)
        if name in required and value is None:
            raise InvalidArgument(name, f"is required by command {command!r}")
        if name not in required and name not in optional and value is not None:
            takes = ", ".join(f"`{n}`" for n in (*required, *optional))
            shown = shorten(value) if isinstance(value, str) else value
            raise InvalidArgument(
                name, f"is not used by command {command!r} (it takes {takes}); leave it out", shown
            )


def _view(memory: ScratchMemory, path: str, view_range: list[int] | None) -> str:
    where = parse_path(path, allow_root=True)
    if not where.is_root:
        try:
            return number_lines(memory.read(path), view_range, path=where.text)
        except MemoryIsADirectory:
            pass
    if view_range is not None:
        raise InvalidArgument(
            "view_range",
            f"applies to files only, and {where.text!r} is a directory; leave it out",
            view_range,
        )
    return render_tree(memory.list(path))


def _lines(count: int) -> str:
    return f"{count} line{'s' * (count != 1)}"


def _dispatch(memory: ScratchMemory, command: str, a: Mapping[str, Any]) -> str | int:
    """Run a checked command; every argument it requires is present."""
    if command == "read":
        return memory.read(a["path"])
    if command == "list":
        return render_tree(memory.list(a["path"]))
    if command == "view":
        return _view(memory, a["path"], a["view_range"])
    if command == "update":
        return memory.update(a["path"], a["old"], a["new"])
    if command == "rename":
        moved = memory.rename(a["old_path"], a["new_path"])
        old, new = parse_path(a["old_path"]).text, parse_path(a["new_path"]).text
        return f"renamed {old!r} to {new!r} ({moved} file{'s' * (moved != 1)})"
    shown = parse_path(a["path"]).text
    if command == "append":
        size = memory.append(a["path"], a["content"])
        added = len(a["content"])
        return f"appended {added} characters to {shown!r}; it now holds {size} characters"
    if command == "create":
        created = memory.create(a["path"], a["file_text"])
        done = "created" if created else "overwrote"
        return f"{done} {shown!r}; it holds {len(a['file_text'])} characters"
    if command == "str_replace":
        size = memory.str_replace(a["path"], a["old_str"], a["new_str"])
        return f"replaced 1 occurrence in {shown!r}; it now holds {size} characters"
    if command == "insert":
        size = memory.insert(a["path"], a["insert_line"], a["insert_text"])
        added = len(split_lines(a["insert_text"])) or 1
        return (
            f"inserted {_lines(added)} after line {a['insert_line']} of {shown!r}; "
            f"it now holds {size} characters"
        )
    removed = memory.delete(a["path"])
    return f"deleted {shown!r} ({removed} file{'s' * (removed != 1)})"


def _run(command: str, runtime: ToolRuntime[Any, Any], **arguments: Any) -> str | int:
    memory = _bound_memory(runtime)
    given = {name: arguments.get(name) for name in _ARGUMENT_NAMES}
    try:
        _check_arguments(command, given)
        return _dispatch(memory, command, given)
    except (ScratchMemoryError, InvalidArgument) as exc:
        message = str(exc) + _HINTS.get(exc.code, "")
        raise ToolException(tool_error_content(exc.code, message)) from exc


def _validation_content(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    # `runtime` is injected by LangChain's tool node, never written by the model: an error
    # there means the tool ran outside one, which no argument the model changes can fix.
    if any(error["loc"][:1] == ("runtime",) for error in errors):
        return str(_unavailable("no `runtime` was injected").args[0])
    parts = []
    for error in errors:
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        got = (
            "" if error["type"] == "missing" else f" (got {shorten(repr(error.get('input')), 60)})"
        )
        parts.append(f"`{field}`: {error['msg']}{got}")
    return tool_error_content(InvalidArgument.code, "; ".join(parts))


def make_memory_tool() -> StructuredTool:
    """Build the ``memory`` tool.

    The tool takes :class:`MemoryArgs` from the model and a
    ``ToolRuntime[Any, Any]`` by injection, whose ``context.scratch`` must be
    the :class:`~cortex_agents.scratch.ScratchMemory` to work on.

    Returns:
        A fresh tool named ``"memory"``; errors the model can fix come back
        as ``status="error"`` tool messages (see the module docstring).
    """
    return StructuredTool.from_function(
        func=_run,
        name=MEMORY_TOOL_NAME,
        description=DESCRIPTION,
        args_schema=_ToolInput,
        handle_tool_error=True,
        handle_validation_error=_validation_content,
    )
