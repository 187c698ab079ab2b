"""What is journaled of a tool call is bounded and storable, whatever the model sent (D2)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from cortex_agents.persistence._store import encode_event
from cortex_agents.substrate import event_from_dict, event_to_dict
from cortex_agents.tools._journal import (
    MAX_CONTENT_CHARS,
    MAX_EVENT_BYTES,
    call_summary,
    tool_call_event,
)
from cortex_agents.tools._results import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_JOURNAL_BYTES,
    MAX_STRING_CHARS,
    bounded_json,
    json_safe,
    safe_repr,
)

SERDE = JsonPlusSerializer()
AT = datetime(2026, 1, 1, tzinfo=UTC)


def nested(depth: int, leaf: object = 1) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def round_trips(value: object) -> bool:
    """LangGraph's serializer (msgpack) gives back exactly what it was given."""
    return SERDE.loads_typed(SERDE.dumps_typed(value)) == value


def depth_of(value: object) -> int:
    depth, stack = 0, [(value, 0)]
    while stack:
        item, d = stack.pop()
        depth = max(depth, d)
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return depth


@pytest.mark.parametrize("depth", [300, 5_000, 100_000])
def test_nesting_of_any_depth_is_cut_without_recursion(depth):
    safe = json_safe(nested(depth))
    assert depth_of(safe) == MAX_DEPTH
    assert json.dumps(safe).count("nested deeper than") == 1
    assert round_trips(safe)  # msgpack refuses 256 levels: what is kept stays well under


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (2**63 - 1, True),
        (-(2**63), True),
        (2**63, False),
        (2**64, False),
        (-(2**63) - 1, False),
        (10**5000, False),  # str() refuses it: more than 4,300 digits
    ],
    ids=["max", "min", "2^63", "2^64", "min-1", "5000-digits"],
)
def test_integers_outside_64_bits_become_a_description(value, kept):
    safe = json_safe({"limit": value})
    assert (safe["limit"] == value) is kept
    if not kept:
        assert safe["limit"].startswith("<an integer of about ")
    assert round_trips(safe)


def test_non_finite_floats_surrogates_and_nul_become_storable():
    safe = json_safe(
        {"a": math.nan, "b": math.inf, "c": "x\ud800y", "d": "a\x00b", "\udfff": -math.inf}
    )
    assert safe == {"a": "nan", "b": "inf", "c": "x\ufffdy", "d": "a\ufffdb", "\ufffd": "-inf"}
    json.dumps(safe, allow_nan=False).encode("utf-8")  # valid JSON, valid UTF-8
    assert round_trips(safe)


def test_counts_and_lengths_are_bounded_and_the_cut_is_marked():
    safe = json_safe({"many": list(range(10 * MAX_ITEMS)), "long": "x" * (3 * MAX_STRING_CHARS)})
    # the dict's two values used two of the budget; the list keeps the rest, then a marker
    assert safe["many"][:-1] == list(range(MAX_ITEMS - 2))
    assert safe["many"][-1] == f"…+{10 * MAX_ITEMS - (MAX_ITEMS - 2)} more items not recorded"
    assert safe["long"].startswith("x" * MAX_STRING_CHARS)
    assert safe["long"].endswith(f"…[+{2 * MAX_STRING_CHARS} characters]")


def test_order_of_keys_and_items_is_kept():
    value = {"z": [3, 2, 1], "a": {"y": 1, "b": 2}}
    assert json.dumps(json_safe(value)) == json.dumps(value)


def test_a_value_over_the_byte_cap_becomes_a_cut_preview_within_the_cap():
    big = {"texts": ["é" * 3000 for _ in range(20)]}  # ~120 KB of UTF-8
    capped = bounded_json(big)
    assert capped["truncated"] is True and capped["bytes"] > MAX_JOURNAL_BYTES
    assert len(json.dumps(capped, ensure_ascii=False).encode("utf-8")) <= MAX_JOURNAL_BYTES
    assert bounded_json({"small": 1}) == {"small": 1}


def test_safe_repr_never_raises_and_is_short():
    assert safe_repr(10**5000).startswith("<an integer of about 5000 digits")
    assert len(safe_repr("x" * 1000)) == 80
    assert len(safe_repr(nested(10_000))) <= 80


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xDFFF)),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(arguments=json_values, content=st.text(max_size=3000))
def test_every_journaled_tool_call_round_trips_through_langgraphs_serializer(arguments, content):
    event = tool_call_event(
        node_id="reviewer",
        tool="cortex_memory_query",
        call_id="c\ud800",
        arguments={"query_text": arguments, "deep": nested(400, arguments)},
        summary=call_summary("error", content),
        at=AT,
    )
    record = event_to_dict(event)
    assert round_trips(record)
    assert event_from_dict(record) == event
    assert stored_size(event) <= MAX_EVENT_BYTES


def stored_size(event) -> int:
    """Bytes of the event as the store writes its row."""
    return len(encode_event(event).encode("utf-8"))


@pytest.mark.parametrize("fields", [1, 20, 200, 2_000])
@pytest.mark.parametrize("answer_chars", [10, MAX_CONTENT_CHARS])
def test_a_journaled_call_is_capped_as_a_whole_whatever_its_number_of_fields(fields, answer_chars):
    emoji = "\N{GRINNING FACE}"  # 4 bytes in UTF-8
    arguments = {f"unknown_{i}": emoji * 4000 for i in range(fields)}
    answer = json.dumps({"error": {"unknown": list(arguments)}})[:answer_chars]
    event = tool_call_event(
        node_id="r" * 256,
        tool="t" * 300,
        call_id="c" * 300,
        arguments=arguments,
        summary=call_summary("error", answer + emoji * answer_chars),
        at=AT,
    )
    assert stored_size(event) <= MAX_EVENT_BYTES
    assert event.arguments["truncated"] is True  # the arguments gave way first
    assert event.arguments["bytes"] > 4000 * 4 * fields
    assert event.result["status"] == "error"  # the answer's summary kept its shape
    assert event_from_dict(event_to_dict(event)) == event


def test_a_call_that_fits_is_journaled_whole():
    event = tool_call_event(
        node_id="r",
        tool="cortex_memory_query",
        call_id="c1",
        arguments={"query_text": "é" * 3000},
        summary=call_summary("success", "fine"),
        at=AT,
    )
    assert event.arguments == {"query_text": "é" * 3000}
    assert dict(event.result) == {"status": "success", "content": "fine"}
    assert stored_size(event) <= MAX_EVENT_BYTES


def test_the_many_unknown_fields_call_of_the_issue_journals_under_the_cap():
    """Issue 23: a call with 20 unknown 4,000-emoji fields journaled a 21,827-byte event."""
    from types import SimpleNamespace

    from langchain_core.messages import HumanMessage, SystemMessage

    from cortex_agents.memory import BUILTIN_PRESETS
    from cortex_agents.tools import make_memory_query_tool, run_tool_loop
    from tests.support.chat import ScriptedChatModel, call, say

    journal: list = []
    tool = make_memory_query_tool(BUILTIN_PRESETS)
    arguments = {f"unknown_{i}": "\N{GRINNING FACE}" * 4000 for i in range(20)}
    chat = ScriptedChatModel(script={"sys": [call(tool.name, arguments), say("done")]})
    run_tool_loop(
        chat,
        [SystemMessage("sys"), HumanMessage("go")],
        tools=[tool],
        context=SimpleNamespace(stage_id="s", clock=lambda: AT),
        journal=journal.append,
    )
    (made,) = journal
    assert made.result["status"] == "error"
    assert stored_size(made) <= MAX_EVENT_BYTES


def test_an_artifact_shaped_differently_is_summarised_as_any_other_tools():
    for artifact in (
        {"matches": "not a list"},
        {"matches": [1, 2]},
        {"tool": "cortex_memory_query", "matches": [{"node_id": "x"}]},
        {"matches": [{"node_id": "x", "score": 1}]},
    ):
        assert call_summary("success", "text", artifact) == {
            "status": "success",
            "content": "text",
        }
