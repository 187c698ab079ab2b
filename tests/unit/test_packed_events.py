"""Provenance events held packed in a branch: smaller, and read back exactly as appended."""

from __future__ import annotations

import sys
from datetime import timedelta, timezone
from types import MappingProxyType

import pytest

from cortex_agents.substrate import (
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    ToolCallMade,
    event_to_dict,
)
from cortex_agents.substrate.events import storable_json
from cortex_agents.substrate.packed import EventList, pack, unpack
from tests.helpers import T0, at


def ranking(n: int = 10) -> dict[str, object]:
    """A tool result shaped like a memory query's: a dict per match, floats per score."""
    return {
        "status": "success",
        "query": {"preset": "default", "limit": n, "routing_key": None, "query_text": "bias"},
        "total": 40,
        "shown": n,
        "matches": [
            {
                "node_id": f"s{i:06d}",
                "kind": "work",
                "hops": i,
                "score": 1 / (i + 3),
                "semantic": -0.0 if i == 0 else 0.5 + i / 7,
                "ok": i % 2 == 0,
            }
            for i in range(n)
        ],
    }


def call(result: object, when=None) -> ToolCallMade:
    return ToolCallMade(
        node_id="a",
        tool="cortex_memory_query",
        call_id="call-1",
        arguments={"query_text": "bias"},
        at=when or at(2),
        result=result,
    )


def deep_size(value: object) -> int:
    """Bytes of ``value`` and everything it holds (each object once)."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, ToolCallMade):
            stack.extend(getattr(item, slot) for slot in ToolCallMade.__slots__)
    return total


def test_a_ranking_is_packed_in_under_a_fifth_of_its_objects_bytes_and_read_back_equal():
    event = call(ranking())
    packed = pack(event)
    assert isinstance(packed, bytes)
    assert len(packed) * 5 < deep_size(event)
    back = unpack(packed)
    assert back == event and back is not event
    assert event_to_dict(back) == event_to_dict(event)
    first = back.result["matches"][0]  # type: ignore[index]
    assert str(first["semantic"]) == "-0.0" and first["ok"] is True


@pytest.mark.parametrize(
    "result",
    [
        {"ids": ("a", "b")},  # a tuple would come back a list
        MappingProxyType({"status": "success"}),  # a mapping would come back a dict
        {"n": True, "m": [1, (2,)]},
    ],
)
def test_an_event_that_would_not_come_back_the_same_type_is_kept_as_itself(result):
    event = call(result)
    assert pack(event) is event
    log = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=T0)]).appended([event])
    assert log[-1] is event


def test_an_event_timed_in_another_zone_is_kept_as_itself():
    event = call({"status": "success"}, when=T0.astimezone(timezone(timedelta(hours=2))))
    assert pack(event) is event


def test_other_event_types_are_never_packed():
    events = [
        NodeScheduled(node_id="a", kind="k", at=T0),
        StageStarted(node_id="a", at=at(1), frontier=1),
        StageCompleted(node_id="a", at=at(3), output=ranking()),
    ]
    assert all(pack(e) is e for e in events)


def test_a_log_reads_packed_events_back_in_place_by_index_slice_iteration_and_fork():
    events = [
        NodeScheduled(node_id="a", kind="k", at=T0),
        StageStarted(node_id="a", at=at(1)),
        call(ranking(3)),
        call(ranking(4)),
        StageCompleted(node_id="a", at=at(3), output={"x": 1}),
    ]
    log = SubstrateLog(events)
    assert list(log) == events
    assert log[2] == events[2] and log[-2] == events[3]
    assert log[1:4] == tuple(events[1:4]) and log[::2] == tuple(events[::2])
    assert log.since(2) == tuple(events[2:])
    fork = log.prefix(4).appended([StageCompleted(node_id="a", at=at(4), output=None)])
    assert list(fork)[:4] == events[:4] and log.branch is not fork.branch
    assert fork.prefix(4).digest == log.prefix(4).digest == SubstrateLog(events[:4]).digest


def test_an_event_list_prefix_shares_the_packed_items():
    events = EventList([call(ranking(2)), call(ranking(5))])
    head = events.prefix(1)
    assert len(head) == 1 and head[0] == events[0]
    assert head._items[0] is events._items[0]  # copied, not packed again


def test_stored_outputs_share_one_string_per_key():
    made = [
        {"".join(["find", "ing"]): i, "".join(["claim", "_ref"]): {"".join("ab"): i}}
        for i in range(2)
    ]
    first, second = (storable_json(m, "output") for m in made)
    assert first == made[0] and second == made[1]
    for a, b in zip(first, second, strict=True):
        assert a is b
    assert next(iter(first["claim_ref"])) is next(iter(second["claim_ref"]))
