"""The ``memory`` tool: one LangChain tool over a node's scratch memory.

The model writes only :class:`MemoryArgs` (``command``, ``path`` and the
texts the command needs). Which memory it works on — store, node, scope,
thread — comes from LangGraph's runtime injection: the tool reads a bound
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

Every mistake the model can make comes back as a ``ToolMessage`` with
``status="error"`` and JSON content
``{"error": {"code": "<code>", "message": "<what is wrong and what is allowed>"}}``
and changes nothing; the tool never raises for it. Codes: those of
:mod:`cortex_agents.errors` (``invalid_path``, ``not_found``,
``is_a_directory``, ``not_a_directory``, ``invalid_argument``) and
``memory_unavailable`` when no scratch memory is bound to the run. Storage
failures (a database that is down) do raise: they are not the model's to fix.

Results: ``read`` gives the file's text, ``list`` the rendered tree,
``update`` the replacement count (a number), ``append`` and ``delete`` a short
confirmation.
"""

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from langchain_core.tools import StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cortex_agents.errors import InvalidArgument, ScratchMemoryError
from cortex_agents.scratch.paths import MAX_DEPTH, MAX_SEGMENT_CHARS, parse_path
from cortex_agents.scratch.store import MAX_FILE_CHARS, ScratchMemory, shorten
from cortex_agents.scratch.tree import render_tree

__all__ = [
    "COMMANDS",
    "MEMORY_TOOL_NAME",
    "UNAVAILABLE_CODE",
    "Command",
    "MemoryArgs",
    "make_memory_tool",
    "tool_error_content",
]

MEMORY_TOOL_NAME: Final = "memory"
UNAVAILABLE_CODE: Final = "memory_unavailable"
MAX_PATH_ARG_CHARS: Final = 2048
"""Bound on the ``path`` argument's size; the path rules then apply their own, smaller limit."""

Command = Literal["read", "list", "append", "update", "delete"]
COMMANDS: Final[tuple[str, ...]] = get_args(Command)

# The text arguments each command takes; the others must be left out (or null).
_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "read": (),
    "list": (),
    "append": ("content",),
    "update": ("old", "new"),
    "delete": (),
}

DESCRIPTION: Final = f"""\
Your scratch memory: a small file system of this stage that keeps what you save between \
turns. Depending on the stage's configuration, it belongs to this run only or is shared by \
every run of this stage. Commands:
- read: return the text of the file at `path`.
- list: show the directory tree at `path` (use `/` for everything).
- append: add `content` to the file at `path` on a new line; creates the file if needed.
- update: replace every occurrence of `old` with `new` in the file at `path`; returns how \
many were replaced.
- delete: remove the file at `path`, or the directory and everything in it.
Paths are absolute, like `/notes/todo`. Segments use only ASCII letters, digits, `_`, `-` \
and spaces (not at either end), at most {MAX_SEGMENT_CHARS} characters each, at most \
{MAX_DEPTH} levels. A file holds at most {MAX_FILE_CHARS} characters. Errors come back as \
JSON: {{"error": {{"code": ..., "message": ...}}}}."""


class MemoryArgs(BaseModel):
    """The arguments the model writes for the ``memory`` tool."""

    model_config = ConfigDict(extra="forbid")

    command: Command = Field(description="What to do: read, list, append, update or delete.")
    path: str = Field(
        max_length=MAX_PATH_ARG_CHARS,
        description="Absolute path of the file or directory, like `/notes/todo`; `/` for list.",
    )
    content: str | None = Field(
        default=None, max_length=MAX_FILE_CHARS, description="append only: the text to add."
    )
    old: str | None = Field(
        default=None, max_length=MAX_FILE_CHARS, description="update only: the text to replace."
    )
    new: str | None = Field(
        default=None, max_length=MAX_FILE_CHARS, description="update only: the replacement text."
    )


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
    "not_found": "; `list` the path `/` to see which files exist",
    "is_a_directory": "; `read`, `append` and `update` take a file: `list` it to see its files",
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


def _check_arguments(command: str, texts: dict[str, str | None]) -> None:
    needed = _NEEDS[command]
    for name, value in texts.items():
        if name in needed and value is None:
            raise InvalidArgument(name, f"is required by command {command!r}")
        if name not in needed and value is not None:
            used = ", ".join(f"`{n}`" for n in needed) or "only `path`"
            shown = shorten(value) if isinstance(value, str) else value
            raise InvalidArgument(
                name, f"is not used by command {command!r} (it takes {used}); leave it out", shown
            )


def _run(
    command: str,
    path: str,
    runtime: ToolRuntime[Any, Any],
    content: str | None = None,
    old: str | None = None,
    new: str | None = None,
) -> str | int:
    memory = _bound_memory(runtime)
    try:
        _check_arguments(command, {"content": content, "old": old, "new": new})
        if command == "read":
            return memory.read(path)
        if command == "list":
            return render_tree(memory.list(path))
        if command == "update":
            return memory.update(path, old, new)  # type: ignore[arg-type]  # checked above
        shown = parse_path(path).text
        if command == "append":
            size = memory.append(path, content)  # type: ignore[arg-type]  # checked above
            added = len(content or "")
            return f"appended {added} characters to {shown!r}; it now holds {size} characters"
        removed = memory.delete(path)
        return f"deleted {shown!r} ({removed} file{'s' * (removed != 1)})"
    except (ScratchMemoryError, InvalidArgument) as exc:
        message = str(exc) + _HINTS.get(exc.code, "")
        raise ToolException(tool_error_content(exc.code, message)) from exc


def _validation_content(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
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
