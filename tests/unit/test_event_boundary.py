"""The substrate's boundary: every event it accepts can be stored by every backend.

Events reach LangGraph's msgpack serializer (pending writes) and the JSON
event tables. Whatever a model or a stage puts in an event is either refused
at the boundary with :class:`InvalidArgument` naming the field — never a
``RecursionError`` — or round-trips exactly through both.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence._store import decode_event, encode_event
from cortex_agents.substrate import (
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    ToolCallMade,
    event_from_dict,
    event_to_dict,
)
from cortex_agents.substrate._events import MAX_DEPTH
from tests.support.helpers import at

SERDE = JsonPlusSerializer()


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def call(arguments) -> ToolCallMade:
    return ToolCallMade(node_id="a", tool="t", call_id="1", arguments=arguments, at=at(0))


def test_nesting_thousands_deep_is_refused_by_name_not_by_recursion_error():
    hostile = {"x": nested(10_000)}
    with pytest.raises(InvalidArgument) as caught:
        event_to_dict(call(hostile))
    assert caught.value.field == "tool_call_made.arguments"
    assert f"at most {MAX_DEPTH} levels" in caught.value.rule
    with pytest.raises(InvalidArgument, match="levels deep"):
        event_from_dict({**event_to_dict(call({})), "arguments": hostile})
    log = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=at(0))])
    with pytest.raises(InvalidArgument, match="levels deep"):
        log.appended([call(hostile)])
    assert len(log) == 1


@pytest.mark.parametrize("name", [["node_scheduled"], {"a": 1}, 7, None])
def test_an_event_type_that_is_not_a_string_is_refused_by_name(name):
    # A JSON list or object as `type` once escaped as TypeError (unhashable).
    data = {**event_to_dict(NodeScheduled(node_id="a", kind="k", at=at(0))), "type": name}
    with pytest.raises(InvalidArgument) as caught:
        event_from_dict(data)
    assert caught.value.field == "type"
    assert "must be one of" in caught.value.rule


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (2**64, "64 bits"),
        (-(2**63) - 1, "64 bits"),
        (10**5000, "64 bits"),
        (math.nan, "finite"),
        (math.inf, "finite"),
        ("\ud800", "lone surrogates"),
        ({1: "x"}, "string keys"),
        ({"\udfff": 1}, "lone surrogates"),
        ({"a", "b"}, "must be JSON"),
        (at(0), "must be JSON"),
        (b"bytes", "must be JSON"),
    ],
    ids=lambda value: type(value).__name__,
)
@pytest.mark.parametrize(
    "placed", [lambda v: {"v": [v]}, lambda v: {"v": v}], ids=["in_list", "in_map"]
)
def test_values_no_backend_can_store_are_refused_with_the_rule(value, rule, placed):
    with pytest.raises(InvalidArgument, match=rule) as caught:
        event_to_dict(call(placed(value)))
    assert caught.value.field == "tool_call_made.arguments"
    assert len(str(caught.value)) < 300  # the message names the value briefly, never dumps it


def test_the_edges_of_the_rules_are_accepted():
    fine = call({"max": 2**63 - 1, "min": -(2**63), "deep": nested(MAX_DEPTH - 1), "t": (1, 2)})
    data = event_to_dict(fine)
    assert data["arguments"]["t"] == [1, 2]
    assert event_from_dict(json.loads(json.dumps(data))).arguments["max"] == 2**63 - 1
    with pytest.raises(InvalidArgument, match="levels deep"):
        event_to_dict(call({"deep": nested(MAX_DEPTH)}))


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None), max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), children, max_size=3)
    ),
    max_leaves=20,
)


def towers(draw_depth: int, leaf) -> object:
    value = leaf
    for _ in range(draw_depth):
        value = {"k": [value]}
    return value


@settings(max_examples=400, deadline=None)
@given(JSONISH, st.integers(0, 140), st.sampled_from(["arguments", "output"]))
def test_an_accepted_event_round_trips_through_msgpack_and_the_event_table(value, depth, slot):
    payload = towers(depth, value)
    if slot == "arguments":
        event = call({"v": payload})
    else:
        event = StageCompleted(node_id="a", at=at(1), output=payload)
    try:
        data = event_to_dict(event)
    except InvalidArgument:
        return  # refused at the boundary: nothing was written
    kind, blob = SERDE.dumps_typed([{"substrate": [data]}])  # as a pending write
    assert SERDE.loads_typed((kind, blob)) == [{"substrate": [data]}]
    back = decode_event(encode_event(event_from_dict(data)))
    assert event_to_dict(back) == data
    log = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=at(0))])
    log = log.appended([StageStarted(node_id="a", at=at(1)), data if slot == "output" else event])
    assert len(log) == 3
