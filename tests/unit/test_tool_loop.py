"""The bounded tool loop: malformed calls and over-long turns get errors the model reads,
nothing runs for them, and the loop goes on."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from cortex_agents.errors import InvalidArgument
from cortex_agents.tools import ToolPolicy, run_tool_loop
from tests.support.chat import ScriptedChatModel, say

RAN: list[str] = []


@tool
def echo(text: str) -> str:
    """Echo the text."""
    RAN.append(text)
    return text


def loop(replies, **policy):
    RAN.clear()
    chat = ScriptedChatModel(script={"sys": replies})
    result = run_tool_loop(
        chat,
        [SystemMessage("sys"), HumanMessage("go")],
        tools=[echo],
        context=None,
        policy=ToolPolicy(**policy),
    )
    return result, chat


def test_unparsable_arguments_get_an_error_and_the_model_another_turn():
    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "echo",
                "args": '{"text": ',
                "id": "bad-1",
                "error": "bad JSON",
                "type": "invalid_tool_call",
            }
        ],
    )
    result, chat = loop([broken, say("done")])
    assert result.message.content == "done" and RAN == []
    (reply,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert reply.tool_call_id == "bad-1" and reply.status == "error"
    assert json.loads(reply.content)["error"]["code"] == "invalid_argument"
    assert len(chat.requests) == 2  # the model read the error and answered
    (call,) = result.calls
    assert (call.name, call.status, call.arguments) == ("echo", "error", {"raw": '{"text": '})


@tool
def other(text: str) -> str:
    """Another tool."""
    return text


def offered(request) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in request["tools"]]


@pytest.mark.parametrize(
    ("force", "tools", "choice"),
    [
        ("named", ["echo", "other"], {"type": "function", "function": {"name": "echo"}}),
        ("required", ["echo"], "required"),  # llama-server ignores a named choice
    ],
)
def test_a_tool_forced_by_name_is_asked_for_in_the_policys_form(force, tools, choice):
    chat = ScriptedChatModel(script={"sys": [say("done")]})
    run_tool_loop(
        chat,
        [SystemMessage("sys"), HumanMessage("go")],
        tools=[echo, other],
        context=None,
        policy=ToolPolicy(first="echo", force=force),
    )
    (request,) = chat.requests
    assert offered(request) == tools and request["tool_choice"] == choice


def test_unparsable_arguments_go_back_wrapped_when_the_policy_says_so():
    broken = AIMessage(
        content=" ",
        invalid_tool_calls=[
            {
                "name": "echo",
                "args": '{"text": ',
                "id": "b",
                "error": "x",
                "type": "invalid_tool_call",
            }
        ],
    )
    result, chat = loop([broken, say("done")], resend_invalid="wrapped")
    sent = chat.requests[1]["messages"]
    (resent,) = [m for m in sent if isinstance(m, AIMessage)]
    assert json.loads(resent.invalid_tool_calls[0]["args"]) == {"unparsed_arguments": '{"text": '}
    (call,) = result.calls  # the journal keeps what the model wrote
    assert call.arguments == {"raw": '{"text": '}
    _, verbatim = loop([broken, say("done")])
    (kept,) = [m for m in verbatim.requests[1]["messages"] if isinstance(m, AIMessage)]
    assert kept.invalid_tool_calls[0]["args"] == '{"text": '


def test_calls_beyond_the_turns_limit_run_nothing_and_are_told_so():
    many = AIMessage(
        content="",
        tool_calls=[
            {"name": "echo", "args": {"text": str(i)}, "id": f"c{i}", "type": "tool_call"}
            for i in range(5)
        ],
    )
    result, _ = loop([many, say("done")], max_calls_per_turn=2)
    assert RAN == ["0", "1"]
    replies = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in replies] == [
        "c0",
        "c1",
        "c2",
        "c3",
        "c4",
    ]  # every call answered
    codes = [json.loads(m.content)["error"]["code"] for m in replies if m.status == "error"]
    assert codes == ["too_many_calls"] * 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_rounds", -1),
        ("max_rounds", 17),
        ("max_rounds", "2"),
        ("max_calls_per_turn", 0),
        ("max_calls_per_turn", True),
        ("force", "auto"),
        ("resend_invalid", "dropped"),
    ],
)
def test_a_tool_policy_out_of_bounds_is_refused(field, value):
    with pytest.raises(InvalidArgument, match=field):
        ToolPolicy(**{field: value})


def test_the_turns_limit_follows_the_order_the_model_made_its_calls_in():
    def raw(i, valid):
        args = json.dumps({"text": str(i)}) if valid else '{"text": '
        return {"id": f"c{i}", "type": "function", "function": {"name": "echo", "arguments": args}}

    shape = [False, True, False, True]  # c0 malformed, c1 fine, c2 malformed, c3 fine
    mixed = AIMessage(
        content="",
        additional_kwargs={"tool_calls": [raw(i, ok) for i, ok in enumerate(shape)]},
        tool_calls=[
            {"name": "echo", "args": {"text": str(i)}, "id": f"c{i}", "type": "tool_call"}
            for i, ok in enumerate(shape)
            if ok
        ],
        invalid_tool_calls=[
            {
                "name": "echo",
                "args": '{"text": ',
                "id": f"c{i}",
                "error": "bad JSON",
                "type": "invalid_tool_call",
            }
            for i, ok in enumerate(shape)
            if not ok
        ],
    )
    result, _ = loop([mixed, say("done")], max_calls_per_turn=3)
    replies = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in replies] == ["c0", "c1", "c2", "c3"]
    codes = [
        json.loads(m.content)["error"]["code"] if m.status == "error" else "ran" for m in replies
    ]
    assert codes == ["invalid_argument", "ran", "invalid_argument", "too_many_calls"]
    assert RAN == ["1"]


def test_a_users_tool_with_a_matches_artifact_of_another_shape_is_journaled_not_a_crash():
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from langchain_core.tools import StructuredTool

    from tests.support.chat import call

    def search(q: str) -> tuple[str, dict]:
        """Search something else."""
        return "found", {"matches": [{"title": q}], "total": "many"}

    user_tool = StructuredTool.from_function(
        func=search, name="search", response_format="content_and_artifact"
    )
    journal: list = []
    context = SimpleNamespace(stage_id="s", clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    chat = ScriptedChatModel(script={"sys": [call("search", {"q": "x"}), say("done")]})
    result = run_tool_loop(
        chat,
        [SystemMessage("sys"), HumanMessage("go")],
        tools=[user_tool],
        context=context,
        journal=journal.append,
    )
    assert result.message.content == "done"
    (made,) = journal
    assert (made.node_id, made.tool, dict(made.result)) == (
        "s",
        "search",
        {"status": "success", "content": "found"},
    )


def test_an_argument_key_no_string_field_can_hold_is_a_tool_error_not_a_crash():
    """A key of lone surrogates fails LangGraph's own argument parsing (the reliability suite's R3)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from cortex_agents.memory import BUILTIN_PRESETS
    from cortex_agents.tools import make_memory_query_tool
    from tests.support.chat import call

    journal: list = []
    context = SimpleNamespace(stage_id="s", clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    tool = make_memory_query_tool(BUILTIN_PRESETS)
    bad = call(tool.name, {"\udfff\ud800": 1})
    chat = ScriptedChatModel(script={"sys": [bad, say("done")]})
    result = run_tool_loop(
        chat,
        [SystemMessage("sys"), HumanMessage("go")],
        tools=[tool],
        context=context,
        journal=journal.append,
    )
    assert result.message.content == "done"
    (made,) = journal
    assert made.result["status"] == "error"
    assert json.loads(made.result["content"])["error"]["code"] == "invalid_argument"
