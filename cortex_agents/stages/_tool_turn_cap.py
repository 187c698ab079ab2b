"""A smaller output cap on the turns that force a tool.

A turn that forces a tool (``tool_choice`` ``required`` or naming a tool)
is worth one call: the loop runs at most ``max_calls_per_turn`` of them, and
the shipped reviewer runs one. A small local model asked for one call writes
a dozen anyway, until ``max_tokens`` cuts the turn (Qwen2.5-Coder-1.5B on
llama.cpp ignores ``parallel_tool_calls: false``): most of a recording's
generation time goes into calls that are refused unread. The runtime service
:data:`TOOL_TURN_MAX_TOKENS` caps those turns only, in the request field the
model already sends its cap in; every other turn keeps the model's own cap.
Unset (``None``), nothing changes: the requests stay byte for byte the same.

The cap must leave room for one whole call: a call cut inside its arguments
does not parse and runs nothing (``tools/tool_turn_costs.py`` measures what
one call costs in the recorded cassettes; DEVELOPERS.md has the figures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage

from cortex_agents.errors import InvalidArgument

__all__ = ["TOOL_TURN_MAX_TOKENS", "ForcedTurnCap", "check_tool_turn_cap", "is_forced"]

TOOL_TURN_MAX_TOKENS: Final = "tool_turn_max_tokens"
"""Runtime service: output cap of a model turn that forces a tool (``None``: the model's own)."""


def check_tool_turn_cap(value: object, field: str, *, max_tokens: int | None = None) -> int | None:
    """``value`` as a forced-turn cap: ``None``, or an integer from 1 to ``max_tokens``.

    Raises:
        InvalidArgument: ``value`` is neither, naming ``field``.
    """
    if value is None:
        return None
    high = "" if max_tokens is None else f" to max_tokens ({max_tokens})"
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 1
        or (max_tokens is not None and value > max_tokens)
    ):
        raise InvalidArgument(field, f"must be None or an integer from 1{high}", value)
    return value


def is_forced(tool_choice: Any) -> bool:
    """Whether a ``tool_choice`` forces a call: ``required``, a tool's name, or OpenAI's named form."""
    # An allow-list of the non-forcing values: any other form (a name, OpenAI's
    # `{"type": "function", ...}` dict, "any") forces a call.
    return tool_choice not in (None, "auto", "none")


def _cap_kwargs(model: Any, cap: int) -> dict[str, Any]:
    """Request arguments that set the cap where ``model`` sends its own.

    :func:`~cortex_agents.stages._llm.build_chat_model` puts the cap in
    ``extra_body`` for llama.cpp's ``max_tokens`` field, else in ``max_tokens``
    (which ``ChatOpenAI`` sends as ``max_completion_tokens``).
    """
    extra = getattr(model, "extra_body", None)
    if isinstance(extra, Mapping) and "max_tokens" in extra:
        # The whole extra_body is replaced by the bind, so its other keys are copied along.
        return {"extra_body": {**extra, "max_tokens": cap}}
    return {"max_tokens": cap}


class ForcedTurnCap:
    """A chat model as the tool loop drives it, with ``cap`` on the turns that force a tool.

    Tool turns with ``auto`` or ``none`` and the answer turn (:meth:`invoke`)
    pass through untouched.
    """

    def __init__(self, model: Any, cap: int) -> None:
        self.model = model
        self.cap = check_tool_turn_cap(cap, TOOL_TURN_MAX_TOKENS)

    def bind_tools(self, tools: Sequence[Any], /, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """The model with ``tools`` bound; capped when ``tool_choice`` forces a call."""
        if is_forced(tool_choice) and self.cap is not None:
            kwargs = {**kwargs, **_cap_kwargs(self.model, self.cap)}
        return self.model.bind_tools(tools, tool_choice=tool_choice, **kwargs)

    def invoke(self, messages: Sequence[BaseMessage], config: Any = None, **kwargs: Any) -> Any:
        """The answer turn, as the model makes it."""
        return self.model.invoke(list(messages), config, **kwargs)
