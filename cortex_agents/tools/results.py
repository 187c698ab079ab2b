"""How every cortex tool answers a model: results, and errors the model can fix.

A model's mistake (a bad argument, an unknown preset, a tool this stage does
not have) never crashes a run: it comes back as a ``ToolMessage`` with
``status="error"`` whose content is JSON::

    {"error": {"code": "invalid_argument", "message": "`limit` must be ... (got 0)"}}

naming the field and the rule, so the model can correct the call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from pydantic import ValidationError

__all__ = ["error_content", "json_safe", "tool_error", "validation_message"]


def error_content(code: str, message: str) -> str:
    """The JSON content of a tool error."""
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)


def tool_error(code: str, message: str, *, tool_call_id: str, name: str) -> ToolMessage:
    """A tool error the model reads; nothing ran or changed."""
    return ToolMessage(
        content=error_content(code, message), tool_call_id=tool_call_id, name=name, status="error"
    )


def validation_message(exc: ValidationError) -> str:
    """Pydantic errors as ``field: rule (got value)`` lines, for a model to read."""
    lines = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        value: Any = error.get("input")
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        lines.append(f"`{field}`: {error['msg']} (got {shown})")
    return "; ".join(lines)


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data, whatever a model sent.

    A model's arguments are parsed by Python's ``json``, which accepts
    ``NaN`` and ``Infinity``; those, and any value JSON cannot hold, become
    their ``repr`` string, so what is journaled can always be stored.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return repr(value)
