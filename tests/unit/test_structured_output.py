"""Structured output: the schema a stage asks for, in each form, and which form is chosen."""

from __future__ import annotations

import json
import re

import pytest
from langchain_openai import ChatOpenAI

from cortex_agents.errors import InvalidArgument
from cortex_agents.stages import AnswerFormat, structured_form
from cortex_agents.stages._outputs import PlanAnswer, ReviewAnswer, parse_output
from tests.support.chat import ScriptedChatModel

REVIEW = AnswerFormat("review", ReviewAnswer)


def keys_anywhere(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_anywhere(v)}
    return set()


def test_the_json_schema_form_is_openais_strict_shape_without_bounds_or_defaults():
    fmt = REVIEW.response_format("json_schema")
    assert fmt["type"] == "json_schema" and set(fmt["json_schema"]) == {"name", "schema", "strict"}
    assert fmt["json_schema"]["strict"] is True and fmt["json_schema"]["name"] == "review"
    schema = fmt["json_schema"]["schema"]
    # strict mode: every property required, no other allowed, no length bounds, no defaults
    assert schema["required"] == ["verdict", "gaps", "notes", "cited"]
    assert schema["additionalProperties"] is False
    assert not keys_anywhere(schema) & {"maxLength", "maxItems", "minItems", "default", "$defs"}
    assert schema["properties"]["verdict"]["enum"] == ["sound", "gap"]


def test_the_json_object_form_carries_the_bounded_schema_llama_cpp_python_reads():
    fmt = REVIEW.response_format("json_object")
    assert set(fmt) == {"type", "schema"} and fmt["type"] == "json_object"
    props = fmt["schema"]["properties"]
    assert props["gaps"]["maxItems"] == 3 and props["verdict"]["enum"] == ["sound", "gap"]
    # a bounded string is a pattern: at most N characters, none a control character, `<`
    # (the chat template's stop text starts with it), a quote or a backslash
    notes = re.compile(props["notes"]["pattern"])
    assert "maxLength" not in props["notes"]
    assert notes.match("a plain note, 'quoted' & fine") and notes.match("x" * 200)
    for bad in ("x" * 201, "ends<|im_end|>", "two\nlines", 'a "quote"', "back\\slash"):
        assert not notes.match(bad), bad
    assert re.compile(props["gaps"]["items"]["pattern"]).match("y" * 160)
    assert REVIEW.response_format("off") is None


def test_nested_models_are_inlined_and_a_stage_can_narrow_the_schema():
    plan = AnswerFormat("plan", PlanAnswer)
    assert "$ref" not in json.dumps(plan.schema) and "$defs" not in plan.schema
    narrowed = plan.narrowed(["properties", "branches"], minItems=2, maxItems=2).narrowed(
        ["properties", "branches", "items", "properties", "claim_ref"], enum=["a", "b"]
    )
    branches = narrowed.response_format("json_object")["schema"]["properties"]["branches"]
    assert (branches["minItems"], branches["maxItems"]) == (2, 2)
    assert branches["items"]["properties"]["claim_ref"]["enum"] == ["a", "b"]
    assert "minItems" not in plan.schema["properties"]["branches"]  # the original is untouched
    strict = narrowed.response_format("json_schema")["json_schema"]["schema"]
    assert strict["properties"]["branches"]["items"]["properties"]["claim_ref"]["enum"] == [
        "a",
        "b",
    ]
    assert "minItems" not in strict["properties"]["branches"]


def test_parsing_is_lenient_where_the_schema_is_strict():
    # a raw newline inside a string (llama.cpp's grammar allows it) still parses
    assert parse_output('{"verdict": "gap", "notes": "two\nlines"}', ReviewAnswer).notes == (
        "two\nlines"
    )
    # a field the prompt-only answer left out takes its default; extra keys are ignored
    assert parse_output('ok: {"verdict": "sound", "why": 1}', ReviewAnswer).gaps == []
    assert parse_output('{"verdict": "maybe"}', ReviewAnswer) is None


def test_the_form_is_read_from_config_then_services_then_environment_then_the_model():
    openai = ChatOpenAI(model="m", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    scripted = ScriptedChatModel(script={})
    assert structured_form({}, {}, openai, env={}) == "json_schema"
    assert structured_form({}, {}, scripted, env={}) == "off"  # cannot know how to ask it
    env = {"CORTEX_STRUCTURED_OUTPUT": "json_object"}
    assert structured_form({}, {}, openai, env=env) == "json_object"
    services = {"structured_output": "off"}
    assert structured_form({}, services, openai, env=env) == "off"
    config = {"structured_output": "json_schema"}
    assert structured_form(config, services, scripted, env=env) == "json_schema"
    assert structured_form({"structured_output": "auto"}, {}, openai, env={}) == "json_schema"


@pytest.mark.parametrize(
    ("config", "services", "env", "field"),
    [
        ({"structured_output": "yes"}, {}, {}, "config.structured_output"),
        ({}, {"structured_output": True}, {}, "services.structured_output"),
        ({}, {}, {"CORTEX_STRUCTURED_OUTPUT": "json"}, "$CORTEX_STRUCTURED_OUTPUT"),
    ],
)
def test_an_unknown_form_is_refused_naming_where_it_was_set(config, services, env, field):
    with pytest.raises(InvalidArgument) as error:
        structured_form(config, services, ScriptedChatModel(script={}), env=env)
    assert error.value.field == field and "json_object" in error.value.rule


class _Raising:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.kwargs: dict = {}

    def invoke(self, messages, config=None, **kwargs):
        self.kwargs = kwargs
        raise self.error


def test_an_answer_cut_at_the_token_cap_comes_back_as_text_not_as_a_failure():
    from openai import LengthFinishReasonError
    from openai.types.chat import ChatCompletion

    from cortex_agents.stages._structured import AnsweringModel

    completion = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "length",
                    "message": {"role": "assistant", "content": '{"verdict": "ga'},
                }
            ],
        }
    )
    model = _Raising(LengthFinishReasonError(completion=completion))
    answering = AnsweringModel(model, REVIEW.response_format("json_object"))
    reply = answering.invoke([])
    assert model.kwargs["response_format"]["type"] == "json_object"  # it asked in the format
    assert reply.content == '{"verdict": "ga' and reply.response_metadata["finish_reason"] == (
        "length"
    )
    assert answering.answered and REVIEW.parse(reply.content) is None  # the stage infers
    with pytest.raises(ValueError, match="boom"):  # any other error is not swallowed
        AnsweringModel(_Raising(ValueError("boom")), {}).invoke([])
