"""A scripted chat model for offline tests of LLM stages (no network, no cassette)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

Reply = AIMessage | Callable[[list[BaseMessage], dict[str, Any]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """Answers from a script keyed by the system prompt's first line; records every request.

    ``script`` maps a prefix of the system prompt to a list of replies, used in
    turn (a reply may be a function of the messages and request kwargs).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: dict[str, list[Any]]
    _requests: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _used: dict[str, int] = PrivateAttr(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return list(self._requests)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        schemas = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
        key = next((k for k in self.script if system.startswith(k)), None)
        with self._lock:
            self._requests.append({"system": system, "messages": list(messages), **kwargs})
            if key is None:
                raise AssertionError(f"no script for a system prompt starting {system[:60]!r}")
            turn = self._used.get(key, 0)
            self._used[key] = turn + 1
        replies = self.script[key]
        reply = replies[min(turn, len(replies) - 1)]
        message = reply(messages, kwargs) if callable(reply) else reply
        return ChatResult(generations=[ChatGeneration(message=message)])


def call(name: str, args: dict[str, Any], call_id: str = "call-1") -> AIMessage:
    """A reply that calls one tool."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def say(text: str) -> AIMessage:
    """A plain reply."""
    return AIMessage(content=text)
