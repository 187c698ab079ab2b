"""Structured output: a stage asks its model for an answer in its answer's JSON schema.

A stage's final answer is requested with a *response format* built from the
pydantic model of its answer (:mod:`cortex_agents.stages._outputs`), so a
provider that constrains decoding returns JSON that parses as the schema asks.
Tool turns carry no response format (OpenAI's client refuses one beside
non-strict tools): only the answer turn does, and when a model answers on a
tool turn anyway, the stage asks once more, in the format, unless that answer
already parses.

Which form is sent is a setting, because providers disagree:

* ``json_schema`` — ``{"type": "json_schema", "json_schema": {"name", "schema",
  "strict": true}}``: OpenAI's structured outputs, also vLLM, llama.cpp's own
  ``llama-server``, Ollama. Strict mode refuses length bounds, so this form
  leaves ``maxLength``/``maxItems`` out of the schema.
* ``json_object`` — ``{"type": "json_object", "schema": {...}}``: what
  llama-cpp-python's server honours (its request model accepts only ``text``
  and ``json_object``, and builds a grammar from ``schema``). Bounds stay: they
  keep a small model's answer short enough to end within its token cap. Its
  grammar lets a string hold raw control characters and the chat template's
  stop text (``<|im_end|>``), which ends the reply mid-string; so this form
  states each bounded free-text string as a pattern of at most that many
  characters other than control characters, ``<``, ``"`` and ``\\``.
* ``off`` — no response format; the prompt's instructions alone.

The setting is read, first to last: the stage's config ``structured_output``,
the runtime's service ``structured_output``, ``$CORTEX_STRUCTURED_OUTPUT``;
``auto`` (the default everywhere) means ``json_schema`` for an OpenAI chat
model (``langchain_openai``'s ``ChatOpenAI``, ``AzureChatOpenAI``) and ``off``
for any other chat model, whose way of asking this cortex cannot know.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from cortex_agents.errors import InvalidArgument
from cortex_agents.runtime._wire import STRUCTURED_OUTPUT_FORMS as FORMS
from cortex_agents.stages._outputs import parse_output

__all__ = [
    "FORMS",
    "STRUCTURED_OUTPUT",
    "AnswerFormat",
    "AnsweringModel",
    "Form",
    "structured_form",
]

STRUCTURED_OUTPUT: Final = "structured_output"
"""Key of the setting in a stage's config and in the runtime's services."""
ENV: Final = "CORTEX_STRUCTURED_OUTPUT"
Form = Literal["json_schema", "json_object", "off"]
_BOUNDS: Final = ("maxLength", "minLength", "maxItems", "minItems")
_PLAIN: Final = '^[^<"\\\\\\x00-\\x1f]{0,%d}$'
"""At most N characters, none a control character, ``<``, ``"`` or a backslash."""

A = TypeVar("A", bound=BaseModel)


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with every local ``$ref`` replaced by its definition (no ``$defs`` left)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _plain_text(schema: Any) -> Any:
    """``schema`` with each bounded free-text string as a pattern a grammar keeps plain."""
    if isinstance(schema, dict):
        out = {k: _plain_text(v) for k, v in schema.items()}
        # An enum (a Literal) already fixes the string's text; only free text needs the pattern.
        if out.get("type") == "string" and "maxLength" in out and "enum" not in out:
            out["pattern"] = _PLAIN % out.pop("maxLength")
        return out
    if isinstance(schema, list):
        return [_plain_text(v) for v in schema]
    return schema


def _unbounded(schema: Any) -> Any:
    """``schema`` without length and count bounds (OpenAI's strict mode refuses them)."""
    if isinstance(schema, dict):
        return {k: _unbounded(v) for k, v in schema.items() if k not in _BOUNDS}
    if isinstance(schema, list):
        return [_unbounded(v) for v in schema]
    return schema


@dataclass(frozen=True, slots=True)
class AnswerFormat(Generic[A]):
    """What a stage's answer must be: a name, its pydantic model, the JSON schema asked for.

    Attributes:
        name: Names the schema in the request (letters, digits, ``_``, ``-``).
        model: The answer's pydantic model; parsing validates against it.
        schema: The JSON schema sent (default: the model's, references
            inlined); a stage may narrow it, e.g. to its claim parts.
    """

    name: str
    model: type[A]
    schema: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.schema:
            raw = self.model.model_json_schema()
            # Inlined so `narrowed` reaches a nested field by a plain path of keys
            # (pydantic puts nested models under `$defs` behind `$ref`s).
            object.__setattr__(self, "schema", _inline(raw, raw.get("$defs", {})))

    def narrowed(self, path: Sequence[str], **keywords: Any) -> AnswerFormat[A]:
        """A copy whose sub-schema at ``path`` (keys into the schema) also has ``keywords``."""
        # A deep copy: formats share their schema, and a narrowed one must not leak into it.
        schema = copy.deepcopy(dict(self.schema))
        node: Any = schema
        for key in path:
            node = node[key]
        node.update(keywords)
        return AnswerFormat(self.name, self.model, schema)

    def response_format(self, form: Form) -> dict[str, Any] | None:
        """The request's ``response_format`` in ``form`` (``None`` for ``off``)."""
        if form == "json_schema":
            schema = _unbounded(copy.deepcopy(dict(self.schema)))
            return {
                "type": "json_schema",
                "json_schema": {"name": self.name, "schema": schema, "strict": True},
            }
        if form == "json_object":
            return {"type": "json_object", "schema": _plain_text(copy.deepcopy(dict(self.schema)))}
        return None

    def parse(self, text: str) -> A | None:
        """The first JSON object in ``text`` that validates as the answer, or ``None``."""
        return parse_output(text, self.model)


def _speaks_openai(model: Any) -> bool:
    try:
        # Imported here, not at the top: langchain_openai (and openai) load only
        # when a stage actually decides its form.
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - a core dependency
        return False
    return isinstance(model, BaseChatOpenAI)


def _checked(value: object, field_name: str) -> Form | Literal["auto"]:
    # Returns the member of FORMS, not `value`, so the result is typed as a Form.
    for form in FORMS:
        if value == form:
            return form
    raise InvalidArgument(field_name, f"must be one of {list(FORMS)}", value)


def structured_form(
    config: Mapping[str, Any],
    services: Mapping[str, Any],
    model: Any,
    env: Mapping[str, str] | None = None,
) -> Form:
    """The form a stage asks its answer in: config, then services, then environment, then model.

    Raises:
        InvalidArgument: a setting is not one of :data:`FORMS` (names where it was set).
    """
    env = os.environ if env is None else env
    for value, where in (
        (config.get(STRUCTURED_OUTPUT), f"config.{STRUCTURED_OUTPUT}"),
        (services.get(STRUCTURED_OUTPUT), f"services.{STRUCTURED_OUTPUT}"),
        # An empty variable counts as unset, not as an invalid form.
        (env.get(ENV) or None, f"${ENV}"),
    ):
        if value is not None and (form := _checked(value, where)) != "auto":
            return form
    return "json_schema" if _speaks_openai(model) else "off"


class AnsweringModel:
    """A chat model as the tool loop drives it, its answer turn asking for a response format.

    The loop binds tools for tool turns (passed through untouched) and calls
    :meth:`invoke` for the answer turn, which adds ``response_format``.
    ``answered`` says whether that turn ran (the model may answer on a tool
    turn instead).
    """

    def __init__(self, model: Any, response_format: Mapping[str, Any]) -> None:
        self.model = model
        self.response_format = dict(response_format)
        self.answered = False

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """The model with ``tools`` bound, as the loop asks (no response format on tool turns)."""
        return self.model.bind_tools(tools, **kwargs)

    def invoke(self, messages: Sequence[BaseMessage], config: Any = None, **kwargs: Any) -> Any:
        """The answer turn: the model's reply in the response format.

        OpenAI's client raises when such a reply stops at the token cap (or a
        content filter); the reply it got is returned instead, as text, so the
        stage reads what there is and says its output was inferred — a cut
        answer is a model's formatting, not a failed stage.
        """
        self.answered = True
        try:
            return self.model.invoke(
                list(messages), config, response_format=self.response_format, **kwargs
            )
        except Exception as error:
            cut = _cut_reply(error)
            if cut is None:
                raise
            return cut


def _cut_reply(error: Exception) -> AIMessage | None:
    """The reply inside OpenAI's length or content-filter error, or ``None`` for another error."""
    try:
        from openai import ContentFilterFinishReasonError, LengthFinishReasonError
    except ImportError:  # pragma: no cover - a dependency of langchain-openai
        return None
    if not isinstance(error, LengthFinishReasonError | ContentFilterFinishReasonError):
        return None
    completion = getattr(error, "completion", None)
    choices = getattr(completion, "choices", None) or []
    content = (choices[0].message.content if choices else None) or ""
    reason = "length" if isinstance(error, LengthFinishReasonError) else "content_filter"
    return AIMessage(content=content, response_metadata={"finish_reason": reason})
