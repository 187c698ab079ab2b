"""How every cortex tool answers a model: results, errors the model can fix, bounded records.

A model's mistake (a bad argument, an unknown preset, a tool this stage does
not have) never crashes a run: it comes back as a ``ToolMessage`` with
``status="error"`` whose content is JSON::

    {"error": {"code": "invalid_argument", "message": "`limit` must be ... (got 0)"}}

naming the field and the rule, so the model can correct the call.

What a model wrote is journaled (a ``tool_call_made`` event), and the journal
must be storable by every backend and by LangGraph's own serializer
(``JsonPlusSerializer``, msgpack underneath: integers in 64 bits, nesting under
255 levels, valid Unicode). :func:`json_safe` is the one boundary every
journaled value crosses: it walks the value iteratively (no recursion limit
to hit) and bounds nesting depth, item count, string length and integer
range, and :func:`bounded_json` caps the encoded size in bytes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from langchain_core.messages import ToolMessage
from pydantic import ValidationError

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_JOURNAL_BYTES",
    "MAX_STRING_CHARS",
    "bounded_json",
    "deeper_than",
    "error_content",
    "json_safe",
    "safe_repr",
    "tool_error",
    "validation_message",
]

MAX_DEPTH: Final = 32
"""Containers nested deeper than this are journaled as a marker string."""
MAX_ITEMS: Final = 2_000
"""Values (containers and leaves) kept of one journaled value; the rest is marked as cut."""
MAX_STRING_CHARS: Final = 4_000
"""Characters kept of one string (or mapping key); the rest is marked as cut."""
MAX_JOURNAL_BYTES: Final = 16_384
"""Hard cap on the UTF-8 JSON size of one journaled value (a call's arguments, its result)."""
_INT64: Final = 2**63
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def error_content(code: str, message: str) -> str:
    """The JSON content of a tool error."""
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)


def tool_error(code: str, message: str, *, tool_call_id: str, name: str) -> ToolMessage:
    """A tool error the model reads; nothing ran or changed."""
    return ToolMessage(
        content=error_content(code, message), tool_call_id=tool_call_id, name=name, status="error"
    )


def safe_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for any value a model can send.

    Unlike ``repr``, it never raises: an integer too long for ``str`` (over
    4,300 digits) is described by its size, and a container is shown from
    its bounded JSON form.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        shown = f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    elif isinstance(value, Mapping | list | tuple):
        shown = json.dumps(json_safe(value, max_items=64, max_chars=limit), ensure_ascii=False)
    else:
        try:
            shown = repr(value)
        except Exception:  # a hostile __repr__ or a limit of the interpreter
            shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def validation_message(exc: ValidationError) -> str:
    """Pydantic errors as ``field: rule (got value)`` lines, for a model to read."""
    lines = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        lines.append(f"`{field}`: {error['msg']} (got {safe_repr(error.get('input'))})")
    return "; ".join(lines)


def _string(text: str, max_chars: int) -> str:
    if len(text) > max_chars:
        text = f"{text[:max_chars]}…[+{len(text) - max_chars} characters]"
    if "\x00" in text:  # PostgreSQL text and JSONB cannot hold NUL
        text = text.replace("\x00", "\ufffd")
    # Lone surrogates are not UTF-8: no backend stores them, and msgpack would alter them.
    return _SURROGATE.sub("\ufffd", text)


def _leaf(value: Any, max_chars: int) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -_INT64 <= value < _INT64:
            return value
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _string(value, max_chars)
    return _string(safe_repr(value, max_chars), max_chars)


def json_safe(
    value: Any,
    *,
    max_depth: int = MAX_DEPTH,
    max_items: int = MAX_ITEMS,
    max_chars: int = MAX_STRING_CHARS,
) -> Any:
    """``value`` as plain, bounded JSON data, whatever a model sent.

    A model's arguments are parsed by Python's ``json``, which accepts
    ``NaN``, ``Infinity``, integers of any size, nesting up to the
    interpreter's limit and lone surrogates. Every backend and LangGraph's
    serializer must be able to store what is journaled, so:

    * non-finite floats and any value JSON cannot hold become their ``repr``;
    * integers outside the signed 64-bit range become a description;
    * strings (and keys) keep ``max_chars`` characters, NUL and lone
      surrogates become U+FFFD;
    * containers deeper than ``max_depth`` become a marker string, and after
      ``max_items`` values the rest of each container is replaced by a marker.

    The walk is iterative: no input depth can exhaust the stack.
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    budget = max_items
    while stack:
        item, parent, slot, depth = stack.pop()
        if not isinstance(item, Mapping | list | tuple):
            parent[slot] = _leaf(item, max_chars)
            continue
        if depth >= max_depth:
            parent[slot] = f"<nested deeper than {max_depth} levels: not recorded>"
            continue
        entries = list(item.items()) if isinstance(item, Mapping) else list(enumerate(item))
        keep = min(len(entries), max(budget, 0))
        budget -= keep
        if isinstance(item, Mapping):
            made: dict[str, Any] = {}
            for key, child in entries[:keep]:
                name = key if isinstance(key, str) else safe_repr(key, max_chars)
                name = _string(name, max_chars)
                made[name] = None
                stack.append((child, made, name, depth + 1))
            if keep < len(entries):
                made["…"] = f"+{len(entries) - keep} more entries not recorded"
            parent[slot] = made
        else:
            items: list[Any] = [None] * keep
            for index, child in entries[:keep]:
                stack.append((child, items, index, depth + 1))
            if keep < len(entries):
                items.append(f"…+{len(entries) - keep} more items not recorded")
            parent[slot] = items
    return root[0]


def deeper_than(value: Any, depth: int = MAX_DEPTH) -> bool:
    """Whether containers in ``value`` nest more than ``depth`` levels (checked iteratively)."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if level >= depth:
                return True
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, level + 1) for child in children)
    return False


def bounded_json(value: Any, max_bytes: int = MAX_JOURNAL_BYTES) -> Any:
    """:func:`json_safe` of ``value``, replaced by a cut preview if its JSON exceeds ``max_bytes``.

    The preview is ``{"truncated": true, "bytes": <full size>, "preview": <the
    JSON text's first characters>}`` and itself fits in ``max_bytes``.
    """
    safe = json_safe(value)
    text = json.dumps(safe, ensure_ascii=False, allow_nan=False)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return safe
    room = max(max_bytes - 200, 0) // 4  # 4 bytes per character at most in UTF-8
    return {"truncated": True, "bytes": size, "preview": text[:room]}
